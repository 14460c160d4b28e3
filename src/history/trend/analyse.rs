//! One series' trend: its segments (a change of asked-for work or deployment starts one),
//! the levels and change points inside each, and what each change means for the figure. A
//! capacity series' changes are called by its runs' intervals instead (`capacity`).

use super::conditions::{ConditionChange, across};
use super::detect::{Settings, change_points};
use crate::figure::{Better, Unit};
use crate::history::searches::{SearchAnswer, is_capacity};
use crate::history::series::{Point, RunId, SeriesKey};
use crate::report::model::figure_path::FigurePath;

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
const NEARBY: usize = 3;

/// Whether a point enters detection: not excluded, not partial, not client-bound (unless
/// [`analyse`] kept its late band as too narrow to matter), a number, and for a capacity, a
/// search that answered (not a lower bound, not indeterminate).
pub fn eligible(p: &Point) -> bool {
    p.excluded.is_none()
        && !p.partial
        && (!p.client_bound || p.conditions.late_band.is_some())
        && p.value.is_finite()
        && p.search.is_none_or(|a| a == SearchAnswer::Answer)
}

/// Whether the client's late share could have moved a percentile by no more than a tenth of
/// the minimum effect: both ends of its late band lie that close to its value.
pub fn late_band_narrow(p: &Point, min_effect: f64) -> bool {
    let tolerance = min_effect / 10.0 * p.value.abs();
    p.conditions.late_band.is_some_and(|(lo, hi)| {
        (lo - p.value).abs() <= tolerance && (hi - p.value).abs() <= tolerance
    })
}

/// The trend of one series.
pub fn analyse(key: &SeriesKey, mut points: Vec<Point>, settings: &Settings) -> SeriesTrend {
    // Only a narrow band keeps a client-bound point eligible; a wide one is dropped here.
    for p in points
        .iter_mut()
        .filter(|p| !late_band_narrow(p, settings.min_effect))
    {
        p.conditions.late_band = None;
    }
    let capacity = is_capacity(&key.figure);
    let path = key.figure.parse::<FigurePath>().ok();
    let better = match path {
        _ if capacity => Better::Higher,
        Some(path) => path.better(),
        None => Better::Neither,
    };
    let latency = path.is_some_and(|p| matches!(p.unit(), Unit::Seconds | Unit::Millis));
    let mut segments = Vec::new();
    let mut from = 0;
    while from < points.len() {
        let first = &points[from];
        let to = (from..points.len())
            .find(|&i| points[i].work != first.work || points[i].deployment != first.deployment)
            .unwrap_or(points.len());
        let start = match from.checked_sub(1).map(|i| &points[i]) {
            None => SegmentStart::First,
            Some(prev) => match (prev.work != first.work, prev.deployment != first.deployment) {
                (true, true) => SegmentStart::WorkAndDeployment,
                (true, false) => SegmentStart::Work,
                _ => SegmentStart::Deployment,
            },
        };
        let (levels, changes) = if capacity {
            super::capacity::segment(&points, from, to, settings)
        } else {
            segment(&points, from, to, better, latency, settings)
        };
        segments.push(Segment {
            from,
            to,
            start,
            levels,
            changes,
        });
        from = to;
    }
    SeriesTrend {
        key: key.clone(),
        better,
        latency,
        points,
        segments,
    }
}

