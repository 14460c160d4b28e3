//! Table content for the load each phase held (mean requests and tokens in flight) beside
//! what it planned, shared by the markdown and HTML writers.

use super::numfmt::{ms_from_s, sig3};
use super::table::{Align, Cell, Mark, Table, load_label};
use crate::metrics::planned_requests_in_flight;
use crate::report::model::{PhaseResult, Report};

/// Held below this share of the plan, a phase's row says what held the load back.
const HELD_SHARE_NOTED: f64 = 0.9;

/// An open loop whose sends came within this share of its rate kept pace (the rule a
/// client-bound probe's sends are held to).
const SENDS_KEPT_PACE: f64 = 0.95;

/// What held a phase's load under its plan.
#[derive(Debug, Clone, PartialEq)]
enum HeldBack {
    /// An open loop's sends fell behind its rate while a `max_concurrency` cap was full.
    Cap { cap: u32, sent_share: f64 },
    /// An open loop's sends fell behind its rate with no cap: the client.
    SendsBehind { sent_share: f64 },
    /// The client's trust verdict: its own delay is in the figures.
    ClientBound,
    /// Sessions pause between turns, holding no request.
    ThinkTime,
    /// An open loop that sent at pace: its requests outlasted the sends (the server queued).
    Server { drain_s: Option<f64> },
    /// A closed loop whose workers finish one by one at the window's end.
    WindowEnd,
}

impl HeldBack {
    /// Only what kept load from the server is marked: the reader should fix it.
    fn mark(&self) -> Mark {
        match self {
            HeldBack::Cap { .. } | HeldBack::SendsBehind { .. } | HeldBack::ClientBound => {
                Mark::Warn
            }
            HeldBack::ThinkTime | HeldBack::Server { .. } | HeldBack::WindowEnd => Mark::Plain,
        }
    }

    fn text(&self) -> String {
        let pct = |share: f64| format!("{:.0}%", share * 100.0);
        match self {
            HeldBack::Cap { cap, sent_share } => {
                format!(
                    "max_concurrency {cap}: sends waited for a slot ({} of the rate sent)",
                    pct(*sent_share)
                )
            }
            HeldBack::SendsBehind { sent_share } => {
                format!(
                    "the client: sends fell behind ({} of the rate sent)",
                    pct(*sent_share)
                )
            }
            HeldBack::ClientBound => "the client: client-bound (see Client trust)".to_string(),
            HeldBack::ThinkTime => "think time between a session's turns".to_string(),
            HeldBack::Server { drain_s: Some(s) } => format!(
                "the server: sends kept pace; its requests ran {} s past the last send",
                sig3(*s)
            ),
            HeldBack::Server { drain_s: None } => {
                "the server: sends kept pace; its requests outlasted them".to_string()
            }
            HeldBack::WindowEnd => {
                "the window's end: workers finish one by one, long requests against the window"
                    .to_string()
            }
        }
    }
}

/// Why `p` held under its plan, in the order a reader should look: the sends, the client,
/// the workload's own pauses, then the server.
fn held_back(report: &Report, p: &PhaseResult, cap: Option<u32>) -> HeldBack {
    let open_loop = p.header.rate_rps.filter(|_| p.header.concurrency.is_none());
    if let (Some(_), Some(sent_share)) = (open_loop, p.achieved_rate_ratio)
        && sent_share < SENDS_KEPT_PACE
    {
        return match cap {
            Some(cap) => HeldBack::Cap { cap, sent_share },
            None => HeldBack::SendsBehind { sent_share },
        };
    }
    if p.client_trust.as_ref().is_some_and(|t| !t.is_trusted()) {
        return HeldBack::ClientBound;
    }
    if thinks_between_turns(report, p) {
        return HeldBack::ThinkTime;
    }
    match open_loop {
        Some(rps) => {
            // The sends' span at the rate they achieved; the window's rest is the drain.
            let sent = p.summary.requests.saturating_sub(1) as f64;
            let rate = rps * p.achieved_rate_ratio.unwrap_or(1.0);
            let drain_s = (sent > 0.0 && rate > 0.0)
                .then(|| p.summary.elapsed - sent / rate)
                .filter(|s| *s > 0.0);
            HeldBack::Server { drain_s }
        }
        None => HeldBack::WindowEnd,
    }
}

/// The phase runs sessions that pause between turns.
fn thinks_between_turns(report: &Report, p: &PhaseResult) -> bool {
    let Some(sessions) = &p.sessions else {
        return false;
    };
    let session = plan_phase(report, p)
        .and_then(|ph| ph.workload.as_deref())
        .and_then(|w| report.plan.workloads.get(w))
        .and_then(|w| w.session.as_ref());
    sessions.turns.len() > 1 && session.is_some_and(|s| s.think_time.is_some())
}

