//! Three-valued verdicts of a percentile against a limit (`pass`, `fail`, `indeterminate`),
//! from an interval that holds for autocorrelated latencies.
//!
//! Latencies under load come in runs (a queue that builds slows every request behind it), so
//! `n` of them carry less information than `n` independent ones. The interval of the
//! `q`-quantile rests on how many values fall at or below it, whose variance is inflated by
//! that autocorrelation; the inflation is measured by batch means of the indicator
//! `x ≤ estimate` over the values in time order, and the distribution-free order-statistic
//! bounds are taken at the effective sample size `n / inflation`.
//!
//! A sequential probe looks at its data several times; each look's bounds are taken at
//! `tail / looks` (Bonferroni), so the chance of a wrong verdict over all looks stays within
//! the stated tail.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::interval::{binomial_cdf, bound_ranks};

pub use crate::probe_samples::{PROBE_LOOKS, VERDICT_TAIL, Verdict, look_tail, samples_to_pass};

/// The verdict when `within` (effective) values met the limit, against the bound ranks
/// `(l, u)` of the share asked for: `Pass` at or above the upper rank, `Fail` below the lower
/// one.
fn of_ranks(within: f64, (l, u): (Option<u64>, Option<u64>)) -> Verdict {
    if u.is_some_and(|u| within >= u as f64) {
        Verdict::Pass
    } else if l.is_some_and(|l| within < l as f64) {
        Verdict::Fail
    } else {
        Verdict::Indeterminate
    }
}

/// How much autocorrelation inflates the variance of `series`' mean, by batch means:
/// `√n` batches of consecutive values; the variance of their means times the batch length,
/// over the values' own variance. `None` below 16 values or for a constant series.
pub fn batch_means_inflation(series: &[f64]) -> Option<f64> {
    let n = series.len();
    if n < 16 {
        return None;
    }
    let batches = (n as f64).sqrt().floor() as usize;
    let length = n / batches;
    let used = &series[..batches * length];
    let mean = used.iter().sum::<f64>() / used.len() as f64;
    let variance = used.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (used.len() - 1) as f64;
    if variance <= 0.0 {
        return None;
    }
    let means = used
        .chunks(length)
        .map(|batch| batch.iter().sum::<f64>() / length as f64);
    let between = means.map(|m| (m - mean).powi(2)).sum::<f64>() / (batches - 1) as f64;
    Some(length as f64 * between / variance)
}

/// A percentile's bounds and verdict from values in time order.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PercentileBounds {
    /// Lower bound; absent when the sample is too small to bound that side.
    pub lo: Option<f64>,
    /// Upper bound; absent when the sample is too small to bound that side.
    pub hi: Option<f64>,
    pub samples: u64,
    /// `samples` over the autocorrelation's variance inflation (at least 1) of the share
    /// within the limit: what the verdict rests on.
    pub effective_samples: f64,
    pub verdict: Verdict,
}

impl PercentileBounds {
    /// The `q`-quantile of `series` (values in time order), whose estimate is `estimate`,
    /// against `limit` (it must be at most it), each side missing with chance at most `tail`.
    ///
    /// The verdict asks what the objective asks, whether a share `q` of values lie within the
    /// limit: it counts them, at the effective sample size of that share. The bounds are the
    /// quantile's own, at the effective sample size of the share within the estimate.
    pub fn of(
        series: &[f64],
        q: f64,
        estimate: f64,
        limit: f64,
        tail: f64,
    ) -> Option<PercentileBounds> {
        let n = series.len();
        if n == 0 {
            return None;
        }
        let mut sorted = series.to_vec();
        sorted.sort_by(f64::total_cmp);
        let (k, scale) = effective(series, estimate);
        let (l, u) = bound_ranks(k, q, tail);
        // A rank among the effective values stands for the same share of the whole sample.
        let at = |rank: f64| sorted[(rank as usize).clamp(1, n) - 1];
        let (k_limit, scale_limit) = effective(series, limit);
        let within = series.iter().filter(|x| **x <= limit).count() as f64 / scale_limit;
        let verdict = of_ranks(within, bound_ranks(k_limit, q, tail));
        Some(PercentileBounds {
            lo: l.map(|l| at((l as f64 * scale).floor())),
            hi: u.map(|u| at((u as f64 * scale).ceil())),
            samples: n as u64,
            effective_samples: n as f64 / scale_limit,
            verdict,
        })
    }
}

