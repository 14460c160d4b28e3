//! A page built once as a title and a list of blocks (headings, paragraphs, callouts, lists,
//! tables, charts), and its two printers: markdown for a pull-request comment, one offline HTML
//! page. A report section's body is a list of blocks too, printed under its heading.

use std::collections::HashSet;
use std::fmt::Write;

use super::page;
use super::svg::esc;
use super::table::{Mark, Table};
use super::table_text::{html_table, inline, markdown_table};

/// A run of text inside a block.
#[derive(Debug, Clone, PartialEq)]
pub enum Span {
    Text(String),
    Strong(String),
    /// Something typed as is: a flag, a key and its value (`--force`, `salt: none`).
    Code(String),
    /// Words that matter more than the rest: bold in markdown, `<strong>` in HTML.
    Important(String),
    /// Text already written as markdown (a note naming a key in backticks): markdown prints it
    /// as is, HTML escapes it.
    Markdown(String),
}

/// A human-readable markup blocks are printed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markup {
    Markdown,
    Html,
}

impl Span {
    pub fn text(s: impl Into<String>) -> Self {
        Span::Text(s.into())
    }

    pub fn strong(s: impl Into<String>) -> Self {
        Span::Strong(s.into())
    }

    pub fn code(s: impl Into<String>) -> Self {
        Span::Code(s.into())
    }
}

/// A heading's depth under the page's title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Section,
    Subsection,
}

/// How loudly a callout speaks: HTML gives each its own box, markdown quotes them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Note,
    Warn,
    Bad,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Heading(Level, String),
    Paragraph(Vec<Span>),
    Callout(Tone, Vec<Span>),
    /// A bulleted list, one item per entry.
    List(Vec<Vec<Span>>),
    Table(Table),
    /// A note by a table: its own paragraph in markdown, small print in HTML.
    Note(Vec<Span>),
    /// A sentence in a verdict's colour in HTML (good, warn, bad); plain in markdown.
    Verdict(Mark, Vec<Span>),
    /// A warning about one thing: labelled `**Warning:**` and quoted in markdown, bold in a
    /// warning banner in HTML.
    Warning(Vec<Span>),
    /// Callouts said together: one quote in markdown, a line each; a box each in HTML.
    Callouts(Tone, Vec<Vec<Span>>),
    /// A callout with a headline and a bulleted list under it.
    QuotedList {
        tone: Tone,
        title: Vec<Span>,
        items: Vec<Vec<Span>>,
    },
    /// HTML embedded as is (an SVG chart, a timeline), with nothing added after it; markdown
    /// has no charts and leaves it out.
    Figure(String),
    /// Preformatted text folded away under a summary (a hook's output tail); markdown leaves
    /// it out.
    Folded {
        summary: String,
        text: String,
    },
}

impl Block {
    /// Whether `markup` prints the block: charts and folded output are HTML's alone.
    pub fn printed_in(&self, markup: Markup) -> bool {
        markup == Markup::Html || !matches!(self, Block::Figure(_) | Block::Folded { .. })
    }
}

/// A page: its title, then its blocks in print order.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Document {
    /// GitHub-flavoured markdown; every block ends with a blank line.
    pub fn markdown(&self) -> String {
        let mut out = format!("# {}\n\n", inline(&self.title));
        for block in &self.blocks {
            markdown_block(&mut out, block);
        }
        out
    }

    /// One self-contained HTML page in the report's stylesheet; each heading has an `id`.
    pub fn html(&self) -> String {
        let mut out = String::new();
        page::open(&mut out, &self.title);
        let mut anchors = HashSet::new();
        for block in &self.blocks {
            html_block(&mut out, block, Some(&mut anchors));
        }
        out.push_str(page::CLOSE);
        out
    }
}

/// A section's body in markdown: its blocks with a blank line between two and none after the
/// last, as the writer puts one before the next heading.
pub fn markdown_body(out: &mut String, blocks: &[Block]) {
    let start = out.len();
    for block in blocks {
        markdown_block(out, block);
    }
    if out.len() > start && out.ends_with("\n\n") {
        out.pop();
    }
}

/// A section's body in HTML. Its subheadings carry no `id`: only sections are linked to.
pub fn html_body(out: &mut String, blocks: &[Block]) {
    for block in blocks {
        html_block(out, block, None);
    }
}

