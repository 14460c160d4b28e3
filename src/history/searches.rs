//! A report's capacity searches as the rows the store keeps: each search's capacity with its
//! interval, bracket and stop reason, whether it answered, and its objective as text. Each
//! search's capacity is also a series of its own: (plan, search, target, [`CAPACITY`]).

use serde::{Deserialize, Serialize};

use super::deployment::deployment_sha256;
use crate::plan::{Objective, Search, SearchLoad};
use crate::report::model::Report;
use crate::report::model::search::{SearchResult, SearchStop};

/// The figure name of a search's capacity series (no figure path is named so).
pub const CAPACITY: &str = "capacity";

/// Whether a series key names a search's capacity rather than a phase's figure.
pub fn is_capacity(figure: &str) -> bool {
    figure == CAPACITY
}

/// What a search's capacity says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchAnswer {
    /// A capacity with both ends of its interval: the plain answer, comparable by it.
    Answer,
    /// At least the capacity: the search stopped client-bound, or its bracket is open above
    /// (`max` met, the probe budget spent, interrupted).
    LowerBound,
    /// The search could not place it: a probe could not tell pass from fail by its end, or
    /// no probe passed.
    Indeterminate,
}

impl SearchAnswer {
    pub const ALL: [SearchAnswer; 3] = [
        SearchAnswer::Answer,
        SearchAnswer::LowerBound,
        SearchAnswer::Indeterminate,
    ];

    /// What `search` says, from its flags, interval and stop reason.
    pub fn of(search: &SearchResult) -> SearchAnswer {
        let closed = matches!(search.capacity_interval, [Some(_), Some(_)]);
        let indeterminate = matches!(search.stop(), Some(SearchStop::Indeterminate { .. }));
        if indeterminate || search.capacity.is_none() {
            SearchAnswer::Indeterminate
        } else if search.lower_bound || !closed {
            SearchAnswer::LowerBound
        } else {
            SearchAnswer::Answer
        }
    }

    /// As the store writes it.
    pub fn name(self) -> &'static str {
        match self {
            SearchAnswer::Answer => "answer",
            SearchAnswer::LowerBound => "lower_bound",
            SearchAnswer::Indeterminate => "indeterminate",
        }
    }

    pub fn named(name: &str) -> Option<SearchAnswer> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// How a listing marks a capacity that is not a plain answer.
    pub fn mark(self) -> Option<&'static str> {
        match self {
            SearchAnswer::Answer => None,
            SearchAnswer::LowerBound => Some("lower bound"),
            SearchAnswer::Indeterminate => Some("indeterminate"),
        }
    }
}

/// As the store writes a search's load kind.
pub fn load_name(load: SearchLoad) -> &'static str {
    match load {
        SearchLoad::Rate => "rate",
        SearchLoad::Concurrency => "concurrency",
    }
}

pub fn load_named(name: &str) -> Option<SearchLoad> {
    [SearchLoad::Rate, SearchLoad::Concurrency]
        .into_iter()
        .find(|l| load_name(*l) == name)
}

/// One capacity search of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchRow {
    /// The search phase's name; its probes are phases `NAME/probe-N`.
    pub search: String,
    pub target: String,
    /// What the probes varied: `rate` (req/s) or `concurrency`.
    pub load: SearchLoad,
    /// sha256 of the asked-for work, as a phase's: the search's settings without its name,
    /// its workload, and its target's API and model.
    pub work_sha256: Option<String>,
    /// sha256 of the deployment labels and the target's identity.
    pub deployment_sha256: String,
    /// The highest passing load; only a lower bound unless `answer` is `answer`.
    pub capacity: Option<f64>,
    /// From the highest load whose probe earned `pass` to the lowest whose probe earned
    /// `fail`; an end is absent when the bracket is open on that side.
    pub interval: [Option<f64>; 2],
    /// Highest passing and lowest failing load.
    pub bracket: [Option<f64>; 2],
    pub stop_reason: String,
    pub answer: SearchAnswer,
    /// The SLO (and goodput) objective every probe was judged on, as text.
    pub objective: String,
    /// Successful requests per second within every limit, at the capacity probe.
    pub goodput: Option<f64>,
    pub probes: i64,
    /// The run was partial (interrupted, or stopped by a fatal error).
    pub partial: bool,
}

impl SearchRow {
    /// The interval when both ends are known.
    pub fn closed_interval(&self) -> Option<(f64, f64)> {
        match self.interval {
            [Some(lo), Some(hi)] => Some((lo, hi)),
            _ => None,
        }
    }
}

/// The rows of every search in `report`, in plan order.
pub fn search_rows(report: &Report) -> Vec<SearchRow> {
    report
        .searches
        .iter()
        .map(|result| search_row(report, result))
        .collect()
}

