//! Exact order statistics of a sample too large to hold: radix selection over the f64 bit
//! pattern, in passes over a source that can be scanned again (a column file on disk).
//!
//! Each pass counts the values under each open prefix by their next 16 bits (65,536
//! counters per open prefix), narrowing every wanted rank to one bucket; a bucket small
//! enough is then read whole and sorted. Memory stays bounded by the number of wanted ranks,
//! never by the sample's size, and the values are exactly those a full sort would give.

use std::collections::BTreeMap;

use super::{Distribution, PercentileIntervals, interpolate, interval_ranks, percentile_ranks};
use crate::plan::PercentileMethod;

/// A sample that can be read again from the start, value by value.
pub trait Rescan {
    type Error;
    fn scan(&mut self, each: &mut dyn FnMut(f64)) -> Result<(), Self::Error>;
}

/// An in-memory sample, for tests and small inputs.
impl Rescan for &[f64] {
    type Error = std::convert::Infallible;
    fn scan(&mut self, each: &mut dyn FnMut(f64)) -> Result<(), Self::Error> {
        self.iter().for_each(|&v| each(v));
        Ok(())
    }
}

/// Bits of the key each histogram pass resolves.
const DIGIT_BITS: u32 = 16;
/// A bucket this small is read whole and sorted.
const GATHER_AT_MOST: u64 = 1 << 16;

