//! Recovery after a fault: the outage window and the time to recover, from requests binned
//! by start time and compared with the pre-fault baseline.
//!
//! A bin is *outside* tolerance when its error rate exceeds the baseline's by more than
//! `error_rate_tolerance`, or its TTFT p50 exceeds the baseline's by more than
//! `ttft_tolerance` (relative). The outage runs from the first failing request of the first
//! outside bin at or after the fault-on mark to the first good request after the last outside
//! bin; recovery is `sustain_bins` inside bins in a row after the fault-off mark.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::PercentileMethod;

/// Fewest pre-fault requests that make a baseline; with fewer the previous phase is used.
pub const MIN_BASELINE_REQUESTS: u64 = 20;

/// One request as recovery needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecoverySample {
    /// Request start, seconds from the phase's measured start.
    pub start_s: f64,
    pub ok: bool,
    pub ttft_ms: Option<f64>,
}

/// How the outage is told from normal noise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecoverySettings {
    /// Bin width, seconds.
    pub bin_s: f64,
    /// Error rate allowed above the baseline's (absolute, 0–1).
    pub error_rate_tolerance: f64,
    /// TTFT p50 allowed above the baseline's (relative: 0.5 is 50% above).
    pub ttft_tolerance: f64,
    /// Inside bins in a row that count as recovered.
    pub sustain_bins: u32,
}

impl Default for RecoverySettings {
    fn default() -> Self {
        RecoverySettings {
            bin_s: 0.25,
            error_rate_tolerance: 0.05,
            ttft_tolerance: 0.5,
            sustain_bins: 2,
        }
    }
}

/// What "normal" was before the fault.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Baseline {
    /// `pre-fault` (this phase before the fault-on mark) or `previous phase`.
    pub source: String,
    pub requests: u64,
    pub error_rate: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p50_ms: Option<f64>,
}

/// One bin of the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecoveryBin {
    /// Bin start, seconds from the phase's measured start.
    pub start_s: f64,
    pub requests: u64,
    pub errors: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p50_ms: Option<f64>,
    /// Outside tolerance of the baseline.
    pub outside: bool,
}

/// A phase's outage and recovery around its fault marks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Recovery {
    /// The fault-on mark, seconds from the phase's measured start.
    pub fault_on_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_off_s: Option<f64>,
    pub baseline: Baseline,
    pub settings: RecoverySettings,
    /// The outage seen by the client; absent when no bin left tolerance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage_start_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage_end_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage_s: Option<f64>,
    /// From the fault-off mark until requests were back within tolerance; absent when they
    /// never were before the phase ended (or there is no fault-off mark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_recover_s: Option<f64>,
    pub bins: Vec<RecoveryBin>,
}

/// The baseline of a set of requests, or `None` when there are too few.
pub fn baseline(samples: &[RecoverySample], source: &str) -> Option<Baseline> {
    let requests = samples.len() as u64;
    if requests < MIN_BASELINE_REQUESTS {
        return None;
    }
    let errors = samples.iter().filter(|s| !s.ok).count() as u64;
    Some(Baseline {
        source: source.to_string(),
        requests,
        error_rate: errors as f64 / requests as f64,
        ttft_p50_ms: ttft_p50(samples.iter()),
    })
}

fn ttft_p50<'a>(samples: impl Iterator<Item = &'a RecoverySample>) -> Option<f64> {
    let mut ttft: Vec<f64> = samples
        .filter(|s| s.ok)
        .filter_map(|s| s.ttft_ms)
        .filter(|t| t.is_finite())
        .collect();
    ttft.sort_by(f64::total_cmp);
    let p50 = super::percentile(&ttft, 0.5, PercentileMethod::Linear);
    p50.is_finite().then_some(p50)
}