/// The share of requests that met every per-request limit, its bounds and its verdict against
/// a minimum share, at the effective sample size of the within-limit indicator.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShareBounds {
    /// The share met, over all requests.
    pub share: f64,
    /// Clopper–Pearson lower bound at the effective sample size.
    pub lo: f64,
    /// Clopper–Pearson upper bound at the effective sample size.
    pub hi: f64,
    pub samples: u64,
    /// `samples` over the autocorrelation's variance inflation (at least 1) of the indicator.
    pub effective_samples: f64,
    pub verdict: Verdict,
}

impl ShareBounds {
    /// `met` in time order (whether each request met every limit) against the minimum share
    /// `min`, each side missing with chance at most `tail`: `pass` when the share is above
    /// `min` beyond doubt, `fail` when below it, else `indeterminate`. The same exact binomial
    /// test a percentile objective passes, asked of the share directly.
    pub fn of(met: &[bool], min: f64, tail: f64) -> Option<ShareBounds> {
        let n = met.len();
        if n == 0 {
            return None;
        }
        let series: Vec<f64> = met.iter().map(|m| f64::from(u8::from(*m))).collect();
        let within = series.iter().sum::<f64>();
        let inflation = batch_means_inflation(&series).unwrap_or(1.0).max(1.0);
        let k = (n as f64 / inflation).floor().max(1.0) as u64;
        let scale = n as f64 / k as f64;
        let within_effective = within / scale;
        let verdict = of_ranks(within_effective, bound_ranks(k, min, tail));
        let x = within_effective.round() as u64;
        Some(ShareBounds {
            share: within / n as f64,
            lo: clopper_pearson_lower(k, x, tail),
            hi: 1.0 - clopper_pearson_lower(k, k - x.min(k), tail),
            samples: n as u64,
            effective_samples: k as f64,
            verdict,
        })
    }
}

