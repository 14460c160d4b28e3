//! Distribution-free confidence intervals of percentiles, from order statistics.
//!
//! The count `B` of a sample's `n` values that fall below the true `p`-quantile is
//! Binomial(n, p), whatever the distribution. So the interval between the `l`-th and `u`-th
//! smallest values (1-based ranks) covers the quantile with probability
//! `P(l ≤ B < u) = F(u−1) − F(l−1)`, `F` the Binomial(n, p) CDF.
//!
//! Convention (equal-tailed, each tail at most 2.5%): `l` is the **largest** rank with
//! `P(B < l) = F(l−1) ≤ 0.025`, `u` the **smallest** rank with `P(B ≥ u) = 1 − F(u−1) ≤ 0.025`,
//! so coverage is at least 95%. When `l` would be 0 or `u` would be `n + 1` (too few samples
//! to bound that tail, e.g. p99 below 368 samples), there is no two-sided 95% interval and
//! the interval is absent (`null` in a report).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Two-sided level of the percentile intervals.
pub const INTERVAL_CONFIDENCE: f64 = 0.95;

/// Probability each tail may hold.
const TAIL: f64 = (1.0 - INTERVAL_CONFIDENCE) / 2.0;

/// A percentile's interval: the values at two order statistics.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Interval {
    /// The `rank_lo`-th smallest value.
    pub lo: f64,
    /// The `rank_hi`-th smallest value.
    pub hi: f64,
    /// 1-based rank of the lower bound.
    pub rank_lo: u64,
    /// 1-based rank of the upper bound.
    pub rank_hi: u64,
    /// `P(rank_lo ≤ B < rank_hi)` for B ~ Binomial(samples, p): at least 0.95.
    pub coverage: f64,
}

/// 95% intervals of a distribution's percentiles; each is `null` when the sample is too small
/// for a two-sided interval at that percentile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PercentileIntervals {
    pub p50: Option<Interval>,
    pub p95: Option<Interval>,
    pub p99: Option<Interval>,
}

impl PercentileIntervals {
    /// The interval of percentile `stat`; `None` for the other statistics.
    pub fn of(&self, stat: super::Stat) -> Option<Interval> {
        match stat {
            super::Stat::P50 => self.p50,
            super::Stat::P95 => self.p95,
            super::Stat::P99 => self.p99,
            super::Stat::Min | super::Stat::Max | super::Stat::Mean => None,
        }
    }
}

/// The ranks `(l, u)` (1-based) and coverage of the `p`-quantile's interval among `n` values;
/// `None` when a tail cannot be bounded.
pub fn interval_ranks(n: u64, p: f64) -> Option<(u64, u64, f64)> {
    if n == 0 || !(0.0..1.0).contains(&p) || p == 0.0 {
        return None;
    }
    // Largest l with F(l−1) ≤ TAIL (F is non-decreasing) and smallest u with
    // 1 − F(u−1) ≤ TAIL, found in one walk over F(0..=n) that stores none of it.
    let mut l = 0u64;
    let mut f_below_l = 0.0;
    let mut found_u: Option<(u64, f64)> = None;
    walk_binomial_cdf(n, p, |k, f| {
        if l == k && k < n && f <= TAIL {
            l = k + 1;
            f_below_l = f;
        }
        if found_u.is_none() && k < n && 1.0 - f <= TAIL {
            found_u = Some((k + 1, f));
        }
    });
    let (u, f_below_u) = found_u?;
    if l == 0 {
        return None;
    }
    Some((l, u, f_below_u - f_below_l))
}

/// One-sided bound ranks (1-based) of the `p`-quantile among `n` values, each tail at most
/// `tail`: the largest `l` with `P(B < l) ≤ tail` and the smallest `u` with `P(B ≥ u) ≤ tail`;
/// either is `None` when the sample is too small to bound that side.
pub fn bound_ranks(n: u64, p: f64, tail: f64) -> (Option<u64>, Option<u64>) {
    if n == 0 || !(0.0..1.0).contains(&p) || p == 0.0 {
        return (None, None);
    }
    let mut l = 0u64;
    let mut u = None;
    walk_binomial_cdf(n, p, |k, f| {
        if l == k && k < n && f <= tail {
            l = k + 1;
        }
        if u.is_none() && k < n && 1.0 - f <= tail {
            u = Some(k + 1);
        }
    });
    ((l > 0).then_some(l), u)
}

pub use crate::probe_samples::min_samples_for_upper_bound;

/// The fewest samples with a two-sided interval for the `p`-quantile: both tails bounded
/// needs `(1−p)^n ≤ 0.025` and `p^n ≤ 0.025`.
pub fn min_samples_for_interval(p: f64) -> u64 {
    let worst = p.max(1.0 - p);
    if !(0.0..1.0).contains(&worst) {
        return u64::MAX;
    }
    let mut n = 1u64;
    let mut tail = worst;
    while tail > TAIL {
        n += 1;
        tail *= worst;
    }
    n
}

/// The interval of the `p`-quantile of an ascending, non-empty sample.
pub fn percentile_interval(sorted: &[f64], p: f64) -> Option<Interval> {
    let (l, u, coverage) = interval_ranks(sorted.len() as u64, p)?;
    Some(Interval {
        lo: sorted[l as usize - 1],
        hi: sorted[u as usize - 1],
        rank_lo: l,
        rank_hi: u,
        coverage,
    })
}

/// p50, p95 and p99 intervals of an ascending sample.
pub fn percentile_intervals(sorted: &[f64]) -> PercentileIntervals {
    PercentileIntervals {
        p50: percentile_interval(sorted, 0.50),
        p95: percentile_interval(sorted, 0.95),
        p99: percentile_interval(sorted, 0.99),
    }
}

