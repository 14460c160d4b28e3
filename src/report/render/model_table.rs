//! The figure table by group for phases that mix: by served model (a base model and its
//! adapters) and by archetype (the workloads of a phase's `mix`); each empty when no phase
//! mixed.

use super::numfmt::sig3;
use super::table::{Align, Cell, Mark, Table, figure_cell, figure_heading, shown_figures};
use crate::metrics::{MixFigures, SloCheck};
use crate::report::model::{PhaseResult, Report};

/// Under the table: what the rows are.
pub const NOTE: &str = "One row per phase and served model name, most requests first. Each \
    request's model is drawn from the workload's `models` weights; rates are over the \
    phase's elapsed time, so a phase's rows add up to its own. A request for an adapter that \
    is not loaded waits for its load, which shows in that model's TTFT.";

/// Under the archetype table: what the rows are.
pub const ARCHETYPE_NOTE: &str = "One row per phase and archetype (a workload of the phase's \
    `mix`), most requests first, then the whole phase. Each request's archetype is drawn by \
    the phase's seed: a phase of a fixed request count gives each archetype its weight's \
    share exactly (largest remainder). Rates are over the phase's elapsed time, so an \
    archetype's rows add up to the phase's; goodput and the SLO verdict (each objective of \
    the plan's `slo` against the row's own figures) are the row's own.";

/// The table by served model.
pub fn table(report: &Report) -> Table {
    group_table(report, "Model", model_rows, false)
}

/// The table by archetype, each phase's archetypes then the whole phase.
pub fn archetype_table(report: &Report) -> Table {
    group_table(report, "Archetype", archetype_rows, true)
}

fn model_rows(p: &PhaseResult) -> Vec<(String, &MixFigures)> {
    p.models.iter().map(|m| (m.model.clone(), &m.of)).collect()
}

fn archetype_rows(p: &PhaseResult) -> Vec<(String, &MixFigures)> {
    let each = p.archetypes.iter();
    each.map(|a| (a.archetype.clone(), &a.of)).collect()
}

/// One row per group of each phase; `with_phase` adds goodput and SLO columns and a row for
/// the whole phase after its groups.
fn group_table(
    report: &Report,
    group: &str,
    rows: fn(&PhaseResult) -> Vec<(String, &MixFigures)>,
    with_phase: bool,
) -> Table {
    let generates = report.phases.iter().any(|p| !p.summary.encodes());
    let figures = shown_figures(report, generates);
    let judged = with_phase && report.plan.slo.is_some();
    let mut headings: Vec<String> = ["Phase", group, "Requests", "Share", "Errors"]
        .map(String::from)
        .into();
    if generates {
        headings.push("Output tok/s".into());
    }
    headings.push("Req/s".into());
    if judged {
        headings.extend(["Goodput".to_string(), "SLO".to_string()]);
    }
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
        let groups = rows(phase);
        if groups.is_empty() {
            continue;
        }
        let whole = with_phase.then(|| ("(whole phase)".to_string(), whole_phase(phase)));
        let each = groups.iter().map(|(name, m)| (name.clone(), (*m).clone()));
        for (name, m) in each.chain(whole) {
            let errors = if m.errors > 0 {
                Cell::marked(m.errors.to_string(), Mark::Bad)
            } else {
                Cell::plain("0")
            };
            let mut row = vec![
                Cell::plain(phase.header.phase.clone()),
                Cell::plain(name),
                Cell::plain(m.requests.to_string()),
                Cell::plain(format!("{}%", sig3(m.share * 100.0))),
                errors,
            ];
            if generates {
                row.push(Cell::plain(sig3(m.output_tokens_per_second)));
            }
            row.push(Cell::plain(sig3(m.request_rate)));
            if judged {
                row.push(goodput_cell(&m));
                row.push(slo_cell(&m.slo));
            }
            for (spec, _, stats) in &figures {
                let d = m.figures.get(spec.figure);
                row.extend(stats.iter().map(|&stat| figure_cell(d, spec, stat)));
            }
            t.rows.push(row);
        }
    }
    t
}

/// The whole phase as one more group.
fn whole_phase(phase: &PhaseResult) -> MixFigures {
    let s = &phase.summary;
    MixFigures {
        requests: s.requests,
        share: 1.0,
        errors: s.errors,
        total_input_tokens: s.total_input_tokens,
        total_output_tokens: s.total_output_tokens,
        request_rate: s.request_rate,
        output_tokens_per_second: s.output_tokens_per_second,
        goodput: s.goodput.clone(),
        slo: phase.slo.clone(),
        figures: s.figures,
    }
}

/// `97.5% (3.9/s)`, or `—` without an SLO.
fn goodput_cell(m: &MixFigures) -> Cell {
    match &m.goodput {
        Some(g) => Cell::plain(format!(
            "{}% ({}/s)",
            sig3(g.fraction * 100.0),
            sig3(g.request_rate)
        )),
        None => Cell::plain("—"),
    }
}

/// `met`, or the objectives missed (`missed ttft.p99`).
fn slo_cell(checks: &[SloCheck]) -> Cell {
    let missed: Vec<&str> = checks
        .iter()
        .filter(|c| !c.met)
        .map(|c| c.objective.as_str())
        .collect();
    match (checks.is_empty(), missed.is_empty()) {
        (true, _) => Cell::plain("—"),
        (false, true) => Cell::marked("met", Mark::Good),
        (false, false) => Cell::marked(format!("missed {}", missed.join(", ")), Mark::Bad),
    }
}