/// One block in GitHub-flavoured markdown, ending with a blank line (or nothing at all).
fn markdown_block(out: &mut String, block: &Block) {
    match block {
        Block::Heading(level, text) => {
            let hashes = match level {
                Level::Section => "##",
                Level::Subsection => "###",
            };
            let _ = write!(out, "{hashes} {}\n\n", inline(text));
        }
        Block::Paragraph(spans) => {
            let _ = write!(out, "{}\n\n", markdown_spans(spans));
        }
        Block::Callout(_, spans) => {
            let _ = write!(out, "> {}\n\n", markdown_spans(spans));
        }
        Block::List(items) => {
            for item in items {
                let _ = writeln!(out, "- {}", markdown_spans(item));
            }
            out.push('\n');
        }
        Block::Table(table) => {
            markdown_table(out, table);
            out.push('\n');
        }
        Block::Note(spans) | Block::Verdict(_, spans) => {
            let _ = write!(out, "{}\n\n", markdown_spans(spans));
        }
        Block::Warning(spans) => {
            let _ = write!(out, "> **Warning:** {}\n\n", markdown_spans(spans));
        }
        Block::Callouts(_, items) => markdown_quoted_lines(out, None, items),
        Block::QuotedList { title, items, .. } => {
            markdown_quoted_lines(out, Some(title), items);
        }
        Block::Figure(_) | Block::Folded { .. } => {}
    }
}

/// Lines of one quote, a blank line after: each item, or a title and the items as a list.
fn markdown_quoted_lines(out: &mut String, title: Option<&[Span]>, items: &[Vec<Span>]) {
    let bullet = match title {
        Some(title) => {
            let _ = writeln!(out, "> {}", markdown_spans(title));
            "- "
        }
        None => "",
    };
    for item in items {
        let _ = writeln!(out, "> {bullet}{}", markdown_spans(item));
    }
    out.push('\n');
}

/// One block in HTML, ending with a line break unless it is a figure; headings take an `id`
/// from `anchors` when given.
fn html_block(out: &mut String, block: &Block, anchors: Option<&mut HashSet<String>>) {
    match block {
        Block::Heading(level, text) => {
            let tag = match level {
                Level::Section => "h2",
                Level::Subsection => "h3",
            };
            match anchors {
                Some(anchors) => {
                    let id = unique_anchor(anchors, text);
                    let _ = writeln!(out, "<{tag} id=\"{id}\">{}</{tag}>", esc(text));
                }
                None => {
                    let _ = writeln!(out, "<{tag}>{}</{tag}>", esc(text));
                }
            }
        }
        Block::Paragraph(spans) => {
            let _ = writeln!(out, "<p>{}</p>", html_spans(spans));
        }
        Block::Callout(tone, spans) => {
            let (open, close) = match tone {
                Tone::Note => ("<p class=\"note\">", "</p>"),
                Tone::Warn => ("<div class=\"banner warn\">", "</div>"),
                Tone::Bad => ("<div class=\"banner\">", "</div>"),
            };
            let _ = writeln!(out, "{open}{}{close}", html_spans(spans));
        }
        Block::List(items) => {
            out.push_str("<ul>");
            for item in items {
                let _ = write!(out, "<li>{}</li>", html_spans(item));
            }
            out.push_str("</ul>\n");
        }
        Block::Table(table) => html_table(out, table),
        Block::Note(spans) => {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", html_spans(spans));
        }
        Block::Verdict(mark, spans) => html_verdict(out, *mark, spans),
        Block::Warning(spans) => {
            let _ = writeln!(
                out,
                "<div class=\"banner warn\"><b>{}</b></div>",
                html_spans(spans)
            );
        }
        Block::Callouts(tone, items) => {
            for item in items {
                html_block(out, &Block::Callout(*tone, item.clone()), None);
            }
        }
        Block::QuotedList { tone, title, items } => html_list_banner(out, *tone, title, items),
        Block::Figure(html) => out.push_str(html),
        Block::Folded { summary, text } => {
            let _ = writeln!(
                out,
                "<details><summary>{}</summary><pre>{}</pre></details>",
                esc(summary),
                esc(text)
            );
        }
    }
}

fn html_verdict(out: &mut String, mark: Mark, spans: &[Span]) {
    let class = match mark {
        Mark::Good => " class=\"good\"",
        Mark::Warn => " class=\"warn\"",
        Mark::Bad => " class=\"bad\"",
        Mark::Plain => "",
    };
    let _ = writeln!(out, "<p{class}>{}</p>", html_spans(spans));
}

/// A callout's box with its title and a list inside.
fn html_list_banner(out: &mut String, tone: Tone, title: &[Span], items: &[Vec<Span>]) {
    let class = match tone {
        Tone::Note => "note",
        Tone::Warn => "banner warn",
        Tone::Bad => "banner",
    };
    let _ = write!(out, "<div class=\"{class}\">{}<ul>", html_spans(title));
    for item in items {
        let _ = write!(out, "<li>{}</li>", html_spans(item));
    }
    out.push_str("</ul></div>\n");
}

fn markdown_spans(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|span| match span {
            Span::Text(s) => inline(s),
            Span::Strong(s) => format!("**{}**", inline(s)),
            Span::Code(s) => format!("`{s}`"),
            Span::Important(s) => format!("**{}**", inline(s)),
            Span::Markdown(s) => s.clone(),
        })
        .collect()
}

