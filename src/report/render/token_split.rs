//! Reasoning and speculative decoding, per phase: reasoning and content tokens apart with
//! content tokens per second beside the output rate (and a note when a server reported 0 or
//! no reasoning tokens while it streamed reasoning), and the acceptance the server reported
//! per request, pooled, with intervals, its histogram, and its counters beside it.

use std::fmt::Write as _;

use super::document::{Block, Span};
use super::numfmt::sig3;
use super::svg::{PALETTE, WIDTH, esc, open};
use super::table::{Align, Cell, Mark, Table};
use crate::metrics::SpecDecodeSummary;
use crate::report::model::Report;

/// Whether any phase's requests reasoned (a server that reports 0 reasoning tokens for
/// every request has nothing to set apart).
pub fn reasoning_shown(report: &Report) -> bool {
    report.phases.iter().any(|p| {
        p.summary
            .reasoning
            .as_ref()
            .is_some_and(|r| r.total_reasoning_tokens > 0 || r.counted_from_stream > 0)
    })
}

/// Whether any phase's requests reported speculative-decoding acceptance.
pub fn spec_shown(report: &Report) -> bool {
    report
        .phases
        .iter()
        .any(|p| p.summary.spec_decode.is_some())
}

/// The reasoning section: a table, and a note for the phases counted from the stream.
pub fn reasoning_blocks(report: &Report) -> Vec<Block> {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Requests", Align::Right),
        ("Reasoning tokens", Align::Right),
        ("Content tokens", Align::Right),
        ("Reasoning share", Align::Right),
        ("Output tok/s", Align::Right),
        ("Content tok/s", Align::Right),
        ("Counted from stream", Align::Right),
    ]);
    let mut counted = Vec::new();
    for p in &report.phases {
        let Some(r) = &p.summary.reasoning else {
            continue;
        };
        let total = r.total_reasoning_tokens + r.total_content_tokens;
        let share = (total > 0).then(|| r.total_reasoning_tokens as f64 / total as f64);
        let stream = Cell::plain(r.counted_from_stream.to_string());
        t.rows.push(vec![
            Cell::plain(p.header.phase.clone()),
            Cell::plain(r.requests.to_string()),
            Cell::plain(r.total_reasoning_tokens.to_string()),
            Cell::plain(r.total_content_tokens.to_string()),
            Cell::plain(share.map_or_else(|| "–".into(), |s| format!("{:.1}%", s * 100.0))),
            Cell::plain(sig3(p.summary.output_tokens_per_second)),
            Cell::plain(sig3(r.content_tokens_per_second)),
            if r.counted_from_stream > 0 {
                Cell::marked(stream.text, Mark::Warn)
            } else {
                stream
            },
        ]);
        if r.counted_from_stream > 0 {
            counted.push(format!(
                "{} ({} of {})",
                p.header.phase, r.counted_from_stream, r.requests
            ));
        }
    }
    let mut blocks = vec![
        Block::Note(vec![Span::text(
            "Reasoning tokens are the server's usage (completion_tokens_details or \
             output_tokens_details); content tokens are the output tokens less them, and \
             content tok/s is their rate over the phase, beside the output rate.",
        )]),
        Block::Table(t),
    ];
    if !counted.is_empty() {
        blocks.push(Block::Note(vec![Span::text(format!(
            "Reasoning counted from the stream: the server reported 0 or no reasoning tokens \
             while it streamed reasoning text, so the reasoning deltas' share of the output \
             tokens stands in for it (a request's deltas may carry several tokens): {}.",
            counted.join(", ")
        ))]));
    }
    blocks
}

fn with_interval(value: Option<f64>, ci: Option<[f64; 2]>) -> String {
    match (value, ci) {
        (Some(v), Some([lo, hi])) => format!("{} [{}, {}]", sig3(v), sig3(lo), sig3(hi)),
        (Some(v), None) => sig3(v),
        _ => "–".into(),
    }
}

fn counter(value: Option<f64>) -> String {
    value.map_or_else(|| "–".into(), sig3)
}

