//! Bootstrap confidence intervals of the difference of a statistic between two samples.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Beta, Binomial, Distribution as _};

use super::{Stat, interpolate, percentile, percentile_ranks};
use crate::plan::PercentileMethod;

/// Resamples per bootstrap.
pub const BOOTSTRAP_RESAMPLES: usize = 1000;
/// Two-sided confidence level of the bootstrap interval.
pub const CONFIDENCE: f64 = 0.95;

/// Percentile-bootstrap interval of `stat(new) − stat(base)`, resampling each side
/// independently with replacement.
pub fn bootstrap_diff_ci(
    base: &[f64],
    base_method: PercentileMethod,
    new: &[f64],
    new_method: PercentileMethod,
    stat: Stat,
    seed: u64,
) -> [f64; 2] {
    bootstrap_diff_cis(base, base_method, new, new_method, &[stat], seed)[0]
}

/// [`bootstrap_diff_ci`] for several statistics of the same values, from the same resamples.
pub fn bootstrap_diff_cis(
    base: &[f64],
    base_method: PercentileMethod,
    new: &[f64],
    new_method: PercentileMethod,
    stats: &[Stat],
    seed: u64,
) -> Vec<[f64; 2]> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut b_sorted = base.to_vec();
    b_sorted.sort_by(f64::total_cmp);
    let mut n_sorted = new.to_vec();
    n_sorted.sort_by(f64::total_cmp);
    let mut diffs: Vec<Vec<f64>> = vec![Vec::with_capacity(BOOTSTRAP_RESAMPLES); stats.len()];
    for _ in 0..BOOTSTRAP_RESAMPLES {
        let b = resampled_stats(&b_sorted, stats, base_method, &mut rng);
        let n = resampled_stats(&n_sorted, stats, new_method, &mut rng);
        for ((d, b), n) in diffs.iter_mut().zip(b).zip(n) {
            d.push(n - b);
        }
    }
    let alpha = (1.0 - CONFIDENCE) / 2.0;
    diffs
        .into_iter()
        .map(|mut d| {
            d.sort_by(f64::total_cmp);
            [
                percentile(&d, alpha, PercentileMethod::Linear),
                percentile(&d, 1.0 - alpha, PercentileMethod::Linear),
            ]
        })
        .collect()
}

/// Order-statistic ranks (0-based) a statistic reads, with the interpolation weight of the
/// upper one ([`percentile_ranks`]); `None` for the mean.
fn ranks(stat: Stat, n: usize, method: PercentileMethod) -> Option<(usize, usize, f64)> {
    let q = match stat {
        Stat::P50 | Stat::P95 | Stat::P99 => stat.quantile()?,
        Stat::Min => return Some((0, 0, 0.0)),
        Stat::Max => return Some((n - 1, n - 1, 0.0)),
        Stat::Mean => return None,
    };
    Some(percentile_ranks(n, q, method))
}

/// `stats` of one bootstrap resample of the ascending `sorted`, without building it.
///
/// The k-th smallest of n uniforms is Beta(k, n−k+1), and given it, a later one is that value
/// plus (1 − value)·Beta(k′−k, n−k′+1); a resample's k-th order statistic is
/// `sorted[⌊n·U(k)⌋]`. So each percentile costs a few Beta draws instead of n index draws,
/// with exactly the bootstrap's distribution. The mean of 0/1 values is Binomial; any other
/// mean falls back to drawing n indices.
fn resampled_stats(
    sorted: &[f64],
    stats: &[Stat],
    method: PercentileMethod,
    rng: &mut ChaCha8Rng,
) -> Vec<f64> {
    let n = sorted.len();
    let mut wanted: Vec<usize> = stats
        .iter()
        .filter_map(|s| ranks(*s, n, method))
        .flat_map(|(lo, hi, _)| [lo, hi])
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut at_rank: HashMap<usize, f64> = HashMap::new();
    let (mut u, mut prev_k) = (0.0f64, 0usize);
    for r in wanted {
        let k = r + 1;
        if k > prev_k {
            let step = Beta::new((k - prev_k) as f64, (n - k + 1) as f64)
                .map(|b| b.sample(rng))
                .unwrap_or(0.0);
            u += (1.0 - u) * step;
            prev_k = k;
        }
        let j = ((n as f64 * u).floor() as usize).min(n - 1);
        at_rank.insert(r, sorted[j]);
    }
    stats
        .iter()
        .map(|s| match ranks(*s, n, method) {
            Some((lo, hi, w)) => interpolate(at_rank[&lo], at_rank[&hi], w),
            None => resampled_mean(sorted, rng),
        })
        .collect()
}

fn resampled_mean(sorted: &[f64], rng: &mut ChaCha8Rng) -> f64 {
    let n = sorted.len();
    if sorted.iter().all(|v| *v == 0.0 || *v == 1.0) {
        let ones = sorted.iter().filter(|v| **v == 1.0).count();
        return Binomial::new(n as u64, ones as f64 / n as f64)
            .map(|b| b.sample(rng) as f64 / n as f64)
            .unwrap_or(f64::NAN);
    }
    (0..n).map(|_| sorted[rng.random_range(0..n)]).sum::<f64>() / n as f64
}