/// A key whose unsigned order is `f64::total_cmp`'s order (the order the in-memory sort uses).
fn key(v: f64) -> u64 {
    let bits = v.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// Where a wanted rank stands: the key prefix it lies under and its rank among those values.
#[derive(Debug, Clone, Copy)]
struct Open {
    prefix: u64,
    /// Bits of the key the prefix fixes (0 = none yet).
    fixed: u32,
    rank: u64,
    /// Values under the prefix.
    count: u64,
}

/// The values at 0-based `ranks` of the ascending order of the `n` values `source` yields
/// (each rank `< n`). The source must yield the same `n` values on every scan.
pub fn select_ranks<S: Rescan>(
    source: &mut S,
    n: u64,
    ranks: &[u64],
) -> Result<Vec<f64>, S::Error> {
    let mut open: Vec<Open> = ranks
        .iter()
        .map(|&rank| Open {
            prefix: 0,
            fixed: 0,
            rank,
            count: n,
        })
        .collect();
    while open
        .iter()
        .any(|o| o.count > GATHER_AT_MOST && o.fixed < 64)
    {
        narrow(source, &mut open)?;
    }
    gather(source, &open)
}

/// One histogram pass: every open prefix still too large gains 16 bits.
fn narrow<S: Rescan>(source: &mut S, open: &mut [Open]) -> Result<(), S::Error> {
    let mut histograms: BTreeMap<(u64, u32), Vec<u64>> = open
        .iter()
        .filter(|o| o.count > GATHER_AT_MOST && o.fixed < 64)
        .map(|o| ((o.prefix, o.fixed), vec![0u64; 1 << DIGIT_BITS]))
        .collect();
    let keys: Vec<(u64, u32)> = histograms.keys().copied().collect();
    source.scan(&mut |v| {
        let k = key(v);
        for &(prefix, fixed) in &keys {
            if fixed == 0 || k >> (64 - fixed) == prefix {
                let digit = (k << fixed) >> (64 - DIGIT_BITS);
                if let Some(h) = histograms.get_mut(&(prefix, fixed)) {
                    h[digit as usize] += 1;
                }
            }
        }
    })?;
    for o in open.iter_mut() {
        let Some(h) = histograms.get(&(o.prefix, o.fixed)) else {
            continue;
        };
        let mut below = 0u64;
        // A source that yields fewer values than promised leaves the rank unfound: it
        // resolves to NaN rather than looping.
        let (mut prefix, mut fixed, mut count) = (o.prefix, 64, 0);
        for (digit, &c) in h.iter().enumerate() {
            if o.rank < below + c {
                (prefix, fixed, count) = (
                    (o.prefix << DIGIT_BITS) | digit as u64,
                    o.fixed + DIGIT_BITS,
                    c,
                );
                o.rank -= below;
                break;
            }
            below += c;
        }
        (o.prefix, o.fixed, o.count) = (prefix, fixed, count);
    }
    Ok(())
}

/// The value whose key is `k`.
fn unkey(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// The last pass: read each open bucket whole, sort it, pick the ranks. A bucket whose
/// prefix fixes all 64 bits holds one value, known without reading.
fn gather<S: Rescan>(source: &mut S, open: &[Open]) -> Result<Vec<f64>, S::Error> {
    let mut buckets: BTreeMap<(u64, u32), Vec<f64>> = open
        .iter()
        .filter(|o| o.fixed < 64)
        .map(|o| ((o.prefix, o.fixed), Vec::new()))
        .collect();
    if !buckets.is_empty() {
        let keys: Vec<(u64, u32)> = buckets.keys().copied().collect();
        source.scan(&mut |v| {
            let k = key(v);
            for &(prefix, fixed) in &keys {
                if (fixed == 0 || k >> (64 - fixed) == prefix)
                    && let Some(bucket) = buckets.get_mut(&(prefix, fixed))
                {
                    bucket.push(v);
                }
            }
        })?;
    }
    for bucket in buckets.values_mut() {
        bucket.sort_unstable_by(f64::total_cmp);
    }
    Ok(open
        .iter()
        .map(|o| match buckets.get(&(o.prefix, o.fixed)) {
            Some(bucket) => bucket.get(o.rank as usize).copied().unwrap_or(f64::NAN),
            None if o.count == 0 => f64::NAN,
            None => unkey(o.prefix),
        })
        .collect())
}

/// A distribution of `n ≥ 1` finite values with sum `sum`, as [`super::distribution`] gives
/// it on the whole sample (the mean from the streamed sum), with the percentiles' intervals
/// when `intervals` is set.
pub fn distribution_by_selection<S: Rescan>(
    source: &mut S,
    n: u64,
    sum: f64,
    method: PercentileMethod,
    intervals: bool,
) -> Result<Distribution, S::Error> {
    const QS: [f64; 3] = [0.50, 0.95, 0.99];
    let mut ranks: Vec<u64> = vec![0, n - 1];
    let points: Vec<(usize, usize, f64)> = QS
        .iter()
        .map(|&q| percentile_ranks(n as usize, q, method))
        .collect();
    for &(lo, hi, _) in &points {
        ranks.extend([lo as u64, hi as u64]);
    }
    let bounds: Vec<Option<(u64, u64, f64)>> = QS
        .iter()
        .map(|&q| intervals.then(|| interval_ranks(n, q)).flatten())
        .collect();
    for &(l, u, _) in bounds.iter().flatten() {
        ranks.extend([l - 1, u - 1]);
    }
    ranks.sort_unstable();
    ranks.dedup();
    let values = select_ranks(source, n, &ranks)?;
    let at = |rank: u64| values[ranks.binary_search(&rank).unwrap_or(0)];
    let figure = |i: usize| {
        let (lo, hi, t) = points[i];
        interpolate(at(lo as u64), at(hi as u64), t)
    };
    let interval = |i: usize| {
        bounds[i].map(|(l, u, coverage)| super::Interval {
            lo: at(l - 1),
            hi: at(u - 1),
            rank_lo: l,
            rank_hi: u,
            coverage,
        })
    };
    Ok(Distribution {
        p50: figure(0),
        p95: figure(1),
        p99: figure(2),
        min: at(0),
        max: at(n - 1),
        mean: sum / n as f64,
        samples: n,
        ci95: intervals.then(|| PercentileIntervals {
            p50: interval(0),
            p95: interval(1),
            p99: interval(2),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(values: &[f64]) -> Vec<f64> {
        let mut s = values.to_vec();
        s.sort_by(f64::total_cmp);
        s
    }

    fn check_every_rank(values: &[f64]) {
        let s = sorted(values);
        let ranks: Vec<u64> = (0..values.len() as u64).collect();
        let got = select_ranks(&mut &values[..], values.len() as u64, &ranks).unwrap();
        for (rank, v) in got.iter().enumerate() {
            assert_eq!(v.to_bits(), s[rank].to_bits(), "rank {rank}");
        }
    }

    #[test]
    fn selects_every_rank_of_small_samples() {
        check_every_rank(&[3.0, -1.0, 0.0, -0.0, 2.5, 2.5, -7.25, 1e-300, -1e300]);
        check_every_rank(&[5.0; 17]);
        check_every_rank(&[0.0]);
    }

    /// A pseudo-random sample with heavy ties, large enough to need histogram passes.
    fn large_sample(n: usize) -> Vec<f64> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        (0..n)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                match i % 4 {
                    0 => 42.0,                                             // ties
                    1 => -((state % 1000) as f64) / 7.0,                   // negatives and zero
                    _ => (state >> 11) as f64 / (1u64 << 53) as f64 * 3e3, // spread
                }
            })
            .collect()
    }

    #[test]
    fn selects_from_large_samples_through_histogram_passes() {
        let values = large_sample(200_000);
        let s = sorted(&values);
        let n = values.len() as u64;
        let ranks = [
            0,
            1,
            49_999,
            50_000,
            100_000,
            150_001,
            190_000,
            n - 2,
            n - 1,
        ];
        let got = select_ranks(&mut &values[..], n, &ranks).unwrap();
        for (rank, v) in ranks.iter().zip(&got) {
            assert_eq!(v.to_bits(), s[*rank as usize].to_bits(), "rank {rank}");
        }
        // All equal: every pass keeps one bucket with everything in it.
        let same = vec![-3.5; 150_000];
        let got = select_ranks(&mut &same[..], 150_000, &[0, 74_999, 149_999]).unwrap();
        assert_eq!(got, vec![-3.5; 3]);
    }

    #[test]
    fn distribution_matches_the_in_memory_one_bit_for_bit() {
        let values = large_sample(120_000);
        for method in [PercentileMethod::Linear, PercentileMethod::NearestRank] {
            let mut s = sorted(&values);
            let want = super::super::distribution(&s, method).unwrap();
            let ci = super::super::percentile_intervals(&s);
            s.clear();
            let sum: f64 = values.iter().sum();
            let got =
                distribution_by_selection(&mut &values[..], values.len() as u64, sum, method, true)
                    .unwrap();
            for (a, b) in [
                (got.p50, want.p50),
                (got.p95, want.p95),
                (got.p99, want.p99),
                (got.min, want.min),
                (got.max, want.max),
            ] {
                assert_eq!(a.to_bits(), b.to_bits(), "{method:?}");
            }
            assert!((got.mean - want.mean).abs() <= 1e-9 * want.mean.abs());
            assert_eq!(got.samples, want.samples);
            assert_eq!(got.ci95, Some(ci));
        }
    }
}