/// Levels and changes of points `from..to`, detected over their eligible points only.
fn segment(
    points: &[Point],
    from: usize,
    to: usize,
    better: Better,
    latency: bool,
    settings: &Settings,
) -> (Vec<Level>, Vec<ChangePoint>) {
    let used: Vec<usize> = (from..to).filter(|&i| eligible(&points[i])).collect();
    let values: Vec<f64> = used.iter().map(|&i| points[i].value).collect();
    let splits = change_points(&values, settings);
    // Level boundaries as point indices: a level runs up to its next change's first run.
    let mut bounds = vec![from];
    bounds.extend(splits.iter().map(|s| used[s.at]));
    bounds.push(to);
    let mut cuts = vec![0];
    cuts.extend(splits.iter().map(|s| s.at));
    cuts.push(values.len());
    let levels = (0..bounds.len() - 1)
        .filter(|&i| cuts[i] < cuts[i + 1])
        .map(|i| Level {
            from: bounds[i],
            to: bounds[i + 1],
            mean: super::stats::mean(&values[cuts[i]..cuts[i + 1]]),
        })
        .collect();
    let changes = splits
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let pick = |range: std::ops::Range<usize>| -> Vec<&Point> {
                used[range].iter().map(|&j| &points[j]).collect()
            };
            let before = pick(cuts[i]..s.at);
            let after = pick(s.at..cuts[i + 2]);
            // Runs next to the change, whatever their state.
            let near = bounds[i + 1];
            let around = &points
                [near.saturating_sub(NEARBY).max(bounds[i])..(near + NEARBY).min(bounds[i + 2])];
            let conditions = across(&before, &after, around);
            ChangePoint {
                at: used[s.at],
                run: points[used[s.at]].run.clone(),
                before: s.before,
                after: s.after,
                evidence: Evidence::TTest { p_value: s.p_value },
                verdict: verdict(s.before, s.after, better, latency, &conditions),
                conditions,
            }
        })
        .collect();
    (levels, changes)
}

fn verdict(
    before: f64,
    after: f64,
    better: Better,
    latency: bool,
    conditions: &[ConditionChange],
) -> Verdict {
    if latency && conditions.iter().any(ConditionChange::explains_latency) {
        return Verdict::ConditionChanged;
    }
    match better {
        Better::Neither => Verdict::Unranked,
        Better::Lower if after > before => Verdict::Regression,
        Better::Higher if after < before => Verdict::Regression,
        Better::Lower | Better::Higher => Verdict::Improvement,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::synthetic::point;

    fn key() -> SeriesKey {
        SeriesKey {
            plan: "p".into(),
            phase: "c4".into(),
            target: "sim".into(),
            figure: "ttft.p99".into(),
        }
    }

    /// Run `n` at `value`, client-bound with its late band `spread` either side.
    fn client_bound(n: usize, value: f64, spread: f64) -> Point {
        let mut p = point(n, value);
        p.client_bound = true;
        p.conditions.late_band = Some((value * (1.0 - spread), value * (1.0 + spread)));
        p
    }

    #[test]
    fn a_client_bound_run_stays_in_only_while_its_late_band_is_narrow() {
        let settings = Settings::default();
        let tenth = settings.min_effect / 10.0;
        let points = vec![
            point(0, 1.0),
            client_bound(1, 1.0, tenth * 0.5),
            client_bound(2, 1.0, tenth * 2.0),
            // Narrow on one side is not enough.
            Point {
                conditions: crate::history::Conditions {
                    late_band: Some((1.0, 1.0 + tenth * 3.0)),
                    ..Default::default()
                },
                ..client_bound(3, 1.0, 0.0)
            },
        ];
        let trend = analyse(&key(), points, &settings);
        let kept: Vec<bool> = trend.points.iter().map(eligible).collect();
        assert_eq!(kept, [true, true, false, false]);
        // The kept point is still marked client-bound.
        assert!(trend.points[1].client_bound);
        // Analysed again (as alerts do with a prefix), the verdicts stand.
        let again = analyse(&key(), trend.points.clone(), &settings);
        assert_eq!(again.points.iter().map(eligible).collect::<Vec<_>>(), kept);
    }

    #[test]
    fn a_client_bound_run_without_a_band_is_left_out() {
        let mut p = point(0, 1.0);
        p.client_bound = true;
        let trend = analyse(&key(), vec![p], &Settings::default());
        assert!(!eligible(&trend.points[0]));
    }
}
