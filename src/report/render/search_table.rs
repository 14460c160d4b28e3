//! The capacity-search tables shared by the markdown and HTML writers.

use super::numfmt::{sig3, with_unit};
use super::table::{Align, Cell, Mark, Table};
use crate::metrics::verdict::Verdict;
use crate::plan::SearchLoad;
use crate::report::model::figure_path::Unit;
use crate::report::model::{ObjectiveCheck, PhaseResult, ProbeOutcome, Report};
use crate::report::model::{SearchResult, SearchStop};

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), sig3)
}

/// A load, capacity or bracket end: whole numbers as such (concurrency 8, 30 req/s).
fn opt_load(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), load_number)
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
            match (s.lower_bound, s.capacity) {
                (true, Some(c)) => {
                    Cell::marked(format!("≥ {} (lower bound)", load_number(c)), Mark::Bad)
                }
                (true, None) => Cell::marked("none: no probe passed", Mark::Bad),
                (false, c) => Cell::marked(opt_load(c), Mark::Good),
            },
            Cell::plain(match s.capacity_interval {
                [None, None] => "–".to_string(),
                [lo, hi] => format!("{} – {}", opt_load(lo), opt_load(hi)),
            }),
            Cell::plain(opt(s.goodput)),
            Cell::plain(match s.bracket {
                [None, None] => "–".to_string(),
                [lo, hi] => format!("{} – {}", opt_load(lo), opt_load(hi)),
            }),
            Cell::plain(s.probes.len().to_string()),
            Cell::plain(s.stop_reason.clone()),
        ]);
    }
    t
}

/// A line per search that started above its `min`, could not answer or ran a client-bound
/// probe, so the section itself says what the probes and the trust section know.
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
        if let Some(start) = &s.start {
            notes.push(format!("Search `{}` {start}.", s.phase));
        }
        match (s.lower_bound, s.capacity) {
            (true, Some(c)) => notes.push(format!(
                "Search `{}` {}: its capacity {} is only a lower bound, not an answer.",
                s.phase,
                s.stop_reason,
                load_number(c)
            )),
            (true, None) => notes.push(no_pass_note(report, s)),
            (false, _) => {}
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

/// A search that stopped before any probe passed has no bound at all: say so, and why the
/// probe it stopped at could not answer.
fn no_pass_note(report: &Report, s: &SearchResult) -> String {
    let last = s.probes.last().and_then(|name| {
        let phase = report.phases.iter().find(|p| &p.header.phase == name)?;
        phase.probe.as_ref()
    });
    let at = |load: f64| match s.load {
        SearchLoad::Rate => format!("{} req/s", load_number(load)),
        SearchLoad::Concurrency => format!("concurrency {}", load_number(load)),
    };
    let why = match (s.stop(), last) {
        (Some(SearchStop::ClientBound { at: load }), _) => {
            format!("the probe at {} was client-bound twice", at(load))
        }
        (Some(SearchStop::Indeterminate { at: load }), Some(o)) => {
            let undecided: Vec<String> = o
                .objectives
                .iter()
                .filter(|c| c.verdict == Verdict::Indeterminate)
                .map(undecided)
                .collect();
            format!(
                "the probe at {} could not decide ({})",
                at(load),
                undecided.join("; ")
            )
        }
        _ => s.stop_reason.clone(),
    };
    format!("Search `{}`: no probe passed; {why}.", s.phase)
}

/// Why an objective stayed undecided: too few samples for its percentile to pass, or bounds
/// that straddle its limit.
fn undecided(c: &ObjectiveCheck) -> String {
    if let Some(short) = c.samples_short() {
        let n = short.samples;
        let have = if short.effective < n as f64 {
            format!("{n} samples, {} effective", short.effective.floor())
        } else {
            format!("{n} samples")
        };
        return format!("{have}, {} needed for {}", short.needed, c.objective);
    }
    let value = c.value.map_or_else(|| "–".to_string(), |v| show(c, v));
    format!(
        "{} {value}: its bounds straddle {}",
        c.objective,
        show(c, c.limit)
    )
}

/// A load as the search states it: `5`, `12.5`, `7`.
fn load_number(load: f64) -> String {
    if load.fract() == 0.0 {
        format!("{load:.0}")
    } else {
        sig3(load)
    }
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
        t.rows.push(vec![
            Cell::plain(p.header.phase.clone()),
            Cell::plain(load_number(o.load)),
            match o.verdict {
                Verdict::Pass => Cell::marked("pass", Mark::Good),
                Verdict::Fail => Cell::marked("FAIL", Mark::Bad),
                Verdict::Indeterminate => Cell::marked("indeterminate", Mark::Bad),
            },
            client_cell(p, o),
            Cell::plain(bounds(o).join("; ")),
            Cell::plain(missed(o).join("; ")),
        ]);
    }
    t
}

