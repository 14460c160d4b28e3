//! A page built once as a title and a list of blocks (headings, paragraphs, callouts, lists,
//! tables), and its two printers: markdown for a pull-request comment, one offline HTML page.

use std::collections::HashSet;
use std::fmt::Write;

use super::page;
use super::svg::esc;
use super::table::Table;
use super::table_text::{html_table, inline, markdown_table};

/// A run of text inside a block.
#[derive(Debug, Clone, PartialEq)]
pub enum Span {
    Text(String),
    Strong(String),
    /// Something typed as is: a flag, a key and its value (`--force`, `salt: none`).
    Code(String),
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
    /// An inline SVG chart: the HTML page draws it, markdown has no room for it.
    Svg(String),
    /// The start of a folded part (`<details>`) with its one-line summary; what follows up
    /// to [`Block::FoldEnd`] shows when opened.
    FoldStart(String),
    FoldEnd,
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
                    markdown_table(&mut out, table);
                    out.push('\n');
                }
                Block::Svg(_) => {}
                // GitHub folds raw `<details>`; a blank line lets markdown inside render.
                Block::FoldStart(summary) => {
                    let _ = write!(out, "<details><summary>{}</summary>\n\n", esc(summary));
                }
                Block::FoldEnd => out.push_str("</details>\n\n"),
            }
        }
        out
    }

    /// One self-contained HTML page in the report's stylesheet; each heading has an `id`.
    pub fn html(&self) -> String {
        let mut out = String::new();
        page::open(&mut out, &self.title);
        let mut anchors = HashSet::new();
        for block in &self.blocks {
            match block {
                Block::Heading(level, text) => {
                    let tag = match level {
                        Level::Section => "h2",
                        Level::Subsection => "h3",
                    };
                    let id = unique_anchor(&mut anchors, text);
                    let _ = writeln!(out, "<{tag} id=\"{id}\">{}</{tag}>", esc(text));
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
                Block::Table(table) => html_table(&mut out, table),
                Block::Svg(svg) => {
                    out.push_str(svg);
                    out.push('\n');
                }
                Block::FoldStart(summary) => {
                    let _ = writeln!(out, "<details><summary>{}</summary>", esc(summary));
                }
                Block::FoldEnd => out.push_str("</details>\n"),
            }
        }
        out.push_str(page::CLOSE);
        out
    }
}

fn markdown_spans(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|span| match span {
            Span::Text(s) => inline(s),
            Span::Strong(s) => format!("**{}**", inline(s)),
            Span::Code(s) => format!("`{s}`"),
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

    #[test]
    fn a_chart_is_html_only_and_a_fold_is_details_in_both() {
        let doc = Document {
            title: "t".into(),
            blocks: vec![
                Block::FoldStart("3 more <charts>".into()),
                Block::Svg("<svg class=\"chart\"></svg>".into()),
                Block::FoldEnd,
            ],
        };
        assert_eq!(
            doc.markdown(),
            "# t\n\n<details><summary>3 more &lt;charts&gt;</summary>\n\n</details>\n\n"
        );
        let html = doc.html();
        assert!(
            html.contains(
                "<details><summary>3 more &lt;charts&gt;</summary>\n<svg class=\"chart\"></svg>\n</details>"
            ),
            "{html}"
        );
    }
}
