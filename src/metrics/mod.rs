//! Pure functions from request records to summaries: percentiles, rates, goodput, drift, bootstrap.

mod anvil;
pub mod binomial;
mod bootstrap;
mod buffering;
pub mod cancellation;
mod causes;
pub mod conditions;
pub mod cost;
mod distributions;
mod drift;
pub mod energy;
mod in_flight;
mod interval;
mod models;
pub mod overhead;
mod rates;
mod reasoning;
pub mod recovery;
pub mod reply_check;
pub mod score;
mod select;
mod sessions;
mod slo_check;
mod spec_decode;
pub mod stability;
mod summary;
mod tally;
mod transport;
pub mod trust;
pub mod verdict;

pub use anvil::*;
pub use bootstrap::*;
pub use buffering::*;
pub use causes::*;
pub use distributions::*;
pub use drift::*;
pub use in_flight::*;
pub use interval::*;
pub use models::*;
pub use rates::*;
pub use reasoning::*;
pub use select::*;
pub use sessions::*;
pub use slo_check::*;
pub use spec_decode::*;
pub use summary::*;
pub use tally::*;
pub use transport::*;

pub use crate::quantile::{interpolate, percentile, percentile_ranks};

use crate::client::RequestRecord;
use crate::plan::Slo;
use crate::quantile::PercentileMethod;

use crate::figure::Figure;
pub use crate::figure::Stat;

impl Stat {
    /// This statistic of a summary distribution.
    pub fn of(self, d: &Distribution) -> f64 {
        match self {
            Stat::P50 => d.p50,
            Stat::P95 => d.p95,
            Stat::P99 => d.p99,
            Stat::Min => d.min,
            Stat::Max => d.max,
            Stat::Mean => d.mean,
        }
    }

    /// This statistic of an ascending-sorted, non-empty sample, computed as [`distribution`]
    /// computes it.
    pub fn of_sorted(self, sorted: &[f64], method: PercentileMethod) -> f64 {
        match self {
            Stat::P50 | Stat::P95 | Stat::P99 => {
                percentile(sorted, self.quantile().unwrap_or(0.5), method)
            }
            Stat::Min => sorted.first().copied().unwrap_or(f64::NAN),
            Stat::Max => sorted.last().copied().unwrap_or(f64::NAN),
            Stat::Mean => sorted.iter().sum::<f64>() / sorted.len() as f64,
        }
    }
}

/// p50/p95/p99/min/max/mean of a sample; `None` when it holds no finite value.
/// Non-finite values are dropped.
pub fn distribution(values: &[f64], method: PercentileMethod) -> Option<Distribution> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    distribution_owned(&mut sorted, method)
}

/// [`distribution`] over a buffer it may reorder (saves a copy).
fn distribution_owned(sorted: &mut [f64], method: PercentileMethod) -> Option<Distribution> {
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_unstable_by(f64::total_cmp);
    let n = sorted.len();
    let sum: f64 = sorted.iter().sum();
    Some(Distribution {
        p50: percentile(sorted, 0.50, method),
        p95: percentile(sorted, 0.95, method),
        p99: percentile(sorted, 0.99, method),
        min: sorted[0],
        max: sorted[n - 1],
        mean: sum / n as f64,
        samples: n as u64,
        ci95: None,
    })
}

/// Seconds from the first record's start to the last record's end; 0 when empty.
pub fn elapsed_s(records: &[RequestRecord]) -> f64 {
    let mut first_start_ms = f64::INFINITY;
    let mut last_end_ms = f64::NEG_INFINITY;
    for r in records {
        first_start_ms = first_start_ms.min(r.start_offset_ms);
        last_end_ms = last_end_ms.max(r.start_offset_ms + r.e2e_ms);
    }
    if records.is_empty() || last_end_ms <= first_start_ms {
        return 0.0;
    }
    (last_end_ms - first_start_ms) / 1000.0
}

fn per_second(count: f64, elapsed_s: f64) -> f64 {
    if elapsed_s > 0.0 {
        count / elapsed_s
    } else {
        0.0
    }
}

