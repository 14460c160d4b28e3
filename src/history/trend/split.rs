//! A split of a stretch of runs and what makes one count: the detection settings, the two
//! levels either side, and whether a new level was only a blip.

use super::stats::{mean, relative};

/// What counts as a change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// A change's two-sided p-value (Student's t between its neighbouring levels) must be
    /// at most this.
    pub max_p: f64,
    /// And its relative size at least this (0.05 = 5%).
    pub min_effect: f64,
    /// Runs each level needs on either side of a change.
    pub min_points: usize,
    /// Runs in each window of the candidate search (windows overlap by half).
    pub window: usize,
    /// The newest runs' test: the newest `min_points..=newest_runs` runs after the last
    /// change, against at least `newest_min_base` runs before them, at p ≤ `newest_max_p`.
    pub newest_max_p: f64,
    pub newest_runs: usize,
    pub newest_min_base: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        // Chosen for a false-alarm rate under 2% over 30 runs of Gaussian noise, on seeds
        // apart from the ones BENCHMARKS.md reports (`cargo bench --bench trend -- calibrate`).
        Settings {
            max_p: 0.001,
            min_effect: 0.10,
            min_points: 3,
            window: 50,
            newest_max_p: 0.01,
            newest_runs: 4,
            newest_min_base: 10,
        }
    }
}

/// Which test found a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundBy {
    /// The full test: E-divisive candidates, kept while significant against their
    /// neighbouring levels.
    Levels,
    /// The newest runs' test, before the full test has runs enough to see the change.
    NewestRuns,
}

/// A change between two levels of a stretch of values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    /// The first value of the new level.
    pub at: usize,
    /// Means of the levels either side.
    pub before: f64,
    pub after: f64,
    pub p_value: f64,
    /// Runs in the levels either side.
    pub left_runs: usize,
    pub right_runs: usize,
    pub found_by: FoundBy,
}

impl Split {
    pub fn relative(&self) -> f64 {
        relative(self.before, self.after)
    }

    /// How much the squared error of a step fit grows without this change:
    /// `n₁·n₂ / (n₁ + n₂) · (after − before)²`.
    pub(super) fn fit_cost(&self) -> f64 {
        let (n1, n2) = (self.left_runs as f64, self.right_runs as f64);
        n1 * n2 / (n1 + n2) * (self.after - self.before).powi(2)
    }
}

/// Squared errors about their mean of any stretch of values, from prefix sums.
pub(super) struct SquaredError {
    sum: Vec<f64>,
    sum_sq: Vec<f64>,
}

impl SquaredError {
    pub(super) fn new(values: &[f64]) -> SquaredError {
        let mut sum = Vec::with_capacity(values.len() + 1);
        let mut sum_sq = Vec::with_capacity(values.len() + 1);
        let (mut total, mut total_sq) = (0.0, 0.0);
        sum.push(total);
        sum_sq.push(total_sq);
        for v in values {
            total += v;
            total_sq += v * v;
            sum.push(total);
            sum_sq.push(total_sq);
        }
        SquaredError { sum, sum_sq }
    }

    /// Of `values[a..b]` about their own mean; 0 for an empty stretch.
    pub(super) fn of(&self, a: usize, b: usize) -> f64 {
        if b <= a {
            return 0.0;
        }
        let n = (b - a) as f64;
        let s = self.sum[b] - self.sum[a];
        (self.sum_sq[b] - self.sum_sq[a]) - s * s / n
    }

    /// Of `values[a..b]` about `level`.
    pub(super) fn about(&self, a: usize, b: usize, level: f64) -> f64 {
        let n = (b - a) as f64;
        let s = self.sum[b] - self.sum[a];
        (self.sum_sq[b] - self.sum_sq[a]) - 2.0 * level * s + n * level * level
    }
}

/// How much better, in the level before's run-to-run variances, a return must fit than one
/// level to make a blip: the return's position is a free choice, and without a margin a
/// real step's noisy last run reads as a return (4: a two-sigma run; 0 costs 6 of 200 steps
/// found by run 23 in the detection benchmark).
const BLIP_MARGIN: f64 = 4.0;

/// Whether the new level `values[at..hi]` is a blip: fewer than `min_points` runs away from
/// the level before (`values[lo..at]`) and then back at it. It is when returning, after its
/// first `1..min_points` runs, to the level before fits the stretch better than one level
/// does, by [`BLIP_MARGIN`].
pub(super) fn is_blip(values: &[f64], lo: usize, at: usize, hi: usize, min_points: usize) -> bool {
    blip_with(values, &SquaredError::new(values), (lo, at, hi), min_points)
}

/// [`is_blip`] with the values' prefix sums already built (the merge asks of every change).
pub(super) fn blip_with(
    values: &[f64],
    sse: &SquaredError,
    (lo, at, hi): (usize, usize, usize),
    min_points: usize,
) -> bool {
    if at <= lo || hi <= at + 1 {
        return false;
    }
    let before = mean(&values[lo..at]);
    let noise = if at - lo > 1 {
        sse.of(lo, at) / (at - lo - 1) as f64
    } else {
        0.0
    };
    let one_level = sse.of(at, hi);
    (at + 1..(at + min_points).min(hi)).any(|back| {
        sse.of(at, back) + sse.about(back, hi, before) + BLIP_MARGIN * noise < one_level
    })
}
