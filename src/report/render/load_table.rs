//! Table content for the load each phase held (mean requests and tokens in flight) beside
//! what it planned, shared by the markdown and HTML writers.

use super::numfmt::{ms_from_s, sig3};
use super::table::{Align, Cell, Mark, Table, load_label};
use crate::metrics::planned_requests_in_flight;
use crate::report::model::{PhaseResult, Report};

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
        let cap = p.header.concurrency.or_else(|| rate_cap(report, p));
        let planned = planned_requests_in_flight(cap, p.header.rate_rps, held);
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

/// An open loop's `max_concurrency`, read from the plan's phase of that name (a search's
/// probes run uncapped).
fn rate_cap(report: &Report, p: &PhaseResult) -> Option<u32> {
    if p.probe.is_some() {
        return None;
    }
    let phase = report
        .plan
        .phases
        .iter()
        .find(|ph| ph.name.as_deref() == Some(p.header.phase.as_str()))?;
    phase.rate.as_ref()?.max_concurrency
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::InFlight;

    /// The sample's open loop at 40 rps, holding 33 in flight at 2.9 s mean latency.
    fn open_loop(max_concurrency: Option<u32>) -> Report {
        let mut report = crate::report::sample_report();
        let index = report
            .phases
            .iter()
            .position(|p| p.header.rate_rps.is_some())
            .expect("the sample has an open loop");
        let phase = &mut report.phases[index];
        phase.header.rate_rps = Some(40.0);
        phase.summary.in_flight = Some(InFlight {
            requests: 33.0,
            tokens: 17_000.0,
            mean_latency_s: 2.9,
        });
        let name = phase.header.phase.clone();
        let planned = report
            .plan
            .phases
            .iter_mut()
            .find(|ph| ph.name.as_deref() == Some(name.as_str()))
            .expect("its plan phase");
        planned.rate = Some(crate::plan::Rate {
            rps: 40.0,
            arrival: crate::plan::Arrival::Poisson,
            burstiness: None,
            max_concurrency,
        });
        report
    }

    fn row_of_open_loop(t: &Table) -> Vec<String> {
        let row = t
            .rows
            .iter()
            .find(|r| r[1].text.ends_with("rps"))
            .expect("open-loop row");
        row.iter().map(|c| c.text.clone()).collect()
    }

    #[test]
    fn an_open_loops_plan_is_capped_by_its_max_concurrency() {
        // 40 rps × 2.9 s = 116 by Little's law, above the cap of 64.
        let capped = row_of_open_loop(&table(&open_loop(Some(64))));
        assert_eq!(capped[3], "64.0");
        assert_eq!(capped[4], "51.6%");
        let uncapped = row_of_open_loop(&table(&open_loop(None)));
        assert_eq!(uncapped[3], "116");
        assert_eq!(uncapped[4], "28.4%");
    }
}
