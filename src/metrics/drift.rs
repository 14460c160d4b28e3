//! Drift between a phase and its recheck, metric by metric, against tolerances.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::{StableMetric, Tolerance};

use super::{Interval, PhaseSummary, Stat};
use crate::figure::Figure;

/// Built-in tolerances when a plan sets none: medians and throughput move little between
/// healthy repeats; tails are noisier; the error rate is compared in absolute terms.
pub const DEFAULT_MEDIAN_TOLERANCE: f64 = 0.2;
pub const DEFAULT_TAIL_TOLERANCE: f64 = 0.5;
pub const DEFAULT_ERROR_RATE_TOLERANCE: f64 = 0.01;

/// The percentiles every recheck compares, tolerance or not.
const CHECKED: [(Figure, Stat); 5] = [
    (Figure::Ttft, Stat::P50),
    (Figure::Ttft, Stat::P95),
    (Figure::Ttft, Stat::P99),
    (Figure::Tpot, Stat::P50),
    (Figure::E2e, Stat::P50),
];

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
    let percentile = |figure: Figure, stat: Stat, tol| {
        let side = |s: &PhaseSummary| {
            s.distribution(figure).map(|d| Side {
                value: stat.of(d),
                interval: d.ci95.map(|ci| ci.of(stat)),
            })
        };
        let name = format!("{}.{}", figure.name(), stat.name());
        percentile_drift(&name, side(original), side(recheck), tol)
    };
    let median = DEFAULT_MEDIAN_TOLERANCE;
    let tail = DEFAULT_TAIL_TOLERANCE;
    // Checked always, and any other percentile the plan gives a tolerance.
    let mut checked: Vec<StableMetric> = CHECKED
        .iter()
        .map(|&(figure, percentile)| StableMetric { figure, percentile })
        .collect();
    let named = tolerance.percentiles.keys();
    checked.extend(named.filter(|m| !CHECKED.contains(&(m.figure, m.percentile))));
    let mut metrics: Vec<Drift> = checked
        .iter()
        .map(|&m| {
            let fallback = if m.percentile == Stat::P50 {
                median
            } else {
                tail
            };
            let tol = pick(tolerance.percentiles.get(&m).copied(), fallback);
            percentile(m.figure, m.percentile, tol)
        })
        .collect();
    metrics.extend([
        {
            let (a, b) = (
                original.output_tokens_per_second,
                recheck.output_tokens_per_second,
            );
            let tol = pick(tolerance.output_tokens_per_second, DEFAULT_MEDIAN_TOLERANCE);
            drift(
                "output_tokens_per_second",
                Some(a),
                Some(b),
                relative(Some(a), Some(b)),
                tol,
            )
        },
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
    ]);
    let verdict = overall_verdict(metrics.iter().map(|m| m.verdict));
    RecheckPair {
        original: original_name.to_string(),
        recheck: recheck_name.to_string(),
        metrics,
        verdict,
    }
}

/// Drifted when any metric drifted; else inconclusive when any is; else stable.
pub fn overall_verdict(verdicts: impl Iterator<Item = DriftVerdict> + Clone) -> DriftVerdict {
    let any = |v| verdicts.clone().any(|m| m == v);
    if any(DriftVerdict::Drifted) {
        DriftVerdict::Drifted
    } else if any(DriftVerdict::Inconclusive) {
        DriftVerdict::Inconclusive
    } else {
        DriftVerdict::Stable
    }
}

/// One side of a percentile: its figure and, when the report has intervals, its 95% interval
/// (`None` inside when the sample is too small for one).
struct Side {
    value: f64,
    interval: Option<Option<Interval>>,
}

fn relative(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a != 0.0 => Some((b - a) / a),
        (Some(_), Some(b)) => Some(if b == 0.0 { 0.0 } else { f64::INFINITY }),
        _ => None,
    }
}

/// A percentile's drift, judged from the interval of its relative change when both sides
/// have one: `stable` when that interval lies within the tolerance, `drifted` when it lies
/// wholly outside, `inconclusive` otherwise (and when a side has too few samples for an
/// interval). Summaries without intervals (older reports) are judged on tolerance alone.
fn percentile_drift(
    metric: &str,
    original: Option<Side>,
    recheck: Option<Side>,
    tolerance: f64,
) -> Drift {
    let (a, b) = (
        original.as_ref().map(|s| s.value),
        recheck.as_ref().map(|s| s.value),
    );
    let mut d = drift(metric, a, b, relative(a, b), tolerance);
    let (Some(o), Some(r)) = (original, recheck) else {
        return d;
    };
    let (Some(oi), Some(ri)) = (o.interval, r.interval) else {
        return d;
    };
    d.original_interval = oi.map(|i| [i.lo, i.hi]);
    d.recheck_interval = ri.map(|i| [i.lo, i.hi]);
    d.change_interval = oi.zip(ri).and_then(|(o, r)| change_interval(o, r));
    d.verdict = match d.change_interval {
        Some(interval) => verdict_of_interval(interval, tolerance),
        None => DriftVerdict::Inconclusive,
    };
    d
}

