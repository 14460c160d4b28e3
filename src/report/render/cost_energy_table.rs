//! The cost and energy table shared by the markdown and HTML writers: per phase with a
//! priced target or a power gauge, its price per million tokens and its energy, with how the
//! energy was sampled, or why there is no figure.

use super::document::{Block, Span};
use super::numfmt::sig3;
use super::table::{Align, Cell, Mark, Table};
use crate::metrics::energy::{MAX_GAP_SHARE, PhaseEnergy};
use crate::report::model::Report;

/// Whether any phase has a cost or an energy account.
pub fn shown(report: &Report) -> bool {
    report
        .phases
        .iter()
        .any(|p| p.cost.is_some() || p.energy.is_some())
}

fn note() -> String {
    format!(
        "Cost: the target's price per hour × the phase's elapsed window / 3600, per million \
         output tokens and per million tokens (input + output). Energy: the power gauge, \
         summed over its devices, sampled every `metrics_interval` and integrated by the \
         trapezoid rule over the window; no figure when the gauge is missing or the window \
         has a stretch longer than {:.0}% of it without a sample.",
        MAX_GAP_SHARE * 100.0
    )
}

pub fn blocks(report: &Report) -> Vec<Block> {
    vec![
        Block::Note(vec![Span::text(note())]),
        Block::Table(table(report)),
    ]
}

fn number(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), sig3)
}

/// How the energy was measured, or why there is no figure.
fn method(e: &PhaseEnergy) -> Cell {
    match &e.unavailable {
        Some(why) => Cell::marked(why.clone(), Mark::Warn),
        None => Cell::plain(format!(
            "{} of `{}` over {} devices, {} samples every {} s over {} s",
            e.method,
            e.metric,
            e.devices,
            e.samples,
            sig3(e.interval_s),
            sig3(e.window_s)
        )),
    }
}

pub fn table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Cost / Mtok out", Align::Right),
        ("Cost / Mtok", Align::Right),
        ("Mean power (W)", Align::Right),
        ("J / output token", Align::Right),
        ("J / request", Align::Right),
        ("Energy method", Align::Left),
    ]);
    for p in &report.phases {
        if p.cost.is_none() && p.energy.is_none() {
            continue;
        }
        let price = |v: Option<f64>| match (&p.cost, v) {
            (Some(c), Some(v)) => format!("{} {}", sig3(v), c.currency),
            _ => "–".to_string(),
        };
        let cost = p.cost.as_ref();
        let energy = p.energy.as_ref();
        t.rows.push(vec![
            Cell::plain(p.header.phase.clone()),
            Cell::plain(price(cost.and_then(|c| c.per_million_output_tokens))),
            Cell::plain(price(cost.and_then(|c| c.per_million_tokens))),
            Cell::plain(number(energy.and_then(|e| e.mean_watts))),
            Cell::plain(number(energy.and_then(|e| e.joules_per_output_token))),
            Cell::plain(number(energy.and_then(|e| e.joules_per_request))),
            energy.map_or_else(|| Cell::plain("–"), method),
        ]);
    }
    t
}