/// Each objective the probe did not pass, its value against its limit; an over-saturated
/// probe says so first.
fn missed(o: &ProbeOutcome) -> Vec<String> {
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
    if o.over_saturated {
        let named = match &o.over_saturated_why {
            Some(why) => format!("over-saturated: {why}"),
            None => "over-saturated".to_string(),
        };
        missed.insert(0, named);
    }
    missed
}

/// Each objective's bounds with the samples behind them: a share's, else a percentile's.
fn bounds(o: &ProbeOutcome) -> Vec<String> {
    o.objectives
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
        .collect()
}

/// Whether the probe's client kept up, and whether its verdict holds when it did not.
fn client_cell(p: &PhaseResult, o: &ProbeOutcome) -> Cell {
    match (&p.client_trust, &o.despite_client) {
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
    }
}

/// An objective's figure in its unit: a share for `error_rate` and `goodput`, else seconds.
fn show(c: &ObjectiveCheck, v: f64) -> String {
    if c.objective == "error_rate" || c.objective == "goodput" {
        format!("{}%", sig3(v * 100.0))
    } else {
        with_unit(v, Unit::Seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::verdict::PercentileBounds;
    use crate::report::model::ProbeOutcome;

    /// A rate search whose only probe, at 5 req/s, could not decide its TTFT p95 from 10
    /// samples.
    fn undecided_search() -> Report {
        let mut report = crate::report::sample_report();
        let name = "rate/probe-1".to_string();
        report.phases[0].header.phase = name.clone();
        report.phases[0].probe = Some(ProbeOutcome {
            search: "rate".into(),
            load: 5.0,
            verdict: Verdict::Indeterminate,
            passed: false,
            over_saturated: false,
            over_saturated_why: None,
            stopped_early: false,
            objectives: vec![ObjectiveCheck {
                objective: "ttft.p95".into(),
                limit: 0.06,
                value: Some(0.0361),
                bounds: Some(PercentileBounds {
                    lo: Some(0.0272),
                    hi: None,
                    samples: 10,
                    effective_samples: 10.0,
                    verdict: Verdict::Indeterminate,
                }),
                share: None,
                verdict: Verdict::Indeterminate,
                passed: false,
            }],
            despite_client: None,
        });
        let stop = SearchStop::Indeterminate { at: 5.0 };
        report.searches = vec![SearchResult {
            phase: "rate".into(),
            load: SearchLoad::Rate,
            capacity: None,
            lower_bound: true,
            capacity_interval: [None, None],
            goodput: None,
            bracket: [None, None],
            start: None,
            stop_reason: stop.describe(SearchLoad::Rate),
            stop: Some(stop),
            probes: vec![name],
            work_sha256: None,
        }];
        report
    }

    #[test]
    fn a_search_with_no_passing_probe_claims_no_bound_and_says_why() {
        let report = undecided_search();
        assert_eq!(
            notes(&report),
            [
                "Search `rate`: no probe passed; the probe at 5 req/s could not decide \
              (10 samples, 99 needed for ttft.p95)."
            ]
        );
        let row = &searches(&report).rows[0];
        assert_eq!(row[2].text, "none: no probe passed");
        assert_eq!(row[5].text, "–");
    }

    #[test]
    fn whole_number_loads_print_as_whole_numbers() {
        let mut report = undecided_search();
        let s = &mut report.searches[0];
        (s.lower_bound, s.capacity, s.load) = (false, Some(7.0), SearchLoad::Concurrency);
        (s.capacity_interval, s.bracket) = ([Some(7.0), Some(8.0)], [Some(7.0), Some(8.0)]);
        let row = &searches(&report).rows[0];
        assert_eq!((row[2].text.as_str(), row[3].text.as_str()), ("7", "7 – 8"));
        assert_eq!(row[5].text, "7 – 8");
        assert_eq!(probes(&report).rows[0][1].text, "5");
        report.phases[0].probe.as_mut().unwrap().load = 42.426;
        assert_eq!(probes(&report).rows[0][1].text, "42.4");
    }

    #[test]
    fn an_undecided_objective_with_samples_enough_names_its_straddling_bounds() {
        let mut report = undecided_search();
        let probe = report.phases[0].probe.as_mut().unwrap();
        let bounds = probe.objectives[0].bounds.as_mut().unwrap();
        bounds.samples = 200;
        bounds.effective_samples = 15.0;
        assert_eq!(
            undecided(&probe.objectives[0]),
            "200 samples, 15 effective, 99 needed for ttft.p95"
        );
        let bounds = probe.objectives[0].bounds.as_mut().unwrap();
        bounds.effective_samples = 200.0;
        assert_eq!(
            undecided(&probe.objectives[0]),
            "ttft.p95 36.1 ms: its bounds straddle 60.0 ms"
        );
    }
}
