//! A phase's energy: a power gauge sampled through its window, integrated by the trapezoid
//! rule over the samples and clipped to the window; or why there is no figure (no gauge, or
//! samples too sparse for the window). docs/measurement.md states the rule.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::PhaseSummary;

/// The longest stretch of the window without a sample, as a share of the window, that still
/// gives a figure: a quarter, so at least five samples across it.
pub const MAX_GAP_SHARE: f64 = 0.25;

/// How the figure is computed, as the report states it.
pub const METHOD: &str = "trapezoid";

/// The power gauge as sampled during a measured window.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct PowerTrace {
    /// The gauge's name.
    pub metric: String,
    /// Whether the plan asked for it (`power:`); an unasked default gauge that no sample had
    /// gives no section rather than a "missing".
    pub asked: bool,
    /// Seconds between samples the plan asked for.
    pub interval_s: f64,
    /// `[seconds from the window's origin, watts summed over devices and endpoints]`.
    pub samples: Vec<[f64; 2]>,
    /// The most label sets (devices) one sample summed.
    pub devices: u64,
    /// Why nothing was sampled, when the window was not sampled at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_sampled: Option<String>,
}

/// A phase's energy, with how it was measured.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct PhaseEnergy {
    /// The power gauge it was read from.
    pub metric: String,
    /// `trapezoid`: the samples joined by straight lines, clipped to the window.
    pub method: String,
    /// Seconds between samples the plan asked for.
    pub interval_s: f64,
    /// Samples that fell within the window or bracket it.
    pub samples: u64,
    /// The most devices (label sets) one sample summed.
    pub devices: u64,
    /// The window integrated: the phase's `elapsed`.
    pub window_s: f64,
    /// The longest stretch of the window without a sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_gap_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joules: Option<f64>,
    /// `joules / window_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_watts: Option<f64>,
    /// `joules / total_output_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joules_per_output_token: Option<f64>,
    /// `joules / requests` (every request the window sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joules_per_request: Option<f64>,
    /// Why there is no figure: the gauge missing, or sampled too sparsely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// The area under the samples between `from` and `to`, and the longest stretch of that span
/// with no sample: the line through the samples, held flat before the first and after the
/// last, cut at the span's ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Integral {
    pub area: f64,
    pub max_gap: f64,
    /// Samples within the span or the nearest on either side of it.
    pub used: u64,
}

/// [`Integral`] of time-ordered `(t, value)` samples over `from..to`; `None` without samples
/// or with an empty span.
pub fn integrate(samples: &[[f64; 2]], from: f64, to: f64) -> Option<Integral> {
    if samples.is_empty() || to <= from {
        return None;
    }
    let at = |t: f64| value_at(samples, t);
    let mut line = vec![[from, at(from)]];
    line.extend(
        samples
            .iter()
            .filter(|[t, _]| *t > from && *t < to)
            .copied(),
    );
    line.push([to, at(to)]);
    let area = line
        .windows(2)
        .map(|w| (w[0][1] + w[1][1]) / 2.0 * (w[1][0] - w[0][0]))
        .sum();
    // Sampled instants in the span: a sample on or beyond an end counts as that end.
    let mut times: Vec<f64> = Vec::new();
    let before = samples.iter().rposition(|[t, _]| *t <= from);
    let after = samples.iter().position(|[t, _]| *t >= to);
    if before.is_some() {
        times.push(from);
    }
    times.extend(
        samples
            .iter()
            .map(|[t, _]| *t)
            .filter(|t| *t > from && *t < to),
    );
    if after.is_some() {
        times.push(to);
    }
    let mut edges = vec![from];
    edges.extend(&times);
    edges.push(to);
    let max_gap = edges.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    let used = times.len() as u64;
    Some(Integral {
        area,
        max_gap,
        used,
    })
}

/// The line through the samples at `t`, held at the first or last value outside them.
fn value_at(samples: &[[f64; 2]], t: f64) -> f64 {
    let next = samples.partition_point(|[s, _]| *s < t);
    match (
        next.checked_sub(1).map(|i| samples[i]),
        samples.get(next).copied(),
    ) {
        (Some([t0, v0]), Some([t1, v1])) if t1 > t0 => v0 + (v1 - v0) * (t - t0) / (t1 - t0),
        (_, Some([_, v])) | (Some([_, v]), None) => v,
        (None, None) => 0.0,
    }
}

