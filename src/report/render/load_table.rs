//! Table content for the load each phase held (mean requests and tokens in flight) beside
//! what it planned, shared by the markdown and HTML writers.

use super::numfmt::{ms_from_s, sig3};
use super::table::{Align, Cell, Mark, Table, load_label};
use crate::metrics::planned_requests_in_flight;
use crate::report::model::Report;

/// Held below this share of the plan, a phase's row is marked: the client, a cap or a
/// refusing server kept the load from the server.
const HELD_SHARE_WARN: f64 = 0.9;

/// What the columns mean, stated once under the table.
pub fn note() -> String {
    format!(
        "In flight: time-weighted means over the phase's window (first measured start to last \
         end). Tokens count each request's prompt for its whole life and its generated tokens \
         as they arrive. Planned: the concurrency of a closed loop; an open loop's rate times \
         its mean latency (Little's law), capped by max_concurrency. A phase that held under \
         {:.0}% of its plan is marked.",
        HELD_SHARE_WARN * 100.0
    )
}

/// One row per phase that measured a window; empty for reports written before it.
pub fn table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Load", Align::Left),
        ("Requests in flight", Align::Right),
        ("Planned", Align::Right),
        ("Held / planned", Align::Right),
        ("Tokens in flight", Align::Right),
        ("Mean latency (ms)", Align::Right),
    ]);
    for p in &report.phases {
        let Some(held) = &p.summary.in_flight else {
            continue;
        };
        let planned = planned_requests_in_flight(p.header.concurrency, p.header.rate_rps, held);
        let share = planned.filter(|&n| n > 0.0).map(|n| held.requests / n);
        let share_cell = match share {
            Some(s) if s < HELD_SHARE_WARN => {
                Cell::marked(format!("{:.1}%", s * 100.0), Mark::Warn)
            }
            Some(s) => Cell::plain(format!("{:.1}%", s * 100.0)),
            None => Cell::plain("–"),
        };
        t.rows.push(vec![
            Cell::plain(p.header.phase.clone()),
            Cell::plain(load_label(p)),
            Cell::plain(sig3(held.requests)),
            Cell::plain(planned.map_or_else(|| "–".to_string(), sig3)),
            share_cell,
            Cell::plain(sig3(held.tokens)),
            Cell::plain(ms_from_s(held.mean_latency_s)),
        ]);
    }
    t
}
