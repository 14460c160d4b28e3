//! The cancellations table: per phase that cancelled requests, how many, and whether the
//! server finished requests as fast after the first cancellation as before it.

use super::numfmt::{pct_change, sig3};
use super::table::{Align, Cell, Mark, Table};
use crate::metrics::cancellation::{CAPACITY_TOLERANCE, FinishWindow};
use crate::report::model::Report;

/// What the table's columns mean.
pub fn note() -> String {
    format!(
        "Cancelled requests are neither successes nor errors and are left out of every figure \
         that needs a whole response. Throughput is requests finished (run to their end or \
         cancelled) per second: before, from the first finish to the first cancellation; \
         after, from then to the last finish. \"Capacity lost\": the after-window fell short \
         by more than {}% and by more than twice the noise of the two counts.",
        CAPACITY_TOLERANCE * 100.0
    )
}

fn window(w: Option<&FinishWindow>) -> String {
    w.map_or_else(
        || "–".to_string(),
        |w| {
            format!(
                "{}/s ({} in {:.1} s)",
                sig3(w.finished_per_s),
                w.finished,
                w.end_s - w.start_s
            )
        },
    )
}

/// One row per phase with cancellations.
pub fn table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Cancelled", Align::Right),
        ("Share", Align::Right),
        ("Tokens before cancel (mean)", Align::Right),
        ("First cancel (s)", Align::Right),
        ("Finished before", Align::Right),
        ("Finished after", Align::Right),
        ("Change", Align::Right),
        ("Server aborts", Align::Right),
        ("Capacity", Align::Left),
    ]);
    for phase in &report.phases {
        let Some(c) = &phase.cancellations else {
            continue;
        };
        let verdict = match (c.change, c.capacity_lost) {
            (_, true) => Cell::marked("capacity lost", Mark::Bad),
            (Some(_), false) => Cell::marked("recovered", Mark::Good),
            (None, false) => Cell::plain("no baseline"),
        };
        let server = c
            .server_aborted
            .map_or_else(|| "–".to_string(), |n| format!("{n:.0}"));
        let server = match c.server_aborted {
            Some(n) if n + 0.5 < c.cancelled as f64 => Cell::marked(server, Mark::Warn),
            _ => Cell::plain(server),
        };
        t.rows.push(vec![
            Cell::plain(phase.header.phase.clone()),
            Cell::plain(c.cancelled.to_string()),
            Cell::plain(format!("{:.1}%", c.share * 100.0)),
            Cell::plain(sig3(c.mean_tokens_before_cancel)),
            Cell::plain(format!("{:.2}", c.first_cancel_s)),
            Cell::plain(window(c.before.as_ref())),
            Cell::plain(window(c.after.as_ref())),
            Cell::plain(c.change.map_or_else(|| "–".to_string(), pct_change)),
            server,
            verdict,
        ]);
    }
    t
}

/// Whether any phase cancelled requests.
pub fn shown(report: &Report) -> bool {
    report.phases.iter().any(|p| p.cancellations.is_some())
}
