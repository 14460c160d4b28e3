//! A capacity-search probe's verdict: its objectives checked against its figures and, for a
//! rate probe, whether the target kept up with the arrivals.

use serde::{Deserialize, Serialize};

use crate::client::RequestRecord;
use crate::metrics::PhaseSummary;
use crate::metrics::verdict::{PROBE_LOOKS, PercentileBounds, ShareBounds, Verdict, look_tail};
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
    let mut sent: Vec<&RequestRecord> = records.iter().collect();
    sent.sort_by(|a, b| a.start_offset_ms.total_cmp(&b.start_offset_ms));
    let objectives: Vec<ObjectiveCheck> = search
        .objectives()
        .into_iter()
        .map(|objective| check(objective, search, summary, &sent))
        .collect();
    let rate = completion_rate(records);
    let over_saturated_why = match saturation_stop {
        Some(stop) => Some(format!("stopped after {:.1} s: {}", stop.at_s, stop.why)),
        None => (search.load == SearchLoad::Rate && rate < SATURATED_BELOW * load)
            .then(|| format!("completed {rate:.1} req/s against {load} req/s sent, under 90%")),
    };
    let over_saturated = over_saturated_why.is_some();
    let verdict = probe_verdict(over_saturated, &objectives);
    ProbeOutcome {
        search: spec.search_phase.clone(),
        load,
        verdict,
        passed: verdict == Verdict::Pass,
        over_saturated,
        over_saturated_why,
        stopped_early: saturation_stop.is_some(),
        objectives,
    }
}

/// Fail when over-saturated or any objective fails; pass when every objective passes.
fn probe_verdict(over_saturated: bool, objectives: &[ObjectiveCheck]) -> Verdict {
    let verdicts = || objectives.iter().map(|o| o.verdict);
    if over_saturated || verdicts().any(|v| v == Verdict::Fail) {
        Verdict::Fail
    } else if verdicts().all(|v| v == Verdict::Pass) {
        Verdict::Pass
    } else {
        Verdict::Indeterminate
    }
}

/// One objective's check: a percentile from its bounds over the values in send order, the
/// goodput share from its bounds over whether each request met every per-request limit, any
/// other figure from its value.
fn check(
    objective: Objective,
    search: &Search,
    summary: &PhaseSummary,
    sent: &[&RequestRecord],
) -> ObjectiveCheck {
    let tail = look_tail(PROBE_LOOKS);
    let limit = objective.limit();
    let share = match objective {
        Objective::Goodput(min) => {
            let limits = search.slo.request_limits();
            let met: Vec<bool> = sent
                .iter()
                .map(|r| crate::metrics::meets_slo(r, &limits))
                .collect();
            ShareBounds::of(&met, min, tail)
        }
        Objective::Stat(..) | Objective::ErrorRate(_) => None,
    };
    let value = match share {
        Some(share) => Some(share.share),
        None => figure(objective, summary),
    };
    let bounds = match (objective, value) {
        (Objective::Stat(figure, stat, _), Some(estimate)) => stat.quantile().and_then(|q| {
            let series: Vec<f64> = sent.iter().filter_map(|r| r.value(figure)).collect();
            PercentileBounds::of(&series, q, estimate, limit, tail)
        }),
        _ => None,
    };
    let verdict = match (&bounds, &share, value) {
        (Some(bounds), _, _) => bounds.verdict,
        (None, Some(share), _) => share.verdict,
        // No request at all: nothing met the minimum.
        (None, None, _) if matches!(objective, Objective::Goodput(_)) => Verdict::Fail,
        (None, None, value) => Verdict::of(value.is_some_and(|v| v <= limit)),
    };
    ObjectiveCheck {
        objective: objective.name(),
        limit,
        value,
        bounds,
        share,
        verdict,
        passed: verdict == Verdict::Pass,
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
        // Counted from the records, in `check`.
        Objective::Goodput(_) => None,
    }
}