/// Percentile-bootstrap interval of a pooled ratio `Σ numerator / Σ denominator` over
/// independent units (requests), resampling the units with replacement; `None` when no
/// resample has a positive denominator.
pub fn bootstrap_ratio_ci(pairs: &[(f64, f64)], seed: u64) -> Option<[f64; 2]> {
    let n = pairs.len();
    if n == 0 {
        return None;
    }
    // Sorted, so the interval does not depend on the order the units came in.
    let mut pairs = pairs.to_vec();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ratios: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .filter_map(|_| {
            let (num, den) = (0..n).fold((0.0, 0.0), |(a, b), _| {
                let (x, y) = pairs[rng.random_range(0..n)];
                (a + x, b + y)
            });
            (den > 0.0).then(|| num / den)
        })
        .collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let alpha = (1.0 - CONFIDENCE) / 2.0;
    Some([
        percentile(&ratios, alpha, PercentileMethod::Linear),
        percentile(&ratios, 1.0 - alpha, PercentileMethod::Linear),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_interval_holds_the_pooled_ratio() {
        let pairs: Vec<(f64, f64)> = (0..50).map(|i| ((i % 5) as f64, 4.0)).collect();
        let [lo, hi] = bootstrap_ratio_ci(&pairs, 7).expect("positive denominators");
        let pooled = 100.0 / 200.0;
        assert!(lo < pooled && pooled < hi, "{lo} {hi}");
        // About ±1.96 × 0.05 (the mean of 0–4 over 50 units, over 4).
        assert!(hi - lo > 0.1 && hi - lo < 0.3, "{lo} {hi}");
        assert_eq!(bootstrap_ratio_ci(&[(0.0, 0.0)], 1), None);
        // The same units in another order give the same interval.
        let reversed: Vec<(f64, f64)> = pairs.iter().rev().copied().collect();
        assert_eq!(bootstrap_ratio_ci(&reversed, 7), Some([lo, hi]));
    }

    /// The order-statistic shortcut against a plain resample-and-sort bootstrap.
    #[test]
    fn order_statistic_resampling_matches_plain_resampling() {
        let x: Vec<f64> = (0..60)
            .map(|i| ((i * 37) % 60) as f64 + (i / 20) as f64 * 0.5)
            .collect();
        let mut sorted = x.clone();
        sorted.sort_by(f64::total_cmp);
        let stats = [Stat::P50, Stat::P95, Stat::Min];
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let reps = 20_000;
        let mut fast: Vec<Vec<f64>> = vec![Vec::new(); 3];
        let mut plain: Vec<Vec<f64>> = vec![Vec::new(); 3];
        for _ in 0..reps {
            for (i, v) in resampled_stats(&sorted, &stats, PercentileMethod::Linear, &mut rng)
                .into_iter()
                .enumerate()
            {
                fast[i].push(v);
            }
            let mut r: Vec<f64> = (0..x.len())
                .map(|_| x[rng.random_range(0..x.len())])
                .collect();
            r.sort_by(f64::total_cmp);
            for (i, s) in stats.iter().enumerate() {
                plain[i].push(s.of_sorted(&r, PercentileMethod::Linear));
            }
        }
        for i in 0..3 {
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let sd = |v: &[f64]| {
                let m = mean(v);
                (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64).sqrt()
            };
            let (mf, mp) = (mean(&fast[i]), mean(&plain[i]));
            let (sf, sp) = (sd(&fast[i]), sd(&plain[i]));
            assert!(
                (mf - mp).abs() < 0.05 * sp.max(1.0),
                "{:?}: mean {mf} vs {mp}",
                stats[i]
            );
            assert!(
                (sf - sp).abs() < 0.05 * sp.max(0.2),
                "{:?}: sd {sf} vs {sp}",
                stats[i]
            );
        }
    }

    #[test]
    fn bootstrap_detects_a_shift_and_not_noise() {
        let base: Vec<f64> = (0..200).map(|i| 100.0 + (i % 20) as f64).collect();
        let same = base.clone();
        let ci = bootstrap_diff_ci(
            &base,
            PercentileMethod::Linear,
            &same,
            PercentileMethod::Linear,
            Stat::P50,
            7,
        );
        assert!(ci[0] <= 0.0 && ci[1] >= 0.0, "{ci:?}");
        let slower: Vec<f64> = base.iter().map(|v| v + 30.0).collect();
        let ci = bootstrap_diff_ci(
            &base,
            PercentileMethod::Linear,
            &slower,
            PercentileMethod::Linear,
            Stat::P50,
            7,
        );
        assert!(ci[0] > 20.0 && ci[1] < 40.0, "{ci:?}");
    }
}