/// The phase's energy over its window, `from` seconds after the window's origin for
/// `summary.elapsed` seconds; `None` when the plan did not ask and the gauge was not there.
pub fn phase_energy(trace: &PowerTrace, from: f64, summary: &PhaseSummary) -> Option<PhaseEnergy> {
    if !trace.asked && trace.samples.is_empty() {
        return None;
    }
    let window_s = summary.elapsed;
    let mut energy = PhaseEnergy {
        metric: trace.metric.clone(),
        method: METHOD.to_string(),
        interval_s: trace.interval_s,
        devices: trace.devices,
        window_s,
        ..PhaseEnergy::default()
    };
    let integral = integrate(&trace.samples, from, from + window_s);
    let Some(integral) = integral else {
        energy.unavailable = Some(match &trace.not_sampled {
            Some(why) => why.clone(),
            None if trace.samples.is_empty() => format!(
                "the gauge `{}` was in no sample of the target's metrics",
                trace.metric
            ),
            None => "the phase has no measured window".to_string(),
        });
        return Some(energy);
    };
    energy.samples = integral.used;
    energy.max_gap_s = Some(integral.max_gap);
    if integral.used < 2 || integral.max_gap > MAX_GAP_SHARE * window_s {
        energy.unavailable = Some(format!(
            "sampled too sparsely: {} samples, {:.2} s without one in a {:.2} s window \
             (at most {:.0}% of the window); set a shorter `metrics_interval`",
            integral.used,
            integral.max_gap,
            window_s,
            MAX_GAP_SHARE * 100.0
        ));
        return Some(energy);
    }
    let joules = integral.area;
    let per = |n: u64| (n > 0).then(|| joules / n as f64);
    energy.joules = Some(joules);
    energy.mean_watts = Some(joules / window_s);
    energy.joules_per_output_token = per(summary.total_output_tokens);
    energy.joules_per_request = per(summary.requests);
    Some(energy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ramp_integrates_exactly_and_is_cut_at_the_window() {
        // 100 W rising 10 W a second, sampled every second from -1 s to 11 s.
        let samples: Vec<[f64; 2]> = (-1..=11)
            .map(|t| [f64::from(t), 100.0 + 10.0 * f64::from(t)])
            .collect();
        let i = integrate(&samples, 0.5, 10.5).unwrap();
        // ∫ 100 + 10t from 0.5 to 10.5 = 1000 + 5·(110.25 − 0.25) = 1550 J.
        assert!((i.area - 1550.0).abs() < 1e-9, "{i:?}");
        assert_eq!(i.max_gap, 1.0);
        // 0.5 and 10.5 stand for the samples bracketing them, and 1..=10 lie within.
        assert_eq!(i.used, 12);
    }

    #[test]
    fn value_held_before_the_first_sample_counts_as_a_gap() {
        let samples = [[2.0, 50.0], [4.0, 50.0]];
        let i = integrate(&samples, 0.0, 4.0).unwrap();
        assert_eq!(i.area, 200.0);
        assert_eq!(i.max_gap, 2.0);
        assert_eq!(integrate(&[], 0.0, 1.0), None);
    }

    fn summary(elapsed: f64) -> PhaseSummary {
        PhaseSummary {
            elapsed,
            requests: 10,
            total_output_tokens: 400,
            ..PhaseSummary::default()
        }
    }

    #[test]
    fn figures_only_from_samples_dense_enough_for_the_window() {
        let trace = |samples: Vec<[f64; 2]>| PowerTrace {
            metric: "p".into(),
            asked: true,
            interval_s: 1.0,
            samples,
            devices: 2,
            not_sampled: None,
        };
        let steady: Vec<[f64; 2]> = (0..=8).map(|t| [f64::from(t), 200.0]).collect();
        let e = phase_energy(&trace(steady.clone()), 0.0, &summary(8.0)).unwrap();
        assert_eq!(e.joules, Some(1600.0));
        assert_eq!(e.mean_watts, Some(200.0));
        assert_eq!(e.joules_per_output_token, Some(4.0));
        assert_eq!(e.joules_per_request, Some(160.0));
        assert_eq!(e.unavailable, None);
        // Two seconds of an eight-second window is a quarter: still enough; three is not.
        let holed: Vec<[f64; 2]> = steady.iter().copied().filter(|[t, _]| *t != 3.0).collect();
        assert!(
            phase_energy(&trace(holed), 0.0, &summary(8.0))
                .unwrap()
                .joules
                .is_some()
        );
        let sparse = vec![[0.0, 200.0], [3.0, 200.0], [8.0, 200.0]];
        let e = phase_energy(&trace(sparse), 0.0, &summary(8.0)).unwrap();
        assert_eq!(e.joules, None);
        assert!(e.unavailable.unwrap().contains("too sparsely"));
        let missing = phase_energy(&trace(Vec::new()), 0.0, &summary(8.0)).unwrap();
        assert!(missing.unavailable.unwrap().contains("in no sample"));
        let unasked = PowerTrace {
            asked: false,
            ..trace(Vec::new())
        };
        assert_eq!(phase_energy(&unasked, 0.0, &summary(8.0)), None);
    }
}