/// `F(k) = P(B ≤ k)` for B ~ Binomial(n, p), `0 < p < 1`.
pub fn binomial_cdf(n: u64, p: f64, k: u64) -> f64 {
    let mut at = 1.0;
    walk_binomial_cdf(n, p, |j, f| {
        if j == k {
            at = f;
        }
    });
    at
}

/// Calls `each(k, F(k))` for k = 0..=n, B ~ Binomial(n, p), `0 < p < 1`, in two passes
/// that hold O(1) memory whatever `n` (a long phase has millions of samples).
///
/// The mass is built in log space by the ratio `pmf(k)/pmf(k−1) = (n−k+1)/k · p/(1−p)` so
/// `pmf(0) = (1−p)^n` may underflow without losing the rest; the log masses are shifted by
/// their maximum before exponentiating.
fn walk_binomial_cdf(n: u64, p: f64, mut each: impl FnMut(u64, f64)) {
    let odds = (p / (1.0 - p)).ln();
    let log_pmf = |mut visit: Box<dyn FnMut(u64, f64) + '_>| {
        let mut current = n as f64 * (-p).ln_1p();
        visit(0, current);
        for k in 1..=n {
            current += ((n - k + 1) as f64 / k as f64).ln() + odds;
            visit(k, current);
        }
    };
    let mut peak = f64::NEG_INFINITY;
    log_pmf(Box::new(|_, l| peak = peak.max(l)));
    let mut total = -0.0;
    log_pmf(Box::new(|_, l| total += (l - peak).exp()));
    let mut acc = 0.0;
    log_pmf(Box::new(|k, l| {
        acc += (l - peak).exp() / total;
        each(k, acc.min(1.0));
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// F(k) by the textbook sum, for small n where nothing underflows.
    fn direct_cdf(n: u64, p: f64, k: u64) -> f64 {
        let choose = |n: u64, k: u64| (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64);
        (0..=k)
            .map(|j| choose(n, j) * p.powi(j as i32) * (1.0 - p).powi((n - j) as i32))
            .sum()
    }

    #[test]
    fn cdf_matches_the_direct_sum() {
        for n in [1u64, 5, 17, 60] {
            for p in [0.5, 0.95, 0.99] {
                let mut cdf = Vec::new();
                walk_binomial_cdf(n, p, |_, f| cdf.push(f));
                for k in 0..=n {
                    let d = direct_cdf(n, p, k);
                    assert!((cdf[k as usize] - d).abs() < 1e-12, "n={n} p={p} k={k}");
                }
            }
        }
    }

    #[test]
    fn median_of_ten_and_the_smallest_samples_for_each_percentile() {
        // Binomial(10, 0.5): F(1) = 11/1024 ≤ 0.025 < F(2) = 56/1024, so l = 2 and u = 9.
        let (l, u, coverage) = interval_ranks(10, 0.5).unwrap();
        assert_eq!((l, u), (2, 9));
        assert!((coverage - (1.0 - 2.0 * 11.0 / 1024.0)).abs() < 1e-12);
        // A tail is bounded once (1−p)^n ≤ 0.025 and p^n ≤ 0.025.
        assert_eq!(interval_ranks(5, 0.5), None);
        assert!(interval_ranks(6, 0.5).is_some());
        assert_eq!(interval_ranks(71, 0.95), None);
        assert!(interval_ranks(72, 0.95).is_some());
        assert_eq!(interval_ranks(367, 0.99), None);
        assert!(interval_ranks(368, 0.99).is_some());
    }

    #[test]
    fn the_fewest_samples_agree_with_the_ranks() {
        for p in [0.5, 0.95, 0.99] {
            let n = min_samples_for_interval(p);
            assert!(interval_ranks(n, p).is_some(), "p={p} n={n}");
            assert!(interval_ranks(n - 1, p).is_none(), "p={p} n={n}");
        }
        assert_eq!(min_samples_for_interval(0.99), 368);
    }

    #[test]
    fn coverage_is_at_least_95_percent_and_large_samples_work() {
        for n in [6u64, 100, 1_000, 100_000] {
            let (l, u, c) = interval_ranks(n, 0.5).unwrap();
            assert!(
                l < u && u <= n && c >= INTERVAL_CONFIDENCE,
                "n={n}: {l} {u} {c}"
            );
        }
        let (l, u, _) = interval_ranks(100_000, 0.99).unwrap();
        // ±1.96·√(n·p·(1−p)) ≈ ±62 around 99 000.
        assert!(
            (98_930..98_945).contains(&l) && (99_055..99_070).contains(&u),
            "{l} {u}"
        );
    }

    #[test]
    fn one_sided_ranks_agree_with_the_two_sided_ones_at_the_same_tail() {
        for (n, p) in [(10u64, 0.5), (400, 0.99), (100, 0.95)] {
            let (l, u, _) = interval_ranks(n, p).unwrap();
            assert_eq!(bound_ranks(n, p, TAIL), (Some(l), Some(u)), "n={n} p={p}");
        }
        // A p99 has a lower bound from a handful of values, an upper one only from many.
        assert_eq!(bound_ranks(12, 0.99, TAIL).1, None);
        assert!(bound_ranks(12, 0.99, TAIL).0.is_some());
        let n = min_samples_for_upper_bound(0.99, 0.00625);
        assert_eq!(n, 505);
        assert!(bound_ranks(n, 0.99, 0.00625).1.is_some());
        assert!(bound_ranks(n - 1, 0.99, 0.00625).1.is_none());
    }
}
