//! The Wilson score interval of a share of successes: shared by the client-trust bound, the
//! structured-output `valid_share` and the scored `accuracy`.

/// z for a two-sided 95% interval.
const Z: f64 = 1.959_963_984_540_054;

/// The two-sided Wilson score 95% interval of `k` successes in `n` trials; `[0, 1]` for none.
pub fn wilson_interval(k: f64, n: f64) -> [f64; 2] {
    if n <= 0.0 {
        return [0.0, 1.0];
    }
    let p = k / n;
    let z2 = Z * Z;
    let centre = p + z2 / (2.0 * n);
    let spread = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    let scale = 1.0 + z2 / n;
    [
        ((centre - spread) / scale).max(0.0),
        ((centre + spread) / scale).min(1.0),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_published_wilson_bounds() {
        // 8 of 10: 0.490 to 0.943 (Newcombe 1998, method 3).
        let [lo, hi] = wilson_interval(8.0, 10.0);
        assert!(
            (lo - 0.4902).abs() < 1e-3 && (hi - 0.9433).abs() < 1e-3,
            "{lo} {hi}"
        );
        // All successes: the upper bound is 1, the lower below it.
        let [lo, hi] = wilson_interval(20.0, 20.0);
        assert!(hi == 1.0 && lo < 1.0 && lo > 0.8, "{lo} {hi}");
        assert_eq!(wilson_interval(0.0, 0.0), [0.0, 1.0]);
    }
}
