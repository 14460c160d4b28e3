//! A phase's overhead over the phase it names in `compare_to` (a structured-output phase
//! against the same workload unconstrained): each figure's change with the bootstrap
//! interval `compare` uses.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Stat, bootstrap_diff_ci};
use crate::plan::PercentileMethod;

/// The figures an overhead is read on: TTFT, TPOT and per-request output tokens/s, at p50.
pub const OVERHEAD_FIGURES: [(crate::figure::Figure, Stat); 3] = [
    (crate::figure::Figure::Ttft, Stat::P50),
    (crate::figure::Figure::Tpot, Stat::P50),
    (crate::figure::Figure::DecodeTokS, Stat::P50),
];

/// This phase against its `compare_to` phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Overhead {
    /// The phase compared against (the base).
    pub against: String,
    pub figures: Vec<OverheadFigure>,
}

/// One figure's change from the base phase to this one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OverheadFigure {
    /// The figure path, e.g. `tpot.p50`.
    pub figure: String,
    pub base: f64,
    pub new: f64,
    /// `new − base`, in the figure's unit.
    pub change: f64,
    /// Percentile-bootstrap 95% interval of `new − base` (each side resampled).
    pub ci95: [f64; 2],
    /// `new / base − 1`.
    pub relative_change: f64,
    /// `ci95 / base`: the relative change's interval.
    pub relative_ci95: [f64; 2],
    /// Requests behind the figure on each side (base, this phase).
    pub samples: [u64; 2],
}

/// One figure's change, from each side's per-request values; `None` when a side has none.
pub fn overhead_figure(
    name: String,
    (base, new): (&[f64], &[f64]),
    method: PercentileMethod,
    stat: Stat,
    seed: u64,
) -> Option<OverheadFigure> {
    if base.is_empty() || new.is_empty() {
        return None;
    }
    let of = |values: &[f64]| {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        stat.of_sorted(&sorted, method)
    };
    let (b, n) = (of(base), of(new));
    let ci95 = bootstrap_diff_ci(base, method, new, method, stat, seed);
    let relative = |d: f64| if b == 0.0 { f64::NAN } else { d / b };
    Some(OverheadFigure {
        figure: name,
        base: b,
        new: n,
        change: n - b,
        ci95,
        relative_change: relative(n - b),
        relative_ci95: [relative(ci95[0]), relative(ci95[1])],
        samples: [base.len() as u64, new.len() as u64],
    })
}
