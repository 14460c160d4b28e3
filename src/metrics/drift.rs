//! Drift between a phase and its recheck, metric by metric, against tolerances.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::Tolerance;

use super::PhaseSummary;

/// Built-in tolerances when a plan sets none: medians and throughput move little between
/// healthy repeats; tails are noisier; the error rate is compared in absolute terms.
pub const DEFAULT_MEDIAN_TOLERANCE: f64 = 0.2;
pub const DEFAULT_TAIL_TOLERANCE: f64 = 0.5;
pub const DEFAULT_ERROR_RATE_TOLERANCE: f64 = 0.01;

/// Compare a recheck with its original.
pub fn recheck_pair(
    original_name: &str,
    original: &PhaseSummary,
    recheck_name: &str,
    recheck: &PhaseSummary,
    tolerance: &Tolerance,
) -> RecheckPair {
    let pick =
        |specific: Option<f64>, fallback: f64| specific.or(tolerance.default).unwrap_or(fallback);
    let relative = |metric: &str, a: Option<f64>, b: Option<f64>, tol: f64| {
        let change = match (a, b) {
            (Some(a), Some(b)) if a != 0.0 => Some((b - a) / a),
            (Some(_), Some(b)) => Some(if b == 0.0 { 0.0 } else { f64::INFINITY }),
            _ => None,
        };
        drift(metric, a, b, change, tol)
    };
    let metrics = vec![
        relative(
            "ttft.p50",
            original.ttft.map(|d| d.p50),
            recheck.ttft.map(|d| d.p50),
            pick(tolerance.ttft_p50, DEFAULT_MEDIAN_TOLERANCE),
        ),
        relative(
            "ttft.p95",
            original.ttft.map(|d| d.p95),
            recheck.ttft.map(|d| d.p95),
            pick(tolerance.ttft_p95, DEFAULT_TAIL_TOLERANCE),
        ),
        relative(
            "ttft.p99",
            original.ttft.map(|d| d.p99),
            recheck.ttft.map(|d| d.p99),
            pick(tolerance.ttft_p99, DEFAULT_TAIL_TOLERANCE),
        ),
        relative(
            "tpot.p50",
            original.tpot.map(|d| d.p50),
            recheck.tpot.map(|d| d.p50),
            pick(tolerance.tpot_p50, DEFAULT_MEDIAN_TOLERANCE),
        ),
        relative(
            "e2e.p50",
            original.e2e.map(|d| d.p50),
            recheck.e2e.map(|d| d.p50),
            pick(tolerance.e2e_p50, DEFAULT_MEDIAN_TOLERANCE),
        ),
        relative(
            "output_tokens_per_second",
            Some(original.output_tokens_per_second),
            Some(recheck.output_tokens_per_second),
            pick(tolerance.output_tokens_per_second, DEFAULT_MEDIAN_TOLERANCE),
        ),
        {
            let (a, b) = (error_rate(original), error_rate(recheck));
            drift(
                "error_rate",
                Some(a),
                Some(b),
                Some(b - a),
                tolerance.error_rate.unwrap_or(DEFAULT_ERROR_RATE_TOLERANCE),
            )
        },
    ];
    let verdict = if metrics.iter().any(|m| m.verdict == DriftVerdict::Drifted) {
        DriftVerdict::Drifted
    } else {
        DriftVerdict::Stable
    };
    RecheckPair {
        original: original_name.to_string(),
        recheck: recheck_name.to_string(),
        metrics,
        verdict,
    }
}

fn drift(
    metric: &str,
    original: Option<f64>,
    recheck: Option<f64>,
    change: Option<f64>,
    tolerance: f64,
) -> Drift {
    // A metric one side lacks (no successful request) cannot be called stable.
    let verdict = match change {
        Some(change) if change.abs() <= tolerance => DriftVerdict::Stable,
        None if original.is_none() && recheck.is_none() => DriftVerdict::Stable,
        _ => DriftVerdict::Drifted,
    };
    Drift {
        metric: metric.to_string(),
        original,
        recheck,
        change: change.filter(|c| c.is_finite()),
        tolerance,
        verdict,
    }
}

fn error_rate(summary: &PhaseSummary) -> f64 {
    if summary.requests == 0 {
        0.0
    } else {
        summary.errors as f64 / summary.requests as f64
    }
}

/// A recheck and its original, metric by metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecheckPair {
    pub original: String,
    pub recheck: String,
    pub metrics: Vec<Drift>,
    /// `drifted` when any metric is outside its tolerance.
    pub verdict: DriftVerdict,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Drift {
    /// e.g. `ttft.p99`, `output_tokens_per_second`, `error_rate`.
    pub metric: String,
    pub original: Option<f64>,
    pub recheck: Option<f64>,
    /// `(recheck − original) / original`; absolute change for `error_rate`.
    pub change: Option<f64>,
    pub tolerance: f64,
    pub verdict: DriftVerdict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DriftVerdict {
    Stable,
    Drifted,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Distribution;

    fn summary(ttft_p99_s: f64, tok_s: f64) -> PhaseSummary {
        let ttft = Distribution {
            p50: 0.15,
            p95: 0.2,
            p99: ttft_p99_s,
            min: 0.1,
            max: ttft_p99_s,
            mean: 0.16,
            samples: 100,
        };
        PhaseSummary {
            requests: 100,
            success: 100,
            ttft: Some(ttft),
            output_tokens_per_second: tok_s,
            ..PhaseSummary::default()
        }
    }

    #[test]
    fn seed_004_gateway_c4_jit_spike_reads_as_drifted() {
        // gateway-c4 p99 TTFT 14.93 s, its recheck 0.32 s.
        let pair = recheck_pair(
            "gateway-c4",
            &summary(14.927247753199074, 500.0),
            "recheck-c4",
            &summary(0.32287263218313456, 510.0),
            &Tolerance::default(),
        );
        assert_eq!(pair.verdict, DriftVerdict::Drifted);
        let p99 = pair
            .metrics
            .iter()
            .find(|m| m.metric == "ttft.p99")
            .unwrap();
        assert_eq!(p99.verdict, DriftVerdict::Drifted);
        assert!((p99.change.unwrap() + 0.978).abs() < 0.001);
        let throughput = pair
            .metrics
            .iter()
            .find(|m| m.metric == "output_tokens_per_second")
            .unwrap();
        assert_eq!(throughput.verdict, DriftVerdict::Stable);
    }

    #[test]
    fn equal_phases_are_stable_and_tolerances_apply() {
        let pair = recheck_pair(
            "a",
            &summary(0.3, 500.0),
            "b",
            &summary(0.3, 500.0),
            &Tolerance::default(),
        );
        assert_eq!(pair.verdict, DriftVerdict::Stable);
        let strict = Tolerance {
            default: Some(0.001),
            ..Tolerance::default()
        };
        let pair = recheck_pair(
            "a",
            &summary(0.3, 500.0),
            "b",
            &summary(0.3, 501.0),
            &strict,
        );
        assert_eq!(pair.verdict, DriftVerdict::Drifted);
    }

    #[test]
    fn error_rate_is_compared_in_absolute_terms() {
        let mut worse = summary(0.3, 500.0);
        worse.errors = 5;
        let pair = recheck_pair(
            "a",
            &summary(0.3, 500.0),
            "b",
            &worse,
            &Tolerance::default(),
        );
        let errors = pair
            .metrics
            .iter()
            .find(|m| m.metric == "error_rate")
            .unwrap();
        assert_eq!(errors.change, Some(0.05));
        assert_eq!(errors.verdict, DriftVerdict::Drifted);
    }
}