fn html_spans(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|span| match span {
            Span::Text(s) => esc(s),
            Span::Strong(s) => format!("<b>{}</b>", esc(s)),
            Span::Code(s) => format!("<code>{}</code>", esc(s)),
            Span::Important(s) => format!("<strong>{}</strong>", esc(s)),
            Span::Markdown(s) => esc(s),
        })
        .collect()
}

/// A heading's anchor as GitHub makes one (lower case, spaces to dashes, other punctuation
/// dropped), numbered when the page already has it.
fn unique_anchor(taken: &mut HashSet<String>, text: &str) -> String {
    let base: String = text
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect();
    let mut anchor = base.clone();
    let mut n = 1;
    while !taken.insert(anchor.clone()) {
        anchor = format!("{base}-{n}");
        n += 1;
    }
    anchor
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::render::table::{Align, Cell, Mark};

    fn sample() -> Document {
        let mut table = Table::new(&[("Metric", Align::Left), ("Change", Align::Right)]);
        table.rows.push(vec![
            Cell::plain("ttft.p99"),
            Cell::marked("+12%", Mark::Bad),
        ]);
        Document {
            title: "servebench compare".into(),
            blocks: vec![
                Block::List(vec![vec![Span::strong("Base:"), Span::text(" a_b.json")]]),
                Block::Heading(Level::Section, "Changes by phase".into()),
                Block::Callout(
                    Tone::Warn,
                    vec![
                        Span::strong("Forced:"),
                        Span::text(" because of "),
                        Span::code("--force"),
                        Span::text(" <here>."),
                    ],
                ),
                Block::Heading(Level::Subsection, "c8".into()),
                Block::Table(table),
                Block::Heading(Level::Subsection, "C8".into()),
            ],
        }
    }

    #[test]
    fn markdown_quotes_callouts_and_escapes_text_but_not_code() {
        assert_eq!(
            sample().markdown(),
            "# servebench compare\n\n\
             - **Base:** a\\_b.json\n\n\
             ## Changes by phase\n\n\
             > **Forced:** because of `--force` \\<here\\>.\n\n\
             ### c8\n\n\
             | Metric | Change |\n|---|---:|\n| ttft.p99 | **+12%** |\n\n\
             ### C8\n\n"
        );
    }

    #[test]
    fn html_is_one_page_with_the_same_blocks_escaped_and_unique_anchors() {
        let html = sample().html();
        assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
        assert!(html.ends_with("</body></html>\n"), "{html}");
        assert!(html.contains("<h1>servebench compare</h1>"), "{html}");
        assert!(
            html.contains("<ul><li><b>Base:</b> a_b.json</li></ul>"),
            "{html}"
        );
        assert!(
            html.contains(
                "<div class=\"banner warn\"><b>Forced:</b> because of <code>--force</code> \
                 &lt;here&gt;.</div>"
            ),
            "{html}"
        );
        assert!(html.contains("<h2 id=\"changes-by-phase\">"), "{html}");
        assert!(html.contains("<h3 id=\"c8\">c8</h3>"), "{html}");
        assert!(html.contains("<h3 id=\"c8-1\">C8</h3>"), "{html}");
        assert!(html.contains("<td class=\"r bad\">+12%</td>"), "{html}");
        assert!(!html.contains("http"), "nothing from the network: {html}");
    }

    /// A section body: a warning, a note, a chart and folded output between the text.
    fn body() -> Vec<Block> {
        vec![
            Block::Warning(vec![Span::text("ttft <late>")]),
            Block::Note(vec![Span::Markdown("see `models`".into())]),
            Block::Figure("<svg></svg>".into()),
            Block::Heading(Level::Subsection, "Hooks".into()),
            Block::Folded {
                summary: "c1 · before".into(),
                text: "a\nb".into(),
            },
        ]
    }

    #[test]
    fn a_markdown_body_has_a_blank_line_between_blocks_and_leaves_out_html_only_ones() {
        let mut md = String::new();
        markdown_body(&mut md, &body());
        assert_eq!(
            md,
            "> **Warning:** ttft \\<late\\>\n\nsee `models`\n\n### Hooks\n"
        );
    }

    #[test]
    fn an_html_body_prints_charts_as_they_are_and_its_headings_without_anchors() {
        let mut html = String::new();
        html_body(&mut html, &body());
        assert_eq!(
            html,
            "<div class=\"banner warn\"><b>ttft &lt;late&gt;</b></div>\n\
             <p class=\"note\">see `models`</p>\n<svg></svg><h3>Hooks</h3>\n\
             <details><summary>c1 · before</summary><pre>a\nb</pre></details>\n"
        );
    }
}