/// What the columns mean, stated once under the table.
pub fn note() -> String {
    format!(
        "In flight: time-weighted means over the phase's window (first measured start to last \
         end). Tokens count each request's prompt for its whole life and its generated tokens \
         as they arrive. Planned: the concurrency of a closed loop; an open loop's rate times \
         its mean latency (Little's law), capped by max_concurrency. Under {:.0}% of its plan, \
         a phase says what held it back; only a cap or a client that kept load from the \
         server is marked. An open loop that sent at pace but held less was held by the \
         server: its requests outlasted the sends (queueing), and the window ran on while \
         they drained.",
        HELD_SHARE_NOTED * 100.0
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
        ("Held back by", Align::Left),
        ("Tokens in flight", Align::Right),
        ("Mean latency (ms)", Align::Right),
    ]);
    for p in &report.phases {
        let Some(held) = &p.summary.in_flight else {
            continue;
        };
        let rate_cap = rate_cap(report, p);
        let cap = p.header.concurrency.or(rate_cap);
        let planned = planned_requests_in_flight(cap, p.header.rate_rps, held);
        let share = planned.filter(|&n| n > 0.0).map(|n| held.requests / n);
        let (share_cell, why_cell) = match share {
            Some(s) if s < HELD_SHARE_NOTED => {
                let why = held_back(report, p, rate_cap);
                (
                    Cell::marked(format!("{:.1}%", s * 100.0), why.mark()),
                    Cell::marked(why.text(), why.mark()),
                )
            }
            Some(s) => (Cell::plain(format!("{:.1}%", s * 100.0)), Cell::plain("")),
            None => (Cell::plain("–"), Cell::plain("")),
        };
        t.rows.push(vec![
            Cell::plain(p.header.phase.clone()),
            Cell::plain(load_label(p)),
            Cell::plain(sig3(held.requests)),
            Cell::plain(planned.map_or_else(|| "–".to_string(), sig3)),
            share_cell,
            why_cell,
            Cell::plain(sig3(held.tokens)),
            Cell::plain(ms_from_s(held.mean_latency_s)),
        ]);
    }
    t
}

/// The plan's phase of `p`'s name; none for a search's probes, which the plan names only
/// as their search.
fn plan_phase<'r>(report: &'r Report, p: &PhaseResult) -> Option<&'r crate::plan::Phase> {
    if p.probe.is_some() {
        return None;
    }
    let name = Some(p.header.phase.as_str());
    report
        .plan
        .phases
        .iter()
        .find(|ph| ph.name.as_deref() == name)
}

/// An open loop's `max_concurrency`, read from the plan's phase of that name (a search's
/// probes run uncapped).
fn rate_cap(report: &Report, p: &PhaseResult) -> Option<u32> {
    plan_phase(report, p)?.rate.as_ref()?.max_concurrency
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

    #[test]
    fn an_open_loop_that_sent_at_pace_was_held_back_by_the_server_unmarked() {
        let mut report = open_loop(Some(64));
        let phase = report
            .phases
            .iter_mut()
            .find(|p| p.header.rate_rps.is_some());
        let phase = phase.unwrap();
        phase.achieved_rate_ratio = Some(1.03);
        phase.summary.requests = 81;
        phase.summary.elapsed = 7.0;
        let t = table(&report);
        let row = t.rows.iter().find(|r| r[1].text.ends_with("rps")).unwrap();
        assert_eq!(row[4].mark, Mark::Plain);
        // 80 gaps at 41.2 req/s take 1.94 s of the 7 s window.
        assert_eq!(
            row[5].text,
            "the server: sends kept pace; its requests ran 5.06 s past the last send"
        );
    }

    #[test]
    fn sends_that_fell_behind_are_marked_and_named_for_the_cap_or_the_client() {
        let mut report = open_loop(Some(64));
        let index = report
            .phases
            .iter()
            .position(|p| p.header.rate_rps.is_some());
        report.phases[index.unwrap()].achieved_rate_ratio = Some(0.74);
        let row = row_of_open_loop(&table(&report));
        assert_eq!(
            row[5],
            "max_concurrency 64: sends waited for a slot (74% of the rate sent)"
        );
        let t = table(&report);
        let marked = t.rows.iter().find(|r| r[1].text.ends_with("rps")).unwrap();
        assert_eq!(marked[4].mark, Mark::Warn);

        let mut report = open_loop(None);
        report.phases[index.unwrap()].achieved_rate_ratio = Some(0.74);
        let row = row_of_open_loop(&table(&report));
        assert_eq!(
            row[5],
            "the client: sends fell behind (74% of the rate sent)"
        );
    }

    #[test]
    fn sessions_that_think_between_turns_are_not_marked() {
        let mut report = crate::report::sample_report();
        let phase = &mut report.phases[0];
        phase.summary.in_flight = Some(InFlight {
            requests: 0.5,
            tokens: 100.0,
            mean_latency_s: 0.25,
        });
        let turn = |turn: u64| crate::metrics::TurnFigures {
            turn,
            ..Default::default()
        };
        phase.sessions = Some(crate::metrics::SessionSummary {
            sessions: 2,
            complete: 2,
            duration: None,
            turns: vec![turn(0), turn(1)],
        });
        let session = crate::plan::Session {
            turns: 2,
            user_tokens: None,
            think_time: Some(crate::plan::ThinkTime::Fixed(crate::plan::HumanDuration(
                std::time::Duration::from_secs(1),
            ))),
            affinity_header: None,
        };
        let workload = report
            .plan
            .workloads
            .keys()
            .next()
            .cloned()
            .expect("a workload");
        report.plan.phases[0].workload = Some(workload.clone());
        report.plan.workloads.get_mut(&workload).unwrap().session = Some(session);
        let t = table(&report);
        assert_eq!(t.rows[0][5].text, "think time between a session's turns");
        assert_eq!(t.rows[0][4].mark, Mark::Plain);
    }
}