/// The interval of `(recheck − original) / original` the two sides' 95% intervals allow: from
/// the recheck's lowest over the original's highest to the recheck's highest over the
/// original's lowest. It covers the true change whenever both side intervals cover theirs
/// (at least 0.95² ≈ 90% for independent samples). `None` when the original's can reach zero.
pub fn change_interval(original: Interval, recheck: Interval) -> Option<[f64; 2]> {
    (original.lo > 0.0).then(|| {
        [
            recheck.lo / original.hi - 1.0,
            recheck.hi / original.lo - 1.0,
        ]
    })
}

/// `stable` when `[lo, hi]` lies within `±tolerance`, `drifted` when wholly outside it,
/// `inconclusive` when it straddles a bound.
pub fn verdict_of_interval([lo, hi]: [f64; 2], tolerance: f64) -> DriftVerdict {
    if lo >= -tolerance && hi <= tolerance {
        DriftVerdict::Stable
    } else if lo > tolerance || hi < -tolerance {
        DriftVerdict::Drifted
    } else {
        DriftVerdict::Inconclusive
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
        original_interval: None,
        recheck_interval: None,
        change_interval: None,
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
    /// `drifted` when any metric drifted, else `inconclusive` when any was inconclusive,
    /// else `stable`.
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
    /// Percentiles: the 95% order-statistic interval on each side, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_interval: Option<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recheck_interval: Option<[f64; 2]>,
    /// Percentiles: the interval of the relative change the two sides' intervals allow; the
    /// verdict is read from it when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_interval: Option<[f64; 2]>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DriftVerdict {
    /// Within tolerance: for a percentile with intervals, the whole interval of its change is.
    Stable,
    /// Beyond tolerance: for a percentile with intervals, the whole interval of its change is.
    Drifted,
    /// The samples cannot tell: the interval of the change straddles a tolerance bound, or a
    /// side has too few samples for an interval.
    Inconclusive,
}

impl DriftVerdict {
    /// As the report writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftVerdict::Stable => "stable",
            DriftVerdict::Drifted => "drifted",
            DriftVerdict::Inconclusive => "inconclusive",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Distribution, Distributions};

    fn summary(ttft_p99_s: f64, tok_s: f64) -> PhaseSummary {
        let ttft = Distribution {
            p50: 0.15,
            p95: 0.2,
            p99: ttft_p99_s,
            min: 0.1,
            max: ttft_p99_s,
            mean: 0.16,
            samples: 100,
            ci95: None,
        };
        PhaseSummary {
            requests: 100,
            success: 100,
            figures: Distributions::default().with(Figure::Ttft, ttft),
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
    fn a_percentile_given_a_tolerance_is_checked_too() {
        let with_tpot_p99 = |p99: f64| {
            let mut s = summary(0.3, 500.0);
            let tpot = Distribution {
                p50: 0.01,
                p95: 0.012,
                p99,
                ..Distribution::default()
            };
            s.figures.set(Figure::Tpot, Some(tpot));
            s
        };
        let (original, recheck) = (with_tpot_p99(0.020), with_tpot_p99(0.026));
        let by_default = recheck_pair("a", &original, "b", &recheck, &Tolerance::default());
        assert!(by_default.metrics.iter().all(|m| m.metric != "tpot.p99"));
        assert_eq!(by_default.verdict, DriftVerdict::Stable);

        let tpot_p99 = StableMetric {
            figure: Figure::Tpot,
            percentile: Stat::P99,
        };
        let mut tolerance = Tolerance::default();
        tolerance.percentiles.insert(tpot_p99, 0.1);
        let named = recheck_pair("a", &original, "b", &recheck, &tolerance);
        // +30% against a 10% tolerance, no intervals to make it inconclusive.
        assert_eq!(verdict_of(&named, "tpot.p99"), DriftVerdict::Drifted);
        assert_eq!(named.verdict, DriftVerdict::Drifted);
        // The percentiles checked by default come first, in their order.
        let names: Vec<&str> = named.metrics.iter().map(|m| m.metric.as_str()).collect();
        assert_eq!(
            names[..6],
            [
                "ttft.p50", "ttft.p95", "ttft.p99", "tpot.p50", "e2e.p50", "tpot.p99"
            ]
        );
    }

    /// A summary whose TTFT comes from `values` (seconds), intervals included.
    fn summary_of(values: &[f64]) -> PhaseSummary {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mut d =
            crate::metrics::distribution(&sorted, crate::plan::PercentileMethod::Linear).unwrap();
        d.ci95 = Some(crate::metrics::percentile_intervals(&sorted));
        PhaseSummary {
            requests: values.len() as u64,
            success: values.len() as u64,
            figures: Distributions::default().with(Figure::Ttft, d),
            output_tokens_per_second: 100.0,
            ..PhaseSummary::default()
        }
    }

    fn verdict_of(pair: &RecheckPair, metric: &str) -> DriftVerdict {
        pair.metrics
            .iter()
            .find(|m| m.metric == metric)
            .unwrap()
            .verdict
    }

    #[test]
    fn intervals_decide_between_drifted_and_inconclusive() {
        let steady: Vec<f64> = (0..400).map(|i| 0.1 + f64::from(i % 40) * 0.001).collect();
        // Every value 50% higher: far beyond tolerance, and the intervals are apart.
        let slower: Vec<f64> = steady.iter().map(|v| v * 1.5).collect();
        let pair = recheck_pair(
            "a",
            &summary_of(&steady),
            "b",
            &summary_of(&slower),
            &Tolerance::default(),
        );
        assert_eq!(verdict_of(&pair, "ttft.p50"), DriftVerdict::Drifted);
        assert_eq!(pair.verdict, DriftVerdict::Drifted);

        // Ten samples, wide spread: the median moved 30% (beyond the 20% tolerance), but the
        // intervals overlap, and p99 has no interval at all.
        let a = [0.10, 0.11, 0.12, 0.13, 0.14, 0.15, 0.16, 0.17, 0.18, 0.30];
        let b = [0.10, 0.12, 0.14, 0.16, 0.18, 0.19, 0.21, 0.23, 0.25, 0.60];
        let pair = recheck_pair(
            "a",
            &summary_of(&a),
            "b",
            &summary_of(&b),
            &Tolerance::default(),
        );
        assert_eq!(verdict_of(&pair, "ttft.p50"), DriftVerdict::Inconclusive);
        assert_eq!(verdict_of(&pair, "ttft.p99"), DriftVerdict::Inconclusive);
        assert_eq!(pair.verdict, DriftVerdict::Inconclusive);

        // The same ten values twice: no change, yet the interval of the change is too wide
        // to call stable.
        let pair = recheck_pair(
            "a",
            &summary_of(&a),
            "b",
            &summary_of(&a),
            &Tolerance::default(),
        );
        assert_eq!(verdict_of(&pair, "ttft.p50"), DriftVerdict::Inconclusive);

        // A steady sample against a copy 5% slower: the change's interval lies inside ±20%.
        let a_bit_slower: Vec<f64> = steady.iter().map(|v| v * 1.05).collect();
        let pair = recheck_pair(
            "a",
            &summary_of(&steady),
            "b",
            &summary_of(&a_bit_slower),
            &Tolerance::default(),
        );
        let p50 = pair
            .metrics
            .iter()
            .find(|m| m.metric == "ttft.p50")
            .unwrap();
        let [lo, hi] = p50.change_interval.unwrap();
        assert!(
            lo <= 0.05 && 0.05 <= hi && lo > -0.2 && hi < 0.2,
            "{lo} {hi}"
        );
        assert_eq!(p50.verdict, DriftVerdict::Stable);
    }

    #[test]
    fn the_change_interval_decides_all_three() {
        let interval = |lo, hi| Interval {
            lo,
            hi,
            rank_lo: 1,
            rank_hi: 2,
            coverage: 0.95,
        };
        let [lo, hi] = change_interval(interval(1.0, 2.0), interval(3.0, 4.0)).unwrap();
        assert!((lo - 0.5).abs() < 1e-12 && (hi - 3.0).abs() < 1e-12);
        assert_eq!(
            change_interval(interval(0.0, 1.0), interval(1.0, 2.0)),
            None
        );
        assert_eq!(verdict_of_interval([-0.1, 0.15], 0.2), DriftVerdict::Stable);
        assert_eq!(verdict_of_interval([0.25, 0.6], 0.2), DriftVerdict::Drifted);
        assert_eq!(
            verdict_of_interval([-0.9, -0.3], 0.2),
            DriftVerdict::Drifted
        );
        assert_eq!(
            verdict_of_interval([0.1, 0.3], 0.2),
            DriftVerdict::Inconclusive
        );
        assert_eq!(
            verdict_of_interval([-0.5, 0.5], 0.2),
            DriftVerdict::Inconclusive
        );
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
