//! E-divisive means (Matteson and James, 2014) in one dimension: where a stretch of runs
//! splits into the two most different halves, by the energy statistic `q̂` with α = 1.

/// The split `τ` of `values` (the first value of the second half) with the largest `q̂`,
/// among splits leaving at least `min_points` on each side; `None` when none does.
pub fn best_split(values: &[f64], min_points: usize) -> Option<usize> {
    let m = values.len();
    let min_points = min_points.max(1);
    if m < 2 * min_points {
        return None;
    }
    let dist = |i: usize, j: usize| (values[i] - values[j]).abs();
    // Sums of pairwise distances across the split and within each side, moved along one
    // value at a time: O(m²) for every split together.
    let mut cross = 0.0;
    let mut within_left = 0.0;
    let mut within_right: f64 = (0..m)
        .flat_map(|i| (i + 1..m).map(move |j| (i, j)))
        .map(|(i, j)| dist(i, j))
        .sum();
    let mut best: Option<(usize, f64)> = None;
    for tau in 1..=m - min_points {
        // Value tau − 1 moves from the right side to the left.
        let moved = tau - 1;
        let to_left: f64 = (0..moved).map(|i| dist(i, moved)).sum();
        let to_right: f64 = (tau..m).map(|j| dist(moved, j)).sum();
        cross += to_right - to_left;
        within_left += to_left;
        within_right -= to_right;
        if tau < min_points {
            continue;
        }
        let q = q_hat(cross, within_left, within_right, tau, m - tau);
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tau, q));
        }
    }
    best.map(|(tau, _)| tau)
}

/// `q̂ = (n·k / (n + k)) · (2·mean cross distance − mean within-left − mean within-right)`.
fn q_hat(cross: f64, within_left: f64, within_right: f64, n: usize, k: usize) -> f64 {
    let pairs = |c: usize| (c * c.saturating_sub(1)) as f64 / 2.0;
    let mean_within = |sum: f64, c: usize| if c < 2 { 0.0 } else { sum / pairs(c) };
    let (n_f, k_f) = (n as f64, k as f64);
    let energy =
        2.0 * cross / (n_f * k_f) - mean_within(within_left, n) - mean_within(within_right, k);
    n_f * k_f / (n_f + k_f) * energy
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `q̂` of every split by the definition, for checking the running sums.
    fn q_by_definition(values: &[f64], tau: usize) -> f64 {
        let (x, y) = values.split_at(tau);
        let cross: f64 = x
            .iter()
            .flat_map(|a| y.iter().map(move |b| (a - b).abs()))
            .sum();
        let within = |s: &[f64]| -> f64 {
            (0..s.len())
                .flat_map(|i| (i + 1..s.len()).map(move |j| (s[i] - s[j]).abs()))
                .sum()
        };
        q_hat(cross, within(x), within(y), x.len(), y.len())
    }

    #[test]
    fn finds_a_step_where_the_definition_peaks() {
        let values = [5.0, 5.2, 4.9, 5.1, 5.0, 6.1, 6.0, 6.2, 5.9];
        assert_eq!(best_split(&values, 3), Some(5));
        let by_definition = (3..=values.len() - 3)
            .max_by(|a, b| q_by_definition(&values, *a).total_cmp(&q_by_definition(&values, *b)))
            .unwrap();
        assert_eq!(by_definition, 5);
    }

    #[test]
    fn keeps_the_minimum_on_each_side() {
        assert_eq!(best_split(&[1.0, 1.0, 1.0, 1.0, 9.0], 3), None);
        assert_eq!(best_split(&[1.0, 1.0, 1.0, 9.0, 9.0, 9.0], 3), Some(3));
        // The step sits one from the end: the nearest allowed split is taken.
        assert_eq!(
            best_split(&[1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 9.0], 3),
            Some(4)
        );
    }
}
