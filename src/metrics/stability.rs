//! Run until stable: whether a percentile's 95% interval is tight relative to its estimate,
//! and what a phase that ran until stable reports.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
}

impl StableEstimate {
    pub fn within(&self, bound: f64) -> bool {
        self.relative.is_some_and(|r| r <= bound)
    }
}

/// The `q`-quantile of an ascending sample, with its interval's half-width.
pub fn estimate(metric: &str, sorted: &[f64], q: f64, method: PercentileMethod) -> StableEstimate {
    let value = super::percentile(sorted, q, method);
    let estimate = value.is_finite().then_some(value);
    let half_width = super::percentile_interval(sorted, q).map(|i| (i.hi - i.lo) / 2.0);
    let relative = match (estimate, half_width) {
        (Some(e), Some(h)) if e > 0.0 => Some(h / e),
        _ => None,
    };
    StableEstimate {
        metric: metric.to_string(),
        samples: sorted.len() as u64,
        estimate,
        half_width,
        relative,
    }
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tight_sample_is_within_and_a_small_one_has_no_interval() {
        let sorted: Vec<f64> = (0..1000).map(|i| 1.0 + i as f64 * 1e-5).collect();
        let e = estimate("ttft.p50", &sorted, 0.5, PercentileMethod::Linear);
        assert!(e.within(0.05), "{e:?}");
        let few = estimate("ttft.p99", &sorted[..50], 0.99, PercentileMethod::Linear);
        assert_eq!(few.half_width, None);
        assert!(!few.within(0.05));
        let wide: Vec<f64> = (1..=1000).map(|i| i as f64).collect();
        assert!(!estimate("e2e.p50", &wide, 0.5, PercentileMethod::Linear).within(0.05));
    }
}
