//! Both markups say what each section's blocks say: every text and table cell of a block is in
//! the section's markdown and in its HTML, unless the block is one markdown leaves out (a
//! chart, folded output) or the whole section is HTML's alone. A section cannot say something
//! in one markup only without its block saying so.

use super::sections::report_with_every_section;
use super::*;
use servebench::report::render::document::{Block, Markup, Span, html_body, markdown_body};
use servebench::report::render::sections::{SECTIONS, SectionId};
use std::collections::BTreeSet;

/// The full report with every warning and note a section can carry, and rechecks that held.
pub(crate) fn report_with_every_warning() -> Report {
    let mut r = report_with_every_section();
    let first = r.phases[0].header.phase.clone();
    let p = &mut r.phases[0];
    p.until.as_mut().expect("until").warning = Some("stopped at its cap <x> *y*".into());
    let server = p.server_metrics.as_mut().expect("server metrics");
    server.warnings.push("backend b_1 stopped answering".into());
    server.notes.push("label sets cut at the cap".into());
    let sampling = server.sampling.as_mut().expect("sampling");
    sampling.failed = 2;
    sampling.first_failure = Some("timed out".into());
    p.transport.warnings.push("pool exhausted".into());
    p.request_timings.clear();
    r.searches[0].probes = vec![first];
    r.searches[0].start = Some("started at 4 from a hint".into());
    r.searches[0].lower_bound = true;
    for pair in &mut r.rechecks {
        pair.verdict = DriftVerdict::Stable;
        for m in &mut pair.metrics {
            m.verdict = DriftVerdict::Stable;
        }
    }
    r
}

fn span_texts(spans: &[Span]) -> Vec<String> {
    spans
        .iter()
        .map(|span| match span {
            Span::Text(s) | Span::Strong(s) | Span::Code(s) => s.clone(),
            Span::Important(s) | Span::Markdown(s) => s.clone(),
        })
        .collect()
}

/// The block's kind and every text it holds.
fn kind_and_texts(block: &Block) -> (&'static str, Vec<String>) {
    let items = |items: &[Vec<Span>]| items.iter().flat_map(|i| span_texts(i)).collect();
    match block {
        Block::Heading(_, text) => ("heading", vec![text.clone()]),
        Block::Paragraph(spans) => ("paragraph", span_texts(spans)),
        Block::Callout(_, spans) => ("callout", span_texts(spans)),
        Block::List(list) => ("list", items(list)),
        Block::Table(table) => {
            let titles = table.columns.iter().map(|c| c.title.clone());
            let cells = table.rows.iter().flatten().map(|c| c.text.clone());
            ("table", titles.chain(cells).collect())
        }
        Block::Note(spans) => ("note", span_texts(spans)),
        Block::Verdict(_, spans) => ("verdict", span_texts(spans)),
        Block::Warning(spans) => ("warning", span_texts(spans)),
        Block::Callouts(_, list) => ("callouts", items(list)),
        Block::QuotedList {
            title, items: list, ..
        } => {
            let mut texts = span_texts(title);
            texts.extend(items(list));
            ("quoted list", texts)
        }
        Block::Figure(_) => ("figure", Vec::new()),
        Block::Folded { summary, text } => ("folded", vec![summary.clone(), text.clone()]),
    }
}

/// Markdown as read: escapes dropped, a line break in running text a space.
fn markdown_words(s: &str) -> String {
    s.replace('\\', "").replace('\n', " ")
}

fn html_words(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Checks each of a section's blocks printed on its own, then that the section's printout
/// holds each block's; returns the kinds of block it used.
fn check_section(id: &str, blocks: &[Block], in_markdown: bool) -> Vec<&'static str> {
    let (mut md, mut html) = (String::new(), String::new());
    markdown_body(&mut md, blocks);
    html_body(&mut html, blocks);
    let mut kinds = Vec::new();
    for block in blocks {
        let (kind, texts) = kind_and_texts(block);
        kinds.push(kind);
        let (mut block_md, mut block_html) = (String::new(), String::new());
        markdown_body(&mut block_md, std::slice::from_ref(block));
        html_body(&mut block_html, std::slice::from_ref(block));
        assert!(html.contains(&block_html), "{id}: {kind} not in {html}");
        assert!(md.contains(block_md.trim_end()), "{id}: {kind} not in {md}");
        let in_markdown = in_markdown && block.printed_in(Markup::Markdown);
        for text in texts.iter().filter(|t| !t.is_empty()) {
            let words = html_words(&block_html);
            assert!(
                words.contains(text.as_str()),
                "{id}: {text:?} not in {block_html}"
            );
            if in_markdown {
                let (text, words) = (markdown_words(text), markdown_words(&block_md));
                assert!(words.contains(&text), "{id}: {text:?} not in {block_md}");
            }
        }
    }
    kinds
}

#[test]
fn both_markups_print_every_text_of_every_sections_blocks() {
    let mut kinds = BTreeSet::new();
    for report in [report_with_every_section(), report_with_every_warning()] {
        for s in &SECTIONS {
            if !(s.shown)(&report) {
                continue;
            }
            let blocks = (s.body)(&report);
            assert!(!blocks.is_empty(), "{:?} has no blocks", s.id);
            let id = format!("{:?}", s.id);
            kinds.extend(check_section(&id, &blocks, s.printed_in(Markup::Markdown)));
        }
    }
    // Every kind of block a section can use is checked above: only the comparison's lists are not.
    let all = [
        "heading",
        "paragraph",
        "callout",
        "table",
        "note",
        "verdict",
        "warning",
        "callouts",
        "quoted list",
        "figure",
        "folded",
    ];
    assert_eq!(kinds, all.into_iter().collect::<BTreeSet<_>>());
}

#[test]
fn markdown_leaves_out_charts_and_folded_output_but_keeps_the_rest() {
    let report = report_with_every_section();
    let phases = SECTIONS
        .iter()
        .find(|s| s.id == SectionId::Phases)
        .map(|s| (s.body)(&report))
        .expect("declared");
    let folded = phases
        .iter()
        .find(|b| matches!(b, Block::Folded { .. }))
        .expect("the hook's output tail");
    assert!(!folded.printed_in(Markup::Markdown));
    assert!(folded.printed_in(Markup::Html));
    let mut md = String::new();
    markdown_body(&mut md, &phases);
    assert!(!md.contains("reset.sh: last 1 lines"), "{md}");
    assert!(md.contains("### Phase hooks"), "{md}");
}
