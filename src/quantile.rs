//! The one percentile of the project: reports, gates, bootstrap intervals, the self-test and
//! the live progress line all read quantiles here. It sits below every other module so that
//! the scheduler's running summaries need not import `metrics`, which comes after it in the
//! data flow.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a percentile is read from a sorted sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PercentileMethod {
    /// Linear interpolation between order statistics (numpy's default).
    #[default]
    Linear,
    /// `x[ceil(q·n) − 1]`.
    NearestRank,
}

/// The `q`-quantile (`q` in `[0, 1]`) of an ascending, NaN-free sample; NaN when empty.
///
/// `Linear` is numpy's default (virtual index `(n−1)·q`, numpy's two-sided lerp, so results
/// match numpy to the last bit); `NearestRank` is `x[ceil(q·n) − 1]`. This is the one
/// percentile of the project: reports, gates, bootstrap intervals and the self-test use it.
pub fn percentile(sorted: &[f64], q: f64, method: PercentileMethod) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let (lo, hi, t) = percentile_ranks(n, q, method);
    interpolate(sorted[lo], sorted[hi], t)
}

/// Where the `q`-quantile of `n ≥ 1` ascending values lies: the 0-based ranks it reads and
/// the weight of the upper one. `lo == hi` (weight 0) when it reads a single value.
///
/// Callers that know only some order statistics (a bootstrap drawing them directly) combine
/// them with [`interpolate`] and get exactly [`percentile`]'s figure.
pub fn percentile_ranks(n: usize, q: f64, method: PercentileMethod) -> (usize, usize, f64) {
    let q = q.clamp(0.0, 1.0);
    match method {
        PercentileMethod::NearestRank => {
            let rank = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
            (rank, rank, 0.0)
        }
        PercentileMethod::Linear => {
            let virtual_index = (n - 1) as f64 * q;
            let below = virtual_index.floor();
            let t = virtual_index - below;
            let i = (below as usize).min(n - 1);
            if t > 0.0 && i + 1 < n {
                (i, i + 1, t)
            } else {
                (i, i, 0.0)
            }
        }
    }
}

/// The value a fraction `t` of the way from `a` to `b`, by numpy's `_lerp`: interpolated from
/// the nearer end, for stability.
pub fn interpolate(a: f64, b: f64, t: f64) -> f64 {
    if t == 0.0 {
        return a;
    }
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}