/// The outage and recovery of `samples` (any order) around the marks. The baseline is the
/// requests before `fault_on_s` when there are enough of them, else `previous`.
pub fn recovery(
    samples: &[RecoverySample],
    fault_on_s: f64,
    fault_off_s: Option<f64>,
    previous: Option<Baseline>,
    settings: RecoverySettings,
) -> Option<Recovery> {
    let mut samples = samples.to_vec();
    samples.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    let before: Vec<RecoverySample> = samples
        .iter()
        .copied()
        .filter(|s| s.start_s < fault_on_s)
        .collect();
    let base = baseline(&before, "pre-fault").or(previous)?;
    let judge = Judge {
        base: &base,
        settings,
    };
    let bins = judge.bins(&samples);
    let first_bin = (fault_on_s.max(0.0) / settings.bin_s).floor() as usize;
    let mut recovery = Recovery {
        fault_on_s,
        fault_off_s,
        baseline: base.clone(),
        settings,
        outage_start_s: None,
        outage_end_s: None,
        outage_s: None,
        time_to_recover_s: None,
        bins: Vec::new(),
    };
    let off_bin = fault_off_s.map(|off| (off.max(0.0) / settings.bin_s).floor() as usize);
    let first_bad = (first_bin..bins.len()).find(|&i| bins[i].outside);
    let search_from = first_bad
        .map_or(first_bin, |i| i + 1)
        .max(off_bin.unwrap_or(0));
    let recovered_bin = judge.recovered_from(&bins, search_from);
    if let Some(first_bad) = first_bad {
        let last_bad = (first_bad..recovered_bin.unwrap_or(bins.len()))
            .rev()
            .find(|&i| bins[i].outside)
            .unwrap_or(first_bad);
        let start = judge.first_failing(&samples, first_bad);
        let end = judge.first_good_after_last_failing(&samples, last_bad);
        recovery.outage_start_s = Some(start);
        recovery.outage_end_s = Some(end);
        recovery.outage_s = Some(end - start);
    }
    if let (Some(off), Some(_)) = (fault_off_s, recovered_bin) {
        let back = recovery.outage_end_s.map_or(off, |end| end.max(off));
        recovery.time_to_recover_s = Some(back - off);
    }
    recovery.bins = bins;
    Some(recovery)
}

/// Tells an outside request or bin from an inside one.
struct Judge<'a> {
    base: &'a Baseline,
    settings: RecoverySettings,
}