fn search_row(report: &Report, result: &SearchResult) -> SearchRow {
    let planned = report
        .plan
        .phases
        .iter()
        .find(|p| p.name.as_deref() == Some(result.phase.as_str()));
    // The probes ran against the search's target; the plan says so too when none ran.
    let target = result
        .probes
        .first()
        .and_then(|name| report.phases.iter().find(|p| &p.header.phase == name))
        .map(|p| p.header.target.clone())
        .or_else(|| planned.and_then(|p| p.target.clone()))
        .unwrap_or_default();
    SearchRow {
        search: result.phase.clone(),
        deployment_sha256: deployment_sha256(report, &target),
        work_sha256: result.work_sha256.clone(),
        target,
        load: result.load,
        capacity: result.capacity,
        interval: result.capacity_interval,
        bracket: result.bracket,
        stop_reason: result.stop_reason.clone(),
        answer: SearchAnswer::of(result),
        objective: planned
            .and_then(|p| p.search.as_ref())
            .map(objective_text)
            .unwrap_or_default(),
        goodput: result.goodput,
        probes: result.probes.len() as i64,
        partial: report.span.partial,
    }
}

/// `ttft.p99 ≤ 2 s, error_rate ≤ 0.01, goodput ≥ 0.9`: each objective with its limit, in the
/// figure's unit (milliseconds for `…_ms` figures, else seconds).
pub fn objective_text(search: &Search) -> String {
    search
        .objectives()
        .into_iter()
        .map(|o| match o {
            Objective::Stat(..) => {
                let name = o.name();
                let unit = if name.contains("_ms") { "ms" } else { "s" };
                format!("{name} ≤ {} {unit}", short(o.limit()))
            }
            Objective::ErrorRate(limit) => format!("{} ≤ {}", o.name(), short(limit)),
            Objective::Goodput(min) => format!("{} ≥ {}", o.name(), short(min)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A limit to six decimals at most (34 ms is 0.034 s, not 0.034000000000000004).
fn short(x: f64) -> String {
    let text = format!("{x:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn result(capacity: Option<f64>, interval: [Option<f64>; 2], stop: &str) -> SearchResult {
        SearchResult {
            phase: "capacity".into(),
            load: SearchLoad::Concurrency,
            capacity,
            lower_bound: stop.starts_with("stopped: "),
            capacity_interval: interval,
            goodput: None,
            bracket: interval,
            start: None,
            stop_reason: stop.into(),
            // Read from the text, as from a report written before `stop`.
            stop: None,
            probes: Vec::new(),
            work_sha256: None,
        }
    }

    #[test]
    fn a_search_answers_only_with_a_closed_interval_and_no_early_stop() {
        let answer = result(Some(8.0), [Some(8.0), Some(9.0)], "precision reached");
        assert_eq!(SearchAnswer::of(&answer), SearchAnswer::Answer);
        let client_bound = result(
            Some(4.0),
            [Some(4.0), None],
            "stopped: client-bound at concurrency 8",
        );
        assert_eq!(SearchAnswer::of(&client_bound), SearchAnswer::LowerBound);
        let max_met = result(Some(32.0), [Some(32.0), None], "max met");
        assert_eq!(SearchAnswer::of(&max_met), SearchAnswer::LowerBound);
        let undecided = result(
            Some(4.0),
            [Some(4.0), None],
            "stopped: indeterminate at concurrency 8",
        );
        assert_eq!(SearchAnswer::of(&undecided), SearchAnswer::Indeterminate);
        let min_failed = result(None, [None, Some(1.0)], "min failed");
        assert_eq!(SearchAnswer::of(&min_failed), SearchAnswer::Indeterminate);
        // A report's `stop` decides, whatever its text says.
        let stated = SearchResult {
            stop: Some(SearchStop::Indeterminate { at: 8.0 }),
            ..result(Some(4.0), [Some(4.0), None], "stopped early")
        };
        assert_eq!(SearchAnswer::of(&stated), SearchAnswer::Indeterminate);
        for a in SearchAnswer::ALL {
            assert_eq!(SearchAnswer::named(a.name()), Some(a));
        }
        assert_eq!(
            load_named(load_name(SearchLoad::Rate)),
            Some(SearchLoad::Rate)
        );
    }

    #[test]
    fn the_objective_reads_as_its_limits() {
        let yaml = "{load: rate, min: 1, max: 8, slo: {ttft: {p99: 2s}, tpot: {max: 50ms}, \
            error_rate: 1%}, goodput: {min: 90%}, probe: {duration: 1s}}";
        let value: Value = serde_saphyr::from_str(yaml).unwrap();
        let search = Search::deserialize(value).unwrap();
        let text = objective_text(&search);
        assert!(text.contains("ttft.p99 ≤ 2 s"), "{text}");
        assert!(text.contains("error_rate ≤ 0.01"), "{text}");
        assert!(text.contains("goodput ≥ 0.9"), "{text}");
        // With goodput the `max` limits are per-request limits, not objectives.
        assert!(!text.contains("tpot.max"), "{text}");
    }
}
