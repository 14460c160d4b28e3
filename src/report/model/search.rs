//! What a capacity search reports: each probe's outcome (on its phase) and the search's result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::metrics::verdict::Verdict;
use crate::plan::SearchLoad;

/// A probe phase's verdict against its search's objectives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeOutcome {
    /// The search phase this probe belongs to.
    pub search: String,
    /// The probed concurrency, or rate in req/s.
    pub load: f64,
    /// `pass` when every objective's interval lies within its limit (and, open loop, the
    /// target kept up), `fail` when one lies beyond it, else `indeterminate`.
    pub verdict: Verdict,
    /// `verdict` is `pass`.
    pub passed: bool,
    /// Open loop: requests completed at under 90% of the target rate (`n − 1` over the span
    /// of their end times), so the target fell behind the arrivals; a failure whatever the
    /// latencies.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub over_saturated: bool,
    /// Why it was named over-saturated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_saturated_why: Option<String>,
    /// Stopped before its planned end because it was over-saturated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped_early: bool,
    pub objectives: Vec<ObjectiveCheck>,
    /// A client-bound probe: whether its verdict stands whatever the client's delay did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub despite_client: Option<DespiteClient>,
}

impl ProbeOutcome {
    /// The probe was client-bound but its verdict would be the same without the client's
    /// delay, so it may decide the search.
    pub fn holds_despite_client(&self) -> bool {
        self.despite_client.as_ref().is_some_and(|d| d.holds)
    }
}

/// A client-bound probe's verdict held against the client's own delay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DespiteClient {
    /// The client's largest delay in the window: its event loop's worst lateness,
    /// milliseconds.
    pub delay_ms: Option<f64>,
    /// The verdict is the same with every time limit tightened (a pass) or loosened (a fail)
    /// by that delay, and an open loop sent at least 95% of its planned arrivals.
    pub holds: bool,
}

/// One objective of a probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ObjectiveCheck {
    /// e.g. `ttft.p99` (seconds), `error_rate` or `goodput` (fractions).
    pub objective: String,
    pub limit: f64,
    /// `None` when the probe produced no such figure (no successful request): a failure.
    pub value: Option<f64>,
    /// A percentile's bounds (each side missing with chance at most 2.5% over the probe's
    /// looks) and the samples they rest on; absent for other objectives, judged on their
    /// value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<crate::metrics::verdict::PercentileBounds>,
    /// `goodput`: the share of requests within every per-request limit, its exact binomial
    /// bounds at the effective sample size (each side missing with chance at most 2.5% over
    /// the probe's looks) and the samples they rest on; `value` is the share, `limit` the
    /// minimum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<crate::metrics::verdict::ShareBounds>,
    pub verdict: Verdict,
    /// `verdict` is `pass`.
    pub passed: bool,
}

/// An objective's probe held too few samples for it to pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplesShort {
    pub samples: u64,
    /// What the verdict rested on (at most `samples`).
    pub effective: f64,
    /// The fewest effective samples with which it can pass.
    pub needed: u64,
}

impl ObjectiveCheck {
    /// A percentile or goodput objective whose probe held fewer effective samples than it
    /// needs to pass; `None` for one with enough, or judged on its value.
    pub fn samples_short(&self) -> Option<SamplesShort> {
        let quantile = match self.objective.parse::<super::figure_path::FigurePath>() {
            Ok(super::figure_path::FigurePath::Dist(_, stat)) => stat.quantile(),
            _ => self.share.map(|_| self.limit),
        }?;
        let (samples, effective) = self
            .bounds
            .map(|b| (b.samples, b.effective_samples))
            .or(self.share.map(|b| (b.samples, b.effective_samples)))?;
        let needed = crate::probe_samples::samples_to_pass(quantile);
        ((effective.floor() as u64) < needed).then_some(SamplesShort {
            samples,
            effective,
            needed,
        })
    }
}

/// A capacity search's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchResult {
    /// The search phase's name; its probes are `NAME/probe-1`, `NAME/probe-2`, ….
    pub phase: String,
    pub load: SearchLoad,
    /// The highest load that passed; `None` when `min` failed.
    pub capacity: Option<f64>,
    /// The search stopped before it could place the capacity (a probe client-bound twice, or
    /// indeterminate): `capacity` is only a lower bound.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lower_bound: bool,
    /// Where the capacity lies: from the highest load whose probe earned `pass` to the lowest
    /// whose probe earned `fail`, each a verdict from the probe's bounds; an end is absent
    /// when the bracket is open on that side.
    #[serde(default)]
    pub capacity_interval: [Option<f64>; 2],
    /// At the capacity probe: successful requests per second that met every latency
    /// objective's limit as a per-request bound.
    pub goodput: Option<f64>,
    /// Highest passing and lowest failing load.
    pub bracket: [Option<f64>; 2],
    /// Why the first probe was above `min`: `started at 5 req/s: below it a 20s probe holds
    /// fewer than the 99 samples a p95 needs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// Why it stopped, for people: `precision reached`, `max met`, `min failed`,
    /// `probe budget spent`, `interrupted`, `stopped: client-bound at …` or
    /// `stopped: indeterminate at …` (`stop` says it for scripts).
    pub stop_reason: String,
    /// Why it stopped, for scripts. Absent from reports written before it was added: read
    /// it with [`SearchResult::stop`], which falls back to `stop_reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<SearchStop>,
    pub probes: Vec<String>,
    /// sha256 of the work the search asked for, hashed as a phase's `work_sha256` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_sha256: Option<String>,
}

