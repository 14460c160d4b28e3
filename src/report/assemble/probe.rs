//! A capacity-search probe's verdict: its objectives checked against its figures and, for a
//! rate probe, whether the target kept up with the arrivals.

use serde::{Deserialize, Serialize};

use crate::client::RequestRecord;
use crate::figure::{Figure, Unit};
use crate::metrics::PhaseSummary;
use crate::metrics::trust::ClientTrust;
use crate::metrics::verdict::{PROBE_LOOKS, PercentileBounds, ShareBounds, Verdict, look_tail};
use crate::plan::{Objective, Search, SearchLoad};
use crate::report::model::{DespiteClient, ObjectiveCheck, ProbeOutcome, SaturationStop};

/// An open-loop probe whose completion rate falls below this share of its target rate is
/// over-saturated: the target fell behind the arrivals.
pub const SATURATED_BELOW: f64 = 0.9;

/// A client-bound open-loop probe decides only when it sent at least this share of its
/// planned arrivals: a client that sent less offered the target less load than probed.
pub const SENT_AT_LEAST: f64 = 0.95;

/// What a probe is judged against: its search and the load it probed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSpec {
    /// The search phase's name.
    pub search_phase: String,
    pub search: Search,
    /// The probed concurrency, or rate in req/s.
    pub load: f64,
}

/// What the client did in a probe's window: its trust verdict and, open loop, the share of
/// the planned arrivals it sent.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeClient<'a> {
    pub trust: Option<&'a ClientTrust>,
    pub achieved_rate_ratio: Option<f64>,
}

