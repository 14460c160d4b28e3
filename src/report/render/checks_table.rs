//! The checked replies: each structured-output phase's share of valid replies with its
//! interval and the invalid ones by reason, each scored phase's accuracy with its interval,
//! and each `compare_to` phase's overhead.

use super::document::{Block, Span};
use super::numfmt::sig3;
use super::table::{Align, Cell, Table};
use crate::report::model::Report;

/// Whether any phase checked replies or was compared to another.
pub fn shown(report: &Report) -> bool {
    report.phases.iter().any(|p| {
        p.summary.structured_output.is_some()
            || p.summary.accuracy.is_some()
            || p.overhead.is_some()
    })
}

/// One row per phase whose replies were scored against their `expected`.
pub fn accuracy_table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Scored", Align::Right),
        ("Correct", Align::Right),
        ("Accuracy", Align::Right),
        ("95% interval", Align::Right),
    ]);
    for phase in &report.phases {
        let Some(a) = &phase.summary.accuracy else {
            continue;
        };
        t.rows.push(vec![
            Cell::plain(phase.header.phase.clone()),
            Cell::plain(a.scored.to_string()),
            Cell::plain(a.correct.to_string()),
            Cell::plain(pct(a.accuracy)),
            Cell::plain(format!(
                "{} – {}",
                pct(a.accuracy_ci95[0]),
                pct(a.accuracy_ci95[1])
            )),
        ]);
    }
    t
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// One row per phase whose replies were checked against a `response_format`.
pub fn structured_table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Checked", Align::Right),
        ("Valid", Align::Right),
        ("Valid share", Align::Right),
        ("95% interval", Align::Right),
        ("Invalid by reason", Align::Left),
    ]);
    for phase in &report.phases {
        let Some(o) = &phase.summary.structured_output else {
            continue;
        };
        let reasons: Vec<String> = o
            .invalid
            .iter()
            .map(|r| format!("{} × {}", r.count, r.reason))
            .collect();
        t.rows.push(vec![
            Cell::plain(phase.header.phase.clone()),
            Cell::plain(o.checked.to_string()),
            Cell::plain(o.valid.to_string()),
            Cell::plain(pct(o.valid_share)),
            Cell::plain(format!(
                "{} – {}",
                pct(o.valid_share_ci95[0]),
                pct(o.valid_share_ci95[1])
            )),
            Cell::plain(if reasons.is_empty() {
                "–".to_string()
            } else {
                reasons.join("; ")
            }),
        ]);
    }
    t
}

/// A figure's value as the phase table shows it: times in ms, rates in tok/s.
fn in_unit(figure: &str, value: f64) -> String {
    if figure.starts_with("ttft") || figure.starts_with("tpot") {
        format!("{} ms", sig3(value * 1000.0))
    } else {
        format!("{} tok/s", sig3(value))
    }
}

/// One row per figure of each phase compared to another.
pub fn overhead_table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Against", Align::Left),
        ("Figure", Align::Left),
        ("Base", Align::Right),
        ("This phase", Align::Right),
        ("Overhead", Align::Right),
        ("95% interval", Align::Right),
        ("Samples", Align::Right),
    ]);
    for phase in &report.phases {
        let Some(o) = &phase.overhead else {
            continue;
        };
        for f in &o.figures {
            t.rows.push(vec![
                Cell::plain(phase.header.phase.clone()),
                Cell::plain(o.against.clone()),
                Cell::plain(f.figure.clone()),
                Cell::plain(in_unit(&f.figure, f.base)),
                Cell::plain(in_unit(&f.figure, f.new)),
                Cell::plain(format!("{:+.1}%", f.relative_change * 100.0)),
                Cell::plain(format!(
                    "{:+.1}% – {:+.1}%",
                    f.relative_ci95[0] * 100.0,
                    f.relative_ci95[1] * 100.0
                )),
                Cell::plain(format!("{} / {}", f.samples[0], f.samples[1])),
            ]);
        }
    }
    t
}

/// The section's body: the tables that have rows, each with what it means.
pub fn blocks(report: &Report) -> Vec<Block> {
    let mut out = Vec::new();
    let structured = structured_table(report);
    if !structured.rows.is_empty() {
        out.push(Block::Note(vec![Span::text(
            "Each successful reply was parsed and checked against its workload's \
             response_format after the request. valid_share is the share that passed, with \
             its Wilson 95% interval; a reply cut by max_tokens (finish_reason length) that \
             fails is counted as cut.",
        )]));
        out.push(Block::Table(structured));
    }
    let accuracy = accuracy_table(report);
    if !accuracy.rows.is_empty() {
        out.push(Block::Note(vec![Span::text(
            "Each successful reply was scored against its dataset row's expected answer \
             after the request, by the workload's score; accuracy is the share correct, with \
             its Wilson 95% interval.",
        )]));
        out.push(Block::Table(accuracy));
    }
    let overhead = overhead_table(report);
    if !overhead.rows.is_empty() {
        out.push(Block::Note(vec![Span::text(
            "Overhead: this phase's p50 over its compare_to phase's, as a relative change; \
             the interval is the percentile bootstrap of the difference (1000 resamples of \
             each side's requests) over the base.",
        )]));
        out.push(Block::Table(overhead));
    }
    out
}
