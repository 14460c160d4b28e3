//! Run until stable: whether a percentile's 95% interval is tight relative to its estimate,
//! whether it moved across the window, and what a phase that ran until stable reports.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::drift::{DriftVerdict, change_interval, overall_verdict, verdict_of_interval};
use crate::plan::PercentileMethod;

/// One listed percentile at a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StableEstimate {
    /// As the plan lists it, e.g. `ttft.p99`.
    pub metric: String,
    pub samples: u64,
    /// Seconds; absent without samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<f64>,
    /// Half the 95% interval's width, seconds; absent while the sample is too small for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_width: Option<f64>,
    /// `half_width / estimate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative: Option<f64>,
    /// The interval of the relative change from the window's first half to its second half,
    /// as a recheck reads one; absent while a half is too small for an interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halves_change: Option<[f64; 2]>,
    /// `drifted` when the halves' change lies wholly outside `±within`; else `stable` when the
    /// interval is within bound; else `inconclusive`. Reports from before it read as
    /// `inconclusive`.
    #[serde(default = "not_judged")]
    pub verdict: DriftVerdict,
}

impl StableEstimate {
    pub fn within(&self, bound: f64) -> bool {
        self.relative.is_some_and(|r| r <= bound)
    }
}

fn not_judged() -> DriftVerdict {
    DriftVerdict::Inconclusive
}

/// The `q`-quantile of a sample (`in_order` as it arrived, `sorted` the same values ascending),
/// its interval's half-width, and its verdict against the relative bound `within`.
pub fn estimate(
    metric: &str,
    in_order: &[f64],
    sorted: &[f64],
    q: f64,
    method: PercentileMethod,
    within: f64,
) -> StableEstimate {
    let value = super::percentile(sorted, q, method);
    let estimate = value.is_finite().then_some(value);
    let half_width = super::percentile_interval(sorted, q).map(|i| (i.hi - i.lo) / 2.0);
    let relative = match (estimate, half_width) {
        (Some(e), Some(h)) if e > 0.0 => Some(h / e),
        _ => None,
    };
    let halves_change = halves_change(in_order, q);
    let verdict = match halves_change.map(|c| verdict_of_interval(c, within)) {
        Some(DriftVerdict::Drifted) => DriftVerdict::Drifted,
        _ if relative.is_some_and(|r| r <= within) => DriftVerdict::Stable,
        _ => DriftVerdict::Inconclusive,
    };
    StableEstimate {
        metric: metric.to_string(),
        samples: sorted.len() as u64,
        estimate,
        half_width,
        relative,
        halves_change,
        verdict,
    }
}

/// The interval of the `q`-quantile's relative change from the first half of `in_order` to
/// the second.
fn halves_change(in_order: &[f64], q: f64) -> Option<[f64; 2]> {
    let (first, second) = in_order.split_at(in_order.len() / 2);
    let interval = |half: &[f64]| {
        let mut sorted = half.to_vec();
        sorted.sort_by(f64::total_cmp);
        super::percentile_interval(&sorted, q)
    };
    change_interval(interval(first)?, interval(second)?)
}

/// A window's verdict from its estimates': drifted when any drifted, else inconclusive when any
/// is, else stable.
pub fn window_verdict(estimates: &[StableEstimate]) -> DriftVerdict {
    overall_verdict(estimates.iter().map(|e| e.verdict))
}

/// How a phase with `until` ended, and its estimates then.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UntilOutcome {
    /// `stable` (every listed interval was within bound), `max_duration`, `requests` (the
    /// phase's request bound came first) or `interrupted`.
    pub stopped_by: String,
    /// The bound on each interval's half-width, relative to its estimate.
    pub within: f64,
    /// Checks made.
    pub checks: u64,
    /// Seconds from the measured start to the check that stopped the phase (or to the last
    /// check).
    pub checked_at_s: f64,
    /// The listed percentiles at that check.
    pub estimates: Vec<StableEstimate>,
    /// `stable` when every listed percentile was, `drifted` when any moved across the window,
    /// else `inconclusive`. Reports from before it read as `inconclusive`.
    #[serde(default = "not_judged")]
    pub verdict: DriftVerdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[f64], q: f64, within: f64) -> StableEstimate {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        estimate("m", values, &sorted, q, PercentileMethod::Linear, within)
    }

    #[test]
    fn a_tight_sample_is_within_and_a_small_one_has_no_interval() {
        let sorted: Vec<f64> = (0..1000).map(|i| 1.0 + i as f64 * 1e-5).collect();
        let e = of(&sorted, 0.5, 0.05);
        assert!(e.within(0.05), "{e:?}");
        let few = of(&sorted[..50], 0.99, 0.05);
        assert_eq!(few.half_width, None);
        assert!(!few.within(0.05));
        let wide: Vec<f64> = (1..=1000).map(|i| i as f64).collect();
        assert!(!of(&wide, 0.5, 0.05).within(0.05));
    }

    #[test]
    fn stable_drifted_and_inconclusive_windows() {
        // The same spread of values in each half, interleaved: tight and steady.
        let steady: Vec<f64> = (0..1000).map(|i| 1.0 + f64::from(i % 10) * 0.001).collect();
        let e = of(&steady, 0.5, 0.05);
        assert_eq!(e.verdict, DriftVerdict::Stable, "{e:?}");
        // A latency that doubled half way: each half is tight, so the pooled interval is
        // wide, and the halves' change lies wholly beyond 5%.
        let doubled: Vec<f64> = (0..1000).map(|i| if i < 500 { 1.0 } else { 2.0 }).collect();
        let e = of(&doubled, 0.5, 0.05);
        let [lo, hi] = e.halves_change.unwrap();
        assert!(
            (lo - 1.0).abs() < 1e-9 && (hi - 1.0).abs() < 1e-9,
            "{lo} {hi}"
        );
        assert_eq!(e.verdict, DriftVerdict::Drifted);
        // Twenty noisy values: neither tight nor clearly moving.
        let noisy: Vec<f64> = (0..20)
            .map(|i| 1.0 + f64::from((i * 7) % 20) * 0.1)
            .collect();
        let e = of(&noisy, 0.5, 0.05);
        assert_eq!(e.verdict, DriftVerdict::Inconclusive, "{e:?}");
        assert_eq!(
            window_verdict(&[of(&steady, 0.5, 0.05), of(&noisy, 0.5, 0.05)]),
            DriftVerdict::Inconclusive
        );
        assert_eq!(
            window_verdict(&[of(&noisy, 0.5, 0.05), of(&doubled, 0.5, 0.05)]),
            DriftVerdict::Drifted
        );
    }
}