/// A probe's verdict: every objective met, and (open loop) not over-saturated. A client-bound
/// probe also says whether that verdict stands whatever the client's own delay did.
pub fn judge(
    spec: &ProbeSpec,
    summary: &PhaseSummary,
    records: &[RequestRecord],
    saturation_stop: Option<&SaturationStop>,
    client: ProbeClient<'_>,
) -> ProbeOutcome {
    let (search, load) = (&spec.search, spec.load);
    let mut sent: Vec<&RequestRecord> = records.iter().collect();
    sent.sort_by(|a, b| a.start_offset_ms.total_cmp(&b.start_offset_ms));
    let checks = |shift_ms: f64| -> Vec<ObjectiveCheck> {
        search
            .objectives()
            .into_iter()
            .map(|objective| check(objective, search, summary, &sent, shift_ms))
            .collect()
    };
    let objectives = checks(0.0);
    let rate = completion_rate(records);
    let over_saturated_why = match saturation_stop {
        Some(stop) => Some(format!("stopped after {:.1} s: {}", stop.at_s, stop.why)),
        None => (search.load == SearchLoad::Rate && rate < SATURATED_BELOW * load)
            .then(|| format!("completed {rate:.1} req/s against {load} req/s sent, under 90%")),
    };
    let over_saturated = over_saturated_why.is_some();
    let verdict = probe_verdict(over_saturated, &objectives);
    let despite_client = client.trust.filter(|t| !t.is_trusted()).map(|trust| {
        let delay_ms = trust.load.event_loop_lag_max_ms;
        let sent_enough = client
            .achieved_rate_ratio
            .is_none_or(|r| r >= SENT_AT_LEAST);
        // The client's delay can only have added to a latency: a pass must survive
        // limits tightened by it, a fail limits loosened by it.
        let shift = match verdict {
            Verdict::Pass => delay_ms.map(|d| -d),
            Verdict::Fail => delay_ms,
            Verdict::Indeterminate => None,
        };
        let holds = sent_enough
            && shift.is_some_and(|s| probe_verdict(over_saturated, &checks(s)) == verdict);
        DespiteClient { delay_ms, holds }
    });
    ProbeOutcome {
        search: spec.search_phase.clone(),
        load,
        verdict,
        passed: verdict == Verdict::Pass,
        over_saturated,
        over_saturated_why,
        stopped_early: saturation_stop.is_some(),
        objectives,
        despite_client,
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

/// A time limit moved by `shift_ms` (negative to tighten it), in `figure`'s unit; other
/// limits stay.
fn shifted(figure: Figure, limit: f64, shift_ms: f64) -> f64 {
    match figure.spec().unit {
        Unit::Seconds => limit + shift_ms / 1e3,
        Unit::Millis => limit + shift_ms,
        _ => limit,
    }
}

/// One objective's check: a percentile from its bounds over the values in send order, the
/// goodput share from its bounds over whether each request met every per-request limit, any
/// other figure from its value. Every time limit is moved by `shift_ms` (0 for the verdict
/// itself).
fn check(
    objective: Objective,
    search: &Search,
    summary: &PhaseSummary,
    sent: &[&RequestRecord],
    shift_ms: f64,
) -> ObjectiveCheck {
    let tail = look_tail(PROBE_LOOKS);
    let limit = match objective {
        Objective::Stat(figure, _, limit) => shifted(figure, limit, shift_ms),
        _ => objective.limit(),
    };
    let share = match objective {
        Objective::Goodput(min) => {
            let limits: Vec<(Figure, f64)> = search
                .slo
                .request_limits()
                .into_iter()
                .map(|(figure, limit)| (figure, shifted(figure, limit, shift_ms)))
                .collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::summarize;
    use crate::metrics::trust::{self, ClientLoad};
    use crate::quantile::PercentileMethod;

    fn spec(slo: &str) -> ProbeSpec {
        let yaml = format!("{{load: rate, min: 1, max: 16, slo: {slo}, probe: {{duration: 40s}}}}");
        let value: serde_json::Value = serde_saphyr::from_str(&yaml).expect("yaml");
        ProbeSpec {
            search_phase: "s".into(),
            search: Search::deserialize(value).expect("search"),
            load: 4.0,
        }
    }

    /// 400 requests, one every 250 ms, with TTFTs of `ttft_ms`.
    fn records(ttft_ms: impl Fn(usize) -> f64) -> Vec<RequestRecord> {
        (0..400)
            .map(|i| {
                let mut r = RequestRecord {
                    start_offset_ms: i as f64 * 250.0,
                    ttft_ms: Some(ttft_ms(i)),
                    time_to_first_output_ms: Some(ttft_ms(i)),
                    e2e_ms: ttft_ms(i) + 600.0,
                    output_tokens: Some(32),
                    ..RequestRecord::default()
                };
                crate::client::derive_record_fields(&mut r);
                r
            })
            .collect()
    }

    /// A client that stalled once for `lag_ms` (so it is client-bound on its send lag).
    fn stalled(lag_ms: f64) -> ClientTrust {
        let load = ClientLoad {
            wall_s: 100.0,
            ticks: 10_000,
            event_loop_lag_mean_ms: Some(1.0),
            event_loop_lag_max_ms: Some(lag_ms),
            late_wake_share: Some(0.004),
            cpu_share: Some(0.01),
            runqueue_wait_per_s: Some(0.01),
        };
        trust::judge(load, Some(lag_ms * 0.4))
    }

    fn run(spec: &ProbeSpec, records: &[RequestRecord], client: ProbeClient) -> ProbeOutcome {
        let summary = summarize(records, PercentileMethod::default(), None);
        judge(spec, &summary, records, None, client)
    }

    #[test]
    fn a_client_bound_verdict_holds_only_where_the_clients_delay_could_not_change_it() {
        let spec = spec("{ttft: {p95: 400ms}}");
        let far_below = records(|i| 5.0 + (i % 10) as f64);
        let just_below = records(|i| 330.0 + (i % 10) as f64);
        let far_above = records(|i| 900.0 + (i % 10) as f64);
        let trust = stalled(100.0);
        let client = ProbeClient {
            trust: Some(&trust),
            achieved_rate_ratio: Some(1.0),
        };
        assert!(!trust.is_trusted());

        let pass = run(&spec, &far_below, client);
        assert_eq!(pass.verdict, Verdict::Pass);
        assert!(pass.holds_despite_client(), "{:?}", pass.despite_client);
        assert_eq!(pass.despite_client.as_ref().unwrap().delay_ms, Some(100.0));

        // 100 ms of client delay could hide a p95 above 400 ms behind 339 ms.
        let near = run(&spec, &just_below, client);
        assert_eq!(near.verdict, Verdict::Pass);
        assert!(!near.holds_despite_client());

        let fail = run(&spec, &far_above, client);
        assert_eq!(fail.verdict, Verdict::Fail);
        assert!(fail.holds_despite_client());

        // A client that sent too little offered less load than probed: nothing holds.
        let short = ProbeClient {
            trust: Some(&trust),
            achieved_rate_ratio: Some(0.8),
        };
        assert!(!run(&spec, &far_below, short).holds_despite_client());
        assert!(!run(&spec, &far_above, short).holds_despite_client());

        // A trusted client needs no such check.
        let quiet = run(&spec, &far_below, ProbeClient::default());
        assert_eq!(quiet.despite_client, None);
    }

    #[test]
    fn goodput_limits_move_with_the_clients_delay_too() {
        let spec = spec("{ttft: {max: 400ms}}, goodput: {min: 90%}");
        let trust = stalled(100.0);
        let client = ProbeClient {
            trust: Some(&trust),
            achieved_rate_ratio: None,
        };
        let far_below = run(&spec, &records(|i| 5.0 + (i % 10) as f64), client);
        assert_eq!(far_below.verdict, Verdict::Pass);
        assert!(far_below.holds_despite_client());
        let near = run(&spec, &records(|i| 330.0 + (i % 10) as f64), client);
        assert_eq!(near.verdict, Verdict::Pass);
        assert!(!near.holds_despite_client());
    }
}