impl SearchResult {
    /// Why the search stopped: `stop`, else read from an older report's `stop_reason`.
    pub fn stop(&self) -> Option<SearchStop> {
        self.stop
            .or_else(|| SearchStop::from_text(&self.stop_reason))
    }
}

/// Why a capacity search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SearchStop {
    /// The bracket is within `precision` (or one apart, for concurrency).
    PrecisionReached,
    /// `max` passed: the capacity is at least `max`.
    MaxMet,
    /// `min` failed: the capacity is below the searched range.
    MinFailed,
    /// `max_probes` ran out first.
    ProbeBudgetSpent,
    /// The run was interrupted.
    Interrupted,
    /// A probe could not tell pass from fail by its maximum duration, at load `at`.
    Indeterminate { at: f64 },
    /// A probe was client-bound twice at load `at`: its latencies measure the client.
    ClientBound { at: f64 },
    /// The target went down during the probe at load `at`: the run stopped there.
    TargetDown { at: f64 },
}

impl SearchStop {
    /// The search could not answer: its capacity is only a lower bound.
    pub fn is_inconclusive(self) -> bool {
        matches!(
            self,
            SearchStop::Indeterminate { .. } | SearchStop::ClientBound { .. }
        )
    }

    /// As the report states it, e.g. `stopped: client-bound at 16 req/s`.
    pub fn describe(self, kind: SearchLoad) -> String {
        let at = |load: f64| match kind {
            SearchLoad::Rate => {
                let text = format!("{load:.3}");
                format!("{} req/s", text.trim_end_matches('0').trim_end_matches('.'))
            }
            SearchLoad::Concurrency => format!("concurrency {load}"),
        };
        match self {
            SearchStop::PrecisionReached => "precision reached".into(),
            SearchStop::MaxMet => "max met".into(),
            SearchStop::MinFailed => "min failed".into(),
            SearchStop::ProbeBudgetSpent => "probe budget spent".into(),
            SearchStop::Interrupted => "interrupted".into(),
            SearchStop::Indeterminate { at: load } => {
                format!("stopped: indeterminate at {}", at(load))
            }
            SearchStop::ClientBound { at: load } => {
                format!("stopped: client-bound at {}", at(load))
            }
            SearchStop::TargetDown { at: load } => {
                format!("stopped: target down at {}", at(load))
            }
        }
    }

    /// What [`SearchStop::describe`] wrote, read back; `None` for any other text.
    pub fn from_text(text: &str) -> Option<SearchStop> {
        let load = |rest: &str| {
            let number = rest
                .strip_suffix(" req/s")
                .or_else(|| rest.strip_prefix("concurrency "))?;
            number.parse::<f64>().ok()
        };
        Some(match text {
            "precision reached" => SearchStop::PrecisionReached,
            "max met" => SearchStop::MaxMet,
            "min failed" => SearchStop::MinFailed,
            "probe budget spent" => SearchStop::ProbeBudgetSpent,
            "interrupted" => SearchStop::Interrupted,
            _ => {
                if let Some(rest) = text.strip_prefix("stopped: indeterminate at ") {
                    SearchStop::Indeterminate { at: load(rest)? }
                } else if let Some(rest) = text.strip_prefix("stopped: target down at ") {
                    SearchStop::TargetDown { at: load(rest)? }
                } else {
                    let rest = text.strip_prefix("stopped: client-bound at ")?;
                    SearchStop::ClientBound { at: load(rest)? }
                }
            }
        })
    }
}

/// What the two capacities say together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityVerdict {
    /// The new interval lies wholly above the base's.
    Higher,
    /// Wholly below.
    Lower,
    /// The intervals overlap: no change can be told from these probes.
    Overlapping,
    /// A side has no closed interval (an open bracket, no passing probe) or is only a lower
    /// bound (its search stopped client-bound or indeterminate).
    NotComparable,
}

/// Two closed intervals `[lo, hi]`: higher or lower only when they do not overlap (the
/// history's capacity trends call a change by the same rule).
pub fn by_intervals(base: [f64; 2], new: [f64; 2]) -> CapacityVerdict {
    if new[0] > base[1] {
        CapacityVerdict::Higher
    } else if new[1] < base[0] {
        CapacityVerdict::Lower
    } else {
        CapacityVerdict::Overlapping
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_reads_back_from_its_text_and_serializes_with_its_kind() {
        let every = [
            SearchStop::PrecisionReached,
            SearchStop::MaxMet,
            SearchStop::MinFailed,
            SearchStop::ProbeBudgetSpent,
            SearchStop::Interrupted,
            SearchStop::Indeterminate { at: 12.5 },
            SearchStop::ClientBound { at: 16.0 },
            SearchStop::TargetDown { at: 4.0 },
        ];
        for stop in every {
            for kind in [SearchLoad::Rate, SearchLoad::Concurrency] {
                let text = stop.describe(kind);
                assert_eq!(SearchStop::from_text(&text), Some(stop), "{text}");
            }
        }
        assert_eq!(
            SearchStop::ClientBound { at: 16.0 }.describe(SearchLoad::Rate),
            "stopped: client-bound at 16 req/s"
        );
        assert_eq!(
            SearchStop::from_text("stopped: client-bound at lunch"),
            None
        );
        assert_eq!(SearchStop::from_text("killed"), None);
        let json = serde_json::to_value(SearchStop::Indeterminate { at: 8.0 }).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"kind": "indeterminate", "at": 8.0})
        );
        assert!(SearchStop::ClientBound { at: 1.0 }.is_inconclusive());
        assert!(!SearchStop::MaxMet.is_inconclusive());
        assert_eq!(
            SearchStop::TargetDown { at: 4.0 }.describe(SearchLoad::Concurrency),
            "stopped: target down at concurrency 4"
        );
    }
}
