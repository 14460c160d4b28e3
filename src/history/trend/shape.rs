//! What a trend is made of: a series' segments of comparable runs, their levels, the changes
//! between them with what each rests on, and which points enter detection.

use super::conditions::ConditionChange;
use super::split::Settings;
use crate::figure::Better;
use crate::history::searches::{SearchAnswer, is_capacity};
use crate::history::series::{Point, RunId, SeriesKey};

/// Why a segment starts where it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentStart {
    /// The series' first run.
    First,
    Work,
    Deployment,
    WorkAndDeployment,
}

/// What a change point means for its figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Regression,
    Improvement,
    /// The figure has no better direction (token counts, elapsed).
    Unranked,
    /// A latency change across a cache ratio that moved beyond the bound.
    ConditionChanged,
}

/// What a change point rests on.
#[derive(Debug, Clone, PartialEq)]
pub enum Evidence {
    /// Student's t between the runs of the levels either side.
    TTest { p_value: f64 },
    /// A capacity: the run's interval lies wholly beyond the level's pooled interval (from
    /// the lowest to the highest end of its runs' intervals).
    IntervalsApart { level: [f64; 2], run: [f64; 2] },
}

/// A level shift inside a segment.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangePoint {
    /// Index into the series' points of the first run of the new level.
    pub at: usize,
    pub run: RunId,
    pub before: f64,
    pub after: f64,
    pub evidence: Evidence,
    pub verdict: Verdict,
    pub conditions: Vec<ConditionChange>,
}

impl ChangePoint {
    pub fn relative(&self) -> f64 {
        super::stats::relative(self.before, self.after)
    }
}

/// A stretch of comparable runs at one level: points `from..to`.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub from: usize,
    pub to: usize,
    pub mean: f64,
}

/// Runs with the same asked-for work and deployment: points `from..to`.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub from: usize,
    pub to: usize,
    pub start: SegmentStart,
    pub levels: Vec<Level>,
    pub changes: Vec<ChangePoint>,
}

/// A series with its segments, levels and changes.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesTrend {
    pub key: SeriesKey,
    pub better: Better,
    /// Whether the figure is a latency (a cache ratio change explains it).
    pub latency: bool,
    pub points: Vec<Point>,
    pub segments: Vec<Segment>,
}

impl SeriesTrend {
    pub fn changes(&self) -> impl Iterator<Item = &ChangePoint> {
        self.segments.iter().flat_map(|s| s.changes.iter())
    }

    /// Eligible runs a change in the latest segment needs before it can be found: the
    /// runs either side of a change, or for a capacity, one run for the level and one more.
    pub fn runs_to_test(&self, settings: &Settings) -> usize {
        if is_capacity(&self.key.figure) {
            2
        } else {
            2 * settings.min_points
        }
    }

    /// Whether the latest segment (the runs since the series' first run or its last change
    /// of work or deployment) has the eligible runs a change needs to be found in it.
    pub fn testable(&self, settings: &Settings) -> bool {
        self.segments.last().is_none_or(|s| {
            self.points[s.from..s.to]
                .iter()
                .filter(|p| eligible(p))
                .count()
                >= self.runs_to_test(settings)
        })
    }

    /// The segment holding point `index`.
    pub fn segment_of(&self, index: usize) -> Option<&Segment> {
        self.segments
            .iter()
            .find(|s| s.from <= index && index < s.to)
    }
}

/// How many runs either side of a change count as next to it.
pub(super) const NEARBY: usize = 3;

/// Whether a point enters detection: not excluded, not partial, not client-bound (unless
/// [`analyse`] kept its late band as too narrow to matter), a number, and for a capacity, a
/// search that answered (not a lower bound, not indeterminate).
pub fn eligible(p: &Point) -> bool {
    p.excluded.is_none()
        && !p.partial
        && (!p.client_bound || p.late_band.is_some())
        && p.value.is_finite()
        && p.search.is_none_or(|a| a == SearchAnswer::Answer)
}

/// Whether the client's late share could have moved a percentile by no more than a tenth of
/// the minimum effect: both ends of its late band lie that close to its value.
pub fn late_band_narrow(p: &Point, min_effect: f64) -> bool {
    let tolerance = min_effect / 10.0 * p.value.abs();
    p.late_band.is_some_and(|(lo, hi)| {
        (lo - p.value).abs() <= tolerance && (hi - p.value).abs() <= tolerance
    })
}
