//! The capacity-search tables shared by the markdown and HTML writers.

use super::numfmt::{sig3, with_unit};
use super::table::{Align, Cell, Mark, Table};
use crate::metrics::verdict::Verdict;
use crate::report::model::figure_path::Unit;
use crate::report::model::{ObjectiveCheck, Report};

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), sig3)
}

/// One row per search: capacity, goodput, bracket, why it stopped.
pub fn searches(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Search", Align::Left),
        ("Load", Align::Left),
        ("Capacity", Align::Right),
        ("Capacity interval", Align::Right),
        ("Goodput (req/s)", Align::Right),
        ("Bracket", Align::Right),
        ("Probes", Align::Right),
        ("Stopped", Align::Left),
    ]);
    for s in &report.searches {
        let load = serde_json::to_value(s.load)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        t.rows.push(vec![
            Cell::plain(s.phase.clone()),
            Cell::plain(load),
            if s.lower_bound {
                Cell::marked(format!("≥ {} (lower bound)", opt(s.capacity)), Mark::Bad)
            } else {
                Cell::marked(opt(s.capacity), Mark::Good)
            },
            Cell::plain(match s.capacity_interval {
                [None, None] => "–".to_string(),
                [lo, hi] => format!("{} – {}", opt(lo), opt(hi)),
            }),
            Cell::plain(opt(s.goodput)),
            Cell::plain(format!("{} – {}", opt(s.bracket[0]), opt(s.bracket[1]))),
            Cell::plain(s.probes.len().to_string()),
            Cell::plain(s.stop_reason.clone()),
        ]);
    }
    t
}

/// A line per search that could not answer or that ran a client-bound probe, so the section
/// itself says what the trust section knows.
pub fn notes(report: &Report) -> Vec<String> {
    let mut notes = Vec::new();
    for s in &report.searches {
        let client_bound = report
            .phases
            .iter()
            .filter(|p| s.probes.contains(&p.header.phase))
            .filter(|p| p.client_trust.as_ref().is_some_and(|t| !t.is_trusted()));
        let (held, bound): (Vec<_>, Vec<_>) =
            client_bound.partition(|p| p.probe.as_ref().is_some_and(|o| o.holds_despite_client()));
        let names = |phases: &[&crate::report::model::PhaseResult]| {
            phases
                .iter()
                .map(|p| p.header.phase.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if s.lower_bound {
            notes.push(format!(
                "Search `{}` {}: its capacity {} is only a lower bound, not an answer.",
                s.phase,
                s.stop_reason,
                opt(s.capacity)
            ));
        }
        if !bound.is_empty() {
            notes.push(format!(
                "Search `{}`: client-bound probes (their latencies include the client's own \
                 delay, and none of them decided the search): {}.",
                s.phase,
                names(&bound)
            ));
        }
        if !held.is_empty() {
            notes.push(format!(
                "Search `{}`: client-bound probes whose verdict held with every time limit \
                 moved by the client's largest delay, so they decided: {}.",
                s.phase,
                names(&held)
            ));
        }
    }
    notes
}

/// One row per probe: load, verdict, whether its client kept up, each percentile objective's
/// bounds, and the objectives it missed or could not decide.
pub fn probes(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Probe", Align::Left),
        ("Load", Align::Right),
        ("Verdict", Align::Left),
        ("Client", Align::Left),
        ("Bounds (samples)", Align::Left),
        ("Missed or undecided", Align::Left),
    ]);
    for p in &report.phases {
        let Some(o) = &p.probe else { continue };
        let mut missed: Vec<String> = o
            .objectives
            .iter()
            .filter(|c| c.verdict != Verdict::Pass)
            .map(|c| {
                let value = c.value.map_or_else(|| "–".to_string(), |v| show(c, v));
                let relation = match (c.verdict, c.share.is_some()) {
                    (Verdict::Fail, false) => ">",
                    (Verdict::Fail, true) => "<",
                    _ => "undecided against",
                };
                format!("{} {value} {relation} {}", c.objective, show(c, c.limit))
            })
            .collect();
        let bounds: Vec<String> = o
            .objectives
            .iter()
            .filter_map(|c| {
                if let Some(b) = c.share {
                    return Some(format!(
                        "{} {} – {} ({}, {} effective)",
                        c.objective,
                        show(c, b.lo),
                        show(c, b.hi),
                        b.samples,
                        b.effective_samples.floor()
                    ));
                }
                let b = c.bounds?;
                let end = |v: Option<f64>| v.map_or_else(|| "?".to_string(), |v| show(c, v));
                Some(format!(
                    "{} {} – {} ({}, {} effective)",
                    c.objective,
                    end(b.lo),
                    end(b.hi),
                    b.samples,
                    b.effective_samples.floor()
                ))
            })
            .collect();
        let client = match (&p.client_trust, &o.despite_client) {
            (Some(trust), Some(held)) if !trust.is_trusted() && held.holds => Cell::marked(
                format!(
                    "client-bound; holds at ±{} ms",
                    held.delay_ms.map_or_else(|| "?".to_string(), sig3)
                ),
                Mark::Warn,
            ),
            (Some(trust), _) if !trust.is_trusted() => Cell::marked("client-bound", Mark::Bad),
            (Some(_), _) => Cell::plain("trusted"),
            (None, _) => Cell::plain("–"),
        };
        if o.over_saturated {
            let named = match &o.over_saturated_why {
                Some(why) => format!("over-saturated: {why}"),
                None => "over-saturated".to_string(),
            };
            missed.insert(0, named);
        }
        t.rows.push(vec![
            Cell::plain(p.header.phase.clone()),
            Cell::plain(sig3(o.load)),
            match o.verdict {
                Verdict::Pass => Cell::marked("pass", Mark::Good),
                Verdict::Fail => Cell::marked("FAIL", Mark::Bad),
                Verdict::Indeterminate => Cell::marked("indeterminate", Mark::Bad),
            },
            client,
            Cell::plain(bounds.join("; ")),
            Cell::plain(missed.join("; ")),
        ]);
    }
    t
}

/// An objective's figure in its unit: a share for `error_rate` and `goodput`, else seconds.
fn show(c: &ObjectiveCheck, v: f64) -> String {
    if c.objective == "error_rate" || c.objective == "goodput" {
        format!("{}%", sig3(v * 100.0))
    } else {
        with_unit(v, Unit::Seconds)
    }
}
