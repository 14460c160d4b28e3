//! Why a change was not tested, what a phase would need for its untested percentiles, and the
//! comparison's tally of regressions, improvements and untestable figures.

use serde::Serialize;

use super::MetricChange;
use crate::metrics;
use crate::report::model::figure_path::{FigurePath, Scalar, Unit};

/// Why a change's significance was not tested: by design (a count, a rate over the phase),
/// or because the runs did not allow it. Serialized as the `note` string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Untested {
    /// A percentile with too few samples on a side for its interval.
    #[serde(rename = "too few samples")]
    TooFewSamples,
    /// A side was client-bound: its latencies hold client delay.
    #[serde(rename = "client-bound: not tested")]
    ClientBound,
    /// A latency across a cache ratio that moved beyond the bound.
    #[serde(rename = "cache ratio moved: not tested")]
    CacheMoved,
    /// A figure that can be tested, but neither side has records or intervals for it.
    #[serde(rename = "no records or intervals")]
    NoRecordsOrIntervals,
    /// A count (requests, errors, tokens): one number per run, nothing to resample.
    #[serde(rename = "a count")]
    Count,
    /// A rate or share over the whole phase (throughput): one number per run.
    #[serde(rename = "one value per phase")]
    OneValuePerPhase,
}

impl Untested {
    /// Never tested, whatever the runs: not a gap in the evidence.
    pub fn by_design(self) -> bool {
        matches!(self, Untested::Count | Untested::OneValuePerPhase)
    }

    /// The *Significant* cell.
    pub fn cell(self) -> &'static str {
        match self {
            Untested::TooFewSamples => "n/a (too few samples)",
            Untested::ClientBound => "n/a (client-bound: not tested)",
            Untested::CacheMoved => "n/a (cache ratio moved: not tested)",
            Untested::NoRecordsOrIntervals => "n/a (no records or intervals)",
            Untested::Count => "not tested (a count)",
            Untested::OneValuePerPhase => "not tested (one value per phase)",
        }
    }
}

/// Why a metric is never tested: a count or a single figure over the phase has no sample to
/// resample; `None` for the figures that can be tested.
pub(super) fn untested_by_design(metric: FigurePath) -> Option<Untested> {
    match metric {
        FigurePath::Dist(..) | FigurePath::Scalar(Scalar::ErrorRate) => None,
        FigurePath::Scalar(_) if matches!(metric.unit(), Unit::Count | Unit::Tokens) => {
            Some(Untested::Count)
        }
        FigurePath::Scalar(_) => Some(Untested::OneValuePerPhase),
    }
}

/// A phase's percentiles left untested for too few samples, and how long a phase would make
/// them testable at the rates the two sides ran at.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TooFewSamples {
    /// The figures, in table order (`ttft.p99`, …).
    pub figures: Vec<String>,
    /// Samples a side needs for the highest percentile named (72 for p95, 368 for p99).
    pub samples_needed: u64,
    /// Measured requests a side would need, at each side's samples per request.
    pub requests_needed: Option<u64>,
    /// Seconds of measured window a side would need, at the slower side's rate.
    pub seconds_needed: Option<f64>,
}

/// One side of a phase as the estimate needs it: requests and seconds of its window.
#[derive(Debug, Clone, Copy)]
pub(super) struct SideRate {
    pub requests: u64,
    pub elapsed: f64,
}

/// The too-few-samples gap of one phase's changes, `None` when it has none.
pub(super) fn too_few_samples(
    changes: &[MetricChange],
    sides: [SideRate; 2],
    quantile_of: impl Fn(&str) -> Option<f64>,
) -> Option<TooFewSamples> {
    let mut figures = Vec::new();
    let mut samples_needed = 0;
    let (mut requests_needed, mut seconds_needed) = (None::<u64>, None::<f64>);
    for m in changes
        .iter()
        .filter(|m| m.note == Some(Untested::TooFewSamples))
    {
        let Some(q) = quantile_of(&m.metric) else {
            continue;
        };
        let need = metrics::min_samples_for_interval(q);
        figures.push(m.metric.clone());
        samples_needed = samples_needed.max(need);
        let Some(samples) = m.samples else {
            continue;
        };
        for (have, side) in samples.into_iter().zip(sides) {
            if have == 0 || side.elapsed <= 0.0 {
                continue;
            }
            // Samples per request (a TPOT needs two tokens) and per second, as this side ran.
            let requests = (need as f64 * side.requests as f64 / have as f64).ceil() as u64;
            let seconds = need as f64 * side.elapsed / have as f64;
            requests_needed = Some(requests_needed.map_or(requests, |r| r.max(requests)));
            seconds_needed = Some(seconds_needed.map_or(seconds, |s| s.max(seconds)));
        }
    }
    (!figures.is_empty()).then_some(TooFewSamples {
        figures,
        samples_needed,
        requests_needed,
        seconds_needed,
    })
}

/// What the comparison found, counted over every compared phase (a model mix's per-model
/// rows included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Tally {
    /// Significant changes for the worse.
    pub regressions: usize,
    /// Significant changes for the better.
    pub improvements: usize,
    /// Figures that could have been tested but were not (too few samples, no records, a
    /// client-bound side, a moved cache ratio).
    pub not_testable: usize,
}

impl Tally {
    pub(super) fn add(&mut self, m: &MetricChange) {
        // A count is never tested, whatever note a client-bound side put on it.
        let testable = m
            .metric
            .parse::<FigurePath>()
            .is_ok_and(|f| untested_by_design(f).is_none());
        match (m.significant, m.worse()) {
            (Some(true), Some(true)) => self.regressions += 1,
            (Some(true), Some(false)) => self.improvements += 1,
            (None, _) if testable => self.not_testable += 1,
            _ => {}
        }
    }
}