/// Whether a record counts toward goodput: it succeeded and each figure of `limits` (an SLO's
/// [`Slo::request_limits`], in the figures' units) is within its limit. A request without TPOT
/// (one output token) meets a TPOT limit: it has no inter-token time to violate.
pub fn meets_slo(record: &RequestRecord, limits: &[(Figure, f64)]) -> bool {
    record.is_ok()
        && limits
            .iter()
            .all(|&(figure, limit)| match record.value(figure) {
                Some(v) => v <= limit,
                None => figure == Figure::Tpot,
            })
}

/// One phase's figures from its measured records, through [`tally_records`].
///
/// Distributions, token totals, chunk counts and token sources cover successful requests;
/// `requests`, `elapsed` and `request_rate` cover every measured request. Records are expected
/// to carry their derived fields (the client fills them: [`crate::client::derive_record_fields`]).
pub fn summarize(
    records: &[RequestRecord],
    method: PercentileMethod,
    slo: Option<&Slo>,
) -> PhaseSummary {
    tally_records(records, method, slo, true).summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_matches_definition() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        assert_eq!(percentile(&x, 0.5, PercentileMethod::NearestRank), 5.0);
        assert_eq!(percentile(&x, 0.95, PercentileMethod::NearestRank), 10.0);
        assert_eq!(percentile(&x, 0.0, PercentileMethod::NearestRank), 1.0);
        assert_eq!(percentile(&x, 0.11, PercentileMethod::NearestRank), 2.0);
    }

    #[test]
    fn linear_matches_numpy() {
        let x = [1.0, 2.0, 3.0, 4.0];
        // numpy.percentile([1,2,3,4], [50, 95, 99]) = 2.5, 3.85, 3.97
        assert_eq!(percentile(&x, 0.5, PercentileMethod::Linear), 2.5);
        assert!((percentile(&x, 0.95, PercentileMethod::Linear) - 3.85).abs() < 1e-12);
        assert!((percentile(&x, 0.99, PercentileMethod::Linear) - 3.97).abs() < 1e-12);
        assert_eq!(percentile(&x, 1.0, PercentileMethod::Linear), 4.0);
        assert_eq!(percentile(&[7.0], 0.99, PercentileMethod::Linear), 7.0);
        assert!(percentile(&[], 0.5, PercentileMethod::Linear).is_nan());
    }

    /// numpy's `percentile(..., method="linear")`, written out as numpy computes it.
    fn numpy_linear(sorted: &[f64], q: f64) -> f64 {
        let n = sorted.len();
        let virtual_index = (n - 1) as f64 * q;
        let below = virtual_index.floor();
        let t = virtual_index - below;
        let i = below as usize;
        if i + 1 >= n {
            return sorted[n - 1];
        }
        let (a, b) = (sorted[i], sorted[i + 1]);
        let diff = b - a;
        if t >= 0.5 {
            b - diff * (1.0 - t)
        } else {
            a + diff * t
        }
    }

    #[test]
    fn ranks_and_interpolate_match_numpy_bit_for_bit() {
        // The bootstrap reads only the ranks a statistic needs and interpolates them itself.
        let x: Vec<f64> = (0..23)
            .map(|i| (f64::from(i) * 0.731).sin() * 10.0)
            .collect();
        let mut sorted = x.clone();
        sorted.sort_by(f64::total_cmp);
        for n in 1..=sorted.len() {
            let s = &sorted[..n];
            for q in [0.0, 0.025, 0.05, 0.5, 0.95, 0.975, 0.99, 1.0] {
                let (lo, hi, t) = percentile_ranks(n, q, PercentileMethod::Linear);
                assert!(lo <= hi && hi < n && (hi == lo || hi == lo + 1));
                let figure = interpolate(s[lo], s[hi], t);
                assert_eq!(
                    figure.to_bits(),
                    numpy_linear(s, q).to_bits(),
                    "n={n} q={q}"
                );
                assert_eq!(
                    percentile(s, q, PercentileMethod::Linear).to_bits(),
                    figure.to_bits()
                );
                let (lo, hi, t) = percentile_ranks(n, q, PercentileMethod::NearestRank);
                assert_eq!((lo, hi, t), {
                    let r = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
                    (r, r, 0.0)
                });
            }
        }
    }
}
