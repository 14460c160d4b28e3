//! A capacity-search probe's verdict: its objectives checked against its figures and, for a
//! rate probe, whether the target kept up with the arrivals.

use serde::{Deserialize, Serialize};

use crate::client::RequestRecord;
use crate::metrics::PhaseSummary;
use crate::plan::{Objective, Search, SearchLoad};
use crate::report::model::{ObjectiveCheck, ProbeOutcome, SaturationStop};

/// An open-loop probe whose completion rate falls below this share of its target rate is
/// over-saturated: the target fell behind the arrivals.
pub const SATURATED_BELOW: f64 = 0.9;

/// What a probe is judged against: its search and the load it probed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSpec {
    /// The search phase's name.
    pub search_phase: String,
    pub search: Search,
    /// The probed concurrency, or rate in req/s.
    pub load: f64,
}

/// A probe's verdict: every objective met, and (open loop) not over-saturated.
pub fn judge(
    spec: &ProbeSpec,
    summary: &PhaseSummary,
    records: &[RequestRecord],
    saturation_stop: Option<&SaturationStop>,
) -> ProbeOutcome {
    let (search, load) = (&spec.search, spec.load);
    let objectives: Vec<ObjectiveCheck> = search
        .slo
        .objectives()
        .into_iter()
        .map(|objective| {
            let value = figure(objective, summary);
            let limit = objective.limit();
            ObjectiveCheck {
                passed: value.is_some_and(|v| v <= limit),
                objective: objective.name(),
                limit,
                value,
            }
        })
        .collect();
    let rate = completion_rate(records);
    let over_saturated_why = match saturation_stop {
        Some(stop) => Some(format!("stopped after {:.1} s: {}", stop.at_s, stop.why)),
        None => (search.load == SearchLoad::Rate && rate < SATURATED_BELOW * load)
            .then(|| format!("completed {rate:.1} req/s against {load} req/s sent, under 90%")),
    };
    let over_saturated = over_saturated_why.is_some();
    ProbeOutcome {
        search: spec.search_phase.clone(),
        load,
        passed: !over_saturated && objectives.iter().all(|o| o.passed),
        over_saturated,
        over_saturated_why,
        stopped_early: saturation_stop.is_some(),
        objectives,
    }
}

/// Completions per second: `(n − 1)` over the span of the requests' end times. Below
/// capacity the ends are spaced like the sends, so this is the arrival rate; above it they
/// come at the rate the target can serve.
fn completion_rate(records: &[RequestRecord]) -> f64 {
    let ends = records.iter().map(|r| r.start_offset_ms + r.e2e_ms);
    let (first, last) = ends.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), e| {
        (lo.min(e), hi.max(e))
    });
    let span_s = (last - first) / 1e3;
    if records.len() > 1 && span_s > 0.0 {
        (records.len() - 1) as f64 / span_s
    } else {
        f64::INFINITY
    }
}

/// An objective's figure in its unit, e.g. `ttft.p99` in seconds or `error_rate` as a
/// fraction.
fn figure(objective: Objective, s: &PhaseSummary) -> Option<f64> {
    match objective {
        Objective::ErrorRate(_) => (s.requests > 0).then(|| s.errors as f64 / s.requests as f64),
        Objective::Stat(figure, stat, _) => s.distribution(figure).map(|d| stat.of(d)),
    }
}