/// The `p` with `P(B ≥ x) = tail` for B ~ Binomial(n, p): the exact lower bound of a share
/// after `x` of `n`; 0 when `x` is 0.
fn clopper_pearson_lower(n: u64, x: u64, tail: f64) -> f64 {
    if x == 0 {
        return 0.0;
    }
    // P(B ≥ x) = 1 − F(x − 1) rises with p: bisect.
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        let p = mid.clamp(1e-12, 1.0 - 1e-12);
        if 1.0 - binomial_cdf(n, p, x - 1) < tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// The effective sample size (whole) of the share of `series` at or below `threshold`, and
/// how many values each effective one stands for.
fn effective(series: &[f64], threshold: f64) -> (u64, f64) {
    let below: Vec<f64> = series.iter().map(|x| f64::from(*x <= threshold)).collect();
    let inflation = batch_means_inflation(&below).unwrap_or(1.0).max(1.0);
    let k = (series.len() as f64 / inflation).floor().max(1.0) as u64;
    (k, series.len() as f64 / k as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, Normal};

    /// A stationary Gaussian AR(1) series with lag-1 correlation `rho`.
    fn ar1(n: usize, rho: f64, rng: &mut ChaCha8Rng) -> Vec<f64> {
        let noise = Normal::new(0.0, (1.0 - rho * rho).sqrt()).unwrap();
        let mut x = Normal::new(0.0, 1.0).unwrap().sample(rng);
        (0..n)
            .map(|_| {
                x = rho * x + noise.sample(rng);
                x
            })
            .collect()
    }

    #[test]
    fn batch_means_recover_the_ar1_inflation_of_a_mean_and_of_the_median_indicator() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let rho = 0.8;
        let series = ar1(400_000, rho, &mut rng);
        // The mean of an AR(1) series: (1 + ρ) / (1 − ρ) = 9.
        let mean_inflation = batch_means_inflation(&series).unwrap();
        assert!(
            (mean_inflation - 9.0).abs() < 9.0 * 0.15,
            "{mean_inflation}"
        );
        // The indicator `x ≤ 0` (the median): lag-k correlation (2/π)·asin(ρ^k).
        let analytic = 1.0
            + 2.0
                * (1..200)
                    .map(|k| 2.0 / std::f64::consts::PI * rho.powi(k).asin())
                    .sum::<f64>();
        let below: Vec<f64> = series.iter().map(|x| f64::from(*x <= 0.0)).collect();
        let indicator_inflation = batch_means_inflation(&below).unwrap();
        assert!(
            (indicator_inflation - analytic).abs() < analytic * 0.15,
            "{indicator_inflation} vs {analytic}"
        );
        // Independent values: no inflation.
        let iid = ar1(100_000, 0.0, &mut rng);
        let none = batch_means_inflation(&iid).unwrap();
        assert!((none - 1.0).abs() < 0.2, "{none}");
    }

    #[test]
    fn the_interval_covers_an_ar1_median_where_the_independent_one_does_not() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let (runs, mut covered, mut covered_naive) = (300, 0, 0);
        for _ in 0..runs {
            let series = ar1(2000, 0.9, &mut rng);
            let mut sorted = series.clone();
            sorted.sort_by(f64::total_cmp);
            let estimate =
                crate::metrics::percentile(&sorted, 0.5, crate::plan::PercentileMethod::Linear);
            let b = PercentileBounds::of(&series, 0.5, estimate, 0.0, VERDICT_TAIL).unwrap();
            covered += usize::from(b.lo.unwrap() <= 0.0 && b.hi.unwrap() >= 0.0);
            let naive = crate::metrics::percentile_interval(&sorted, 0.5).unwrap();
            covered_naive += usize::from(naive.lo <= 0.0 && naive.hi >= 0.0);
        }
        let share = covered as f64 / runs as f64;
        let naive = covered_naive as f64 / runs as f64;
        assert!(share >= 0.9, "coverage {share}");
        assert!(naive < 0.6, "independent-sample coverage {naive}");
    }

    #[test]
    fn a_share_passes_fails_or_cannot_tell_against_its_minimum() {
        let tail = look_tail(PROBE_LOOKS);
        // 200 independent-looking requests, 196 within: far above 90%.
        let mostly: Vec<bool> = (0..200).map(|i| i % 50 != 0).collect();
        let b = ShareBounds::of(&mostly, 0.9, tail).unwrap();
        assert_eq!(b.verdict, Verdict::Pass, "{b:?}");
        assert!((b.share - 0.98).abs() < 1e-12);
        assert!(
            b.lo > 0.9 && b.lo < 0.98 && b.hi > 0.98 && b.hi <= 1.0,
            "{b:?}"
        );
        // Half within: far below.
        let half: Vec<bool> = (0..200).map(|i| i % 2 == 0).collect();
        let b = ShareBounds::of(&half, 0.9, tail).unwrap();
        assert_eq!(b.verdict, Verdict::Fail, "{b:?}");
        assert!(b.hi < 0.9, "{b:?}");
        // 90% of 50: the interval straddles the minimum.
        let close: Vec<bool> = (0..50).map(|i| i % 10 != 0).collect();
        let b = ShareBounds::of(&close, 0.9, tail).unwrap();
        assert_eq!(b.verdict, Verdict::Indeterminate, "{b:?}");
        assert!(b.lo < 0.9 && b.hi > 0.9, "{b:?}");
        // The misses all at the end (a queue that built up) count for fewer samples.
        let late: Vec<bool> = (0..200).map(|i| i < 180).collect();
        let b = ShareBounds::of(&late, 0.8, tail).unwrap();
        assert!(b.effective_samples < 100.0, "{b:?}");
        // Every request within: passes once there are enough of them.
        let all = vec![true; samples_to_pass(0.9) as usize];
        assert_eq!(
            ShareBounds::of(&all, 0.9, tail).unwrap().verdict,
            Verdict::Pass
        );
        let fewer = vec![true; samples_to_pass(0.9) as usize - 1];
        assert_eq!(
            ShareBounds::of(&fewer, 0.9, tail).unwrap().verdict,
            Verdict::Indeterminate
        );
    }

    #[test]
    fn a_verdict_needs_its_side_bounded() {
        // 12 values all far over the limit: a p99 fails without an upper bound.
        let over = vec![5.0; 12];
        let tail = look_tail(PROBE_LOOKS);
        let b = PercentileBounds::of(&over, 0.99, 5.0, 1.0, tail).unwrap();
        assert_eq!((b.hi, b.verdict), (None, Verdict::Fail));
        // The same 12 values within the limit cannot pass a p99.
        let b = PercentileBounds::of(&over, 0.99, 5.0, 10.0, tail).unwrap();
        assert_eq!(b.verdict, Verdict::Indeterminate);
        // Enough values within the limit pass, one fewer cannot.
        let needed = samples_to_pass(0.99) as usize;
        let many: Vec<f64> = (0..needed).map(|i| (i % 97) as f64).collect();
        let b = PercentileBounds::of(&many, 0.99, 96.0, 100.0, tail).unwrap();
        assert_eq!(b.verdict, Verdict::Pass);
        let b = PercentileBounds::of(&many[1..], 0.99, 96.0, 100.0, tail).unwrap();
        assert_eq!(b.verdict, Verdict::Indeterminate);
    }
}
