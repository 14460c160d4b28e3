//! The noise model: a series' own run-to-run variation, measured as the pooled spread of
//! the runs either side of a candidate change, and Student's t-test against it.
//!
//! A within-run interval is left out on purpose: it measures sampling noise inside one run,
//! not the run-to-run variation (placement, warm caches, neighbours) that a trend must see
//! through.

use std::f64::consts::PI;

/// Mean and sum of squared deviations.
pub fn moments(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let ss = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>();
    (mean, ss)
}

pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The two-sided p-value of Student's t-test (pooled variance) that `left` and `right`
/// share a mean; 1 when either side is empty or there is no degree of freedom.
pub fn t_test(left: &[f64], right: &[f64]) -> f64 {
    let (n1, n2) = (left.len(), right.len());
    if n1 == 0 || n2 == 0 || n1 + n2 < 3 {
        return 1.0;
    }
    let (m1, ss1) = moments(left);
    let (m2, ss2) = moments(right);
    let df = (n1 + n2 - 2) as f64;
    let pooled = (ss1 + ss2) / df;
    let se = (pooled * (1.0 / n1 as f64 + 1.0 / n2 as f64)).sqrt();
    if se == 0.0 || !se.is_finite() {
        // No run-to-run noise at all: any difference is real.
        return if m1 == m2 { 1.0 } else { 0.0 };
    }
    let t = (m1 - m2) / se;
    student_two_sided(t, df)
}

/// `P(|T| ≥ |t|)` for Student's t with `df` degrees of freedom.
pub fn student_two_sided(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    beta_regularized(df / 2.0, 0.5, df / (df + t * t))
}

/// `(after − before) / |before|`; infinite when a zero level moves.
pub fn relative(before: f64, after: f64) -> f64 {
    if before == 0.0 {
        if after == 0.0 { 0.0 } else { f64::INFINITY }
    } else {
        (after - before) / before.abs()
    }
}

/// `ln Γ(x)` by Lanczos' approximation (g = 7, nine terms).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (PI / (PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let a = C[1..]
        .iter()
        .enumerate()
        .fold(C[0], |a, (i, c)| a + c / (x + i as f64 + 1.0));
    0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function `I_x(a, b)`.
fn beta_regularized(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function, by Lentz's method.
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let nonzero = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / nonzero(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..300 {
        let m = f64::from(m);
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / nonzero(1.0 + even * d);
        c = nonzero(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / nonzero(1.0 + odd * d);
        c = nonzero(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-14 {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_matches_published_critical_values() {
        // Two-sided critical values from standard t tables.
        for (t, df, p) in [
            (2.086, 20.0, 0.05),
            (3.850, 20.0, 0.001),
            (12.706, 1.0, 0.05),
            (2.576, 1e6, 0.01),
            (3.646, 17.0, 0.002),
        ] {
            let got = student_two_sided(t, df);
            assert!((got - p).abs() < p * 0.01, "t={t} df={df}: {got} vs {p}");
        }
        assert_eq!(student_two_sided(0.0, 10.0), 1.0);
    }

    #[test]
    fn t_test_sees_a_clear_shift_and_not_an_equal_one() {
        let left = [10.0, 10.2, 9.9, 10.1, 9.8, 10.0];
        let right = [11.5, 11.4, 11.6, 11.5];
        assert!(t_test(&left, &right) < 1e-6);
        assert!(t_test(&left, &[10.0, 10.1, 9.9]) > 0.5);
        assert_eq!(t_test(&[1.0, 1.0], &[2.0, 2.0]), 0.0);
        assert_eq!(t_test(&[1.0], &[]), 1.0);
    }

    #[test]
    fn relative_change_from_zero_is_infinite() {
        assert_eq!(relative(0.0, 0.0), 0.0);
        assert!(relative(0.0, 0.1).is_infinite());
        assert!((relative(2.0, 2.3) - 0.15).abs() < 1e-12);
    }
}