/// The speculative-decoding section: the phases' acceptance, then each phase's histogram
/// (a table in both markups, a bar chart in HTML).
pub fn spec_blocks(report: &Report) -> Vec<Block> {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Requests", Align::Right),
        ("Verify steps", Align::Right),
        ("Acceptance rate [95% CI]", Align::Right),
        ("Acceptance length [95% CI]", Align::Right),
        ("Counters: rate", Align::Right),
        ("Counters: length", Align::Right),
    ]);
    let mut histograms = Vec::new();
    for p in &report.phases {
        let Some(s) = &p.summary.spec_decode else {
            continue;
        };
        let c = s.counters.as_ref();
        t.rows.push(vec![
            Cell::plain(p.header.phase.clone()),
            Cell::plain(s.requests.to_string()),
            Cell::plain(s.num_spec_steps.to_string()),
            Cell::plain(with_interval(s.acceptance_rate, s.acceptance_rate_ci95)),
            Cell::plain(with_interval(s.acceptance_length, s.acceptance_length_ci95)),
            Cell::plain(counter(c.and_then(|c| c.acceptance_rate))),
            Cell::plain(counter(c.and_then(|c| c.acceptance_length))),
        ]);
        histograms.push((p.header.phase.clone(), s));
    }
    let mut blocks = vec![
        Block::Note(vec![Span::text(
            "As the server reported per request (vLLM's metrics.speculative_decoding), pooled \
             over the phase: rate = accepted ÷ drafted tokens, length = 1 + accepted ÷ verify \
             steps (the bonus token included); 95% intervals by bootstrap over requests. The \
             counters columns are the same rates from the server's spec_decode counters over \
             the window, where scraped.",
        )]),
        Block::Table(t),
    ];
    for (phase, s) in histograms {
        blocks.push(Block::Paragraph(vec![Span::strong(format!(
            "{phase}: verify steps by draft tokens accepted"
        ))]));
        blocks.push(Block::Table(histogram_table(s)));
        blocks.push(Block::Figure(histogram_chart(
            &phase,
            &s.acceptance_histogram,
        )));
    }
    blocks
}

fn histogram_table(s: &SpecDecodeSummary) -> Table {
    let mut t = Table::new(&[
        ("Accepted", Align::Right),
        ("Steps", Align::Right),
        ("Share", Align::Right),
    ]);
    let steps: u64 = s.acceptance_histogram.iter().sum();
    for (j, n) in s.acceptance_histogram.iter().enumerate() {
        let share = if steps > 0 {
            *n as f64 / steps as f64
        } else {
            0.0
        };
        t.rows.push(vec![
            Cell::plain(j.to_string()),
            Cell::plain(n.to_string()),
            Cell::plain(format!("{:.1}%", share * 100.0)),
        ]);
    }
    t
}

/// Bars of verify steps by draft tokens accepted.
fn histogram_chart(phase: &str, histogram: &[u64]) -> String {
    let height = 220.0;
    let (left, bottom, top) = (60.0, height - 40.0, 40.0);
    let mut out = String::new();
    open(
        &mut out,
        &format!("{phase}: verify steps by draft tokens accepted"),
        height,
    );
    let max = histogram.iter().copied().max().unwrap_or(0).max(1) as f64;
    let slot = (WIDTH - left - 20.0) / histogram.len().max(1) as f64;
    for (j, n) in histogram.iter().enumerate() {
        let h = (bottom - top) * *n as f64 / max;
        let x = left + slot * j as f64 + slot * 0.15;
        let _ = write!(
            out,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{}\">\
             <title>{} accepted: {n} steps</title></rect>\
             <text x=\"{:.1}\" y=\"{:.1}\" class=\"al\" text-anchor=\"middle\">{j}</text>",
            bottom - h,
            slot * 0.7,
            PALETTE[0],
            esc(&j.to_string()),
            x + slot * 0.35,
            bottom + 16.0,
        );
    }
    let _ = write!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" class=\"al\" text-anchor=\"middle\">draft tokens accepted per verify step</text></svg>",
        WIDTH / 2.0,
        bottom + 34.0
    );
    out
}
