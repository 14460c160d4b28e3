//! The figure table by model for phases whose workload mixes models (a base model and its
//! adapters), and what its rows are; empty when no phase mixed models.

use super::numfmt::sig3;
use super::table::{Align, Cell, Mark, Table, figure_cell, figure_heading, shown_figures};
use crate::report::model::Report;

/// Under the table: what the rows are.
pub const NOTE: &str = "One row per phase and served model name, most requests first. Each \
    request's model is drawn from the workload's `models` weights; rates are over the \
    phase's elapsed time, so a phase's rows add up to its own. A request for an adapter that \
    is not loaded waits for its load, which shows in that model's TTFT.";

pub fn table(report: &Report) -> Table {
    let generates = report.phases.iter().any(|p| !p.summary.encodes());
    let figures = shown_figures(report, generates);
    let mut headings: Vec<String> = ["Phase", "Model", "Requests", "Share", "Errors"]
        .map(String::from)
        .into();
    if generates {
        headings.push("Output tok/s".into());
    }
    headings.push("Req/s".into());
    for (spec, label, stats) in &figures {
        headings.extend(stats.iter().map(|&stat| figure_heading(spec, label, stat)));
    }
    let columns: Vec<(&str, Align)> = headings
        .iter()
        .enumerate()
        .map(|(i, h)| (h.as_str(), if i < 2 { Align::Left } else { Align::Right }))
        .collect();
    let mut t = Table::new(&columns);
    for phase in &report.phases {
        for m in &phase.models {
            let errors = if m.errors > 0 {
                Cell::marked(m.errors.to_string(), Mark::Bad)
            } else {
                Cell::plain("0")
            };
            let mut row = vec![
                Cell::plain(phase.header.phase.clone()),
                Cell::plain(m.model.clone()),
                Cell::plain(m.requests.to_string()),
                Cell::plain(format!("{}%", sig3(m.share * 100.0))),
                errors,
            ];
            if generates {
                row.push(Cell::plain(sig3(m.output_tokens_per_second)));
            }
            row.push(Cell::plain(sig3(m.request_rate)));
            for (spec, _, stats) in &figures {
                let d = m.figures.get(spec.figure);
                row.extend(stats.iter().map(|&stat| figure_cell(d, spec, stat)));
            }
            t.rows.push(row);
        }
    }
    t
}