impl Judge<'_> {
    fn ttft_limit(&self) -> Option<f64> {
        self.base
            .ttft_p50_ms
            .map(|p50| p50 * (1.0 + self.settings.ttft_tolerance))
    }

    fn failing(&self, s: &RecoverySample) -> bool {
        !s.ok || matches!((s.ttft_ms, self.ttft_limit()), (Some(t), Some(limit)) if t > limit)
    }

    fn bin_of(&self, s: &RecoverySample) -> usize {
        (s.start_s.max(0.0) / self.settings.bin_s).floor() as usize
    }

    fn bins(&self, sorted: &[RecoverySample]) -> Vec<RecoveryBin> {
        let count = sorted.last().map_or(0, |s| self.bin_of(s) + 1);
        let mut grouped: Vec<Vec<RecoverySample>> = vec![Vec::new(); count];
        for s in sorted {
            grouped[self.bin_of(s)].push(*s);
        }
        grouped
            .iter()
            .enumerate()
            .map(|(i, group)| {
                let requests = group.len() as u64;
                let errors = group.iter().filter(|s| !s.ok).count() as u64;
                let ttft_p50_ms = ttft_p50(group.iter());
                let error_rate = errors as f64 / requests.max(1) as f64;
                let outside = requests > 0
                    && (error_rate > self.base.error_rate + self.settings.error_rate_tolerance
                        || matches!((ttft_p50_ms, self.ttft_limit()), (Some(t), Some(l)) if t > l));
                RecoveryBin {
                    start_s: i as f64 * self.settings.bin_s,
                    requests,
                    errors,
                    ttft_p50_ms,
                    outside,
                }
            })
            .collect()
    }

    /// The first bin from `from` that starts `sustain_bins` non-empty inside bins in a row.
    fn recovered_from(&self, bins: &[RecoveryBin], from: usize) -> Option<usize> {
        let run = self.settings.sustain_bins.max(1) as usize;
        (from..bins.len()).find(|&i| {
            i + run <= bins.len()
                && bins[i..i + run]
                    .iter()
                    .all(|b| b.requests > 0 && !b.outside)
        })
    }

    fn first_failing(&self, sorted: &[RecoverySample], bin: usize) -> f64 {
        sorted
            .iter()
            .find(|s| self.bin_of(s) == bin && self.failing(s))
            .map_or(bin as f64 * self.settings.bin_s, |s| s.start_s)
    }

    /// Where the outage ended: the first good request after the last failing one of `bin`.
    fn first_good_after_last_failing(&self, sorted: &[RecoverySample], bin: usize) -> f64 {
        let bin_end = (bin + 1) as f64 * self.settings.bin_s;
        let last_failing = sorted
            .iter()
            .rposition(|s| self.bin_of(s) == bin && self.failing(s));
        last_failing
            .and_then(|i| sorted[i + 1..].iter().find(|s| !self.failing(s)))
            .map_or(bin_end, |s| s.start_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request every 20 ms for `seconds`, failing in `[on, off)`.
    fn steady(seconds: f64, outage: Option<(f64, f64)>) -> Vec<RecoverySample> {
        (0..(seconds / 0.02) as usize)
            .map(|i| {
                let start_s = i as f64 * 0.02;
                let down = outage.is_some_and(|(on, off)| start_s >= on && start_s < off);
                RecoverySample {
                    start_s,
                    ok: !down,
                    ttft_ms: (!down).then_some(40.0 + (i % 5) as f64),
                }
            })
            .collect()
    }

    #[test]
    fn outage_and_recovery_follow_the_failing_requests() {
        let samples = steady(12.0, Some((3.01, 8.01)));
        let r = recovery(&samples, 3.0, Some(8.0), None, RecoverySettings::default()).unwrap();
        assert_eq!(r.baseline.source, "pre-fault");
        assert_eq!(r.baseline.error_rate, 0.0);
        let (start, end) = (r.outage_start_s.unwrap(), r.outage_end_s.unwrap());
        assert!((start - 3.02).abs() < 1e-9, "{start}");
        assert!((end - 8.02).abs() < 1e-9, "{end}");
        assert!((r.time_to_recover_s.unwrap() - 0.02).abs() < 1e-9);
        assert!(r.bins.iter().any(|b| b.outside));
    }

    #[test]
    fn slow_first_tokens_after_the_fault_delay_recovery() {
        let mut samples = steady(12.0, Some((3.0, 6.0)));
        // Queued work: first tokens stay slow for a second after the fault ends.
        for s in samples
            .iter_mut()
            .filter(|s| s.start_s >= 6.0 && s.start_s < 7.0)
        {
            s.ttft_ms = Some(400.0);
        }
        let r = recovery(&samples, 3.0, Some(6.0), None, RecoverySettings::default()).unwrap();
        let recover = r.time_to_recover_s.unwrap();
        assert!((recover - 1.0).abs() < 1e-9, "{recover}");
        assert!((r.outage_end_s.unwrap() - 7.0).abs() < 1e-9);
    }

    #[test]
    fn no_recovery_when_the_fault_outlasts_the_phase() {
        let samples = steady(6.0, Some((3.0, 99.0)));
        let r = recovery(&samples, 3.0, Some(5.0), None, RecoverySettings::default()).unwrap();
        assert!(r.time_to_recover_s.is_none());
        assert!(r.outage_start_s.is_some());
    }

    #[test]
    fn too_short_a_pre_fault_part_uses_the_previous_phase() {
        let samples = steady(4.0, Some((0.0, 2.0)));
        assert!(recovery(&samples, 0.0, Some(2.0), None, RecoverySettings::default()).is_none());
        let previous = baseline(&steady(2.0, None), "previous phase");
        let r = recovery(
            &samples,
            0.0,
            Some(2.0),
            previous,
            RecoverySettings::default(),
        )
        .unwrap();
        assert_eq!(r.baseline.source, "previous phase");
        assert_eq!(r.outage_start_s, Some(0.0));
        assert_eq!(r.time_to_recover_s, Some(0.0));
    }
}
