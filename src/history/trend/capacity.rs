//! A capacity series' levels and changes. Each run gives one capacity with an interval from
//! its own search's probes, not a sample of run-to-run noise, so a change is called the way
//! `compare` calls one between two runs (only when the intervals part), between the current
//! level's pooled interval and each new run's, and only when it moves the capacity by at
//! least the minimum effect.

use super::shape::{ChangePoint, Evidence, Level, Verdict, eligible};
use super::split::Settings;
use super::stats::{mean, relative};
use crate::history::series::Point;
use crate::report::model::search::{CapacityVerdict, by_intervals};

/// The runs of the level so far.
struct Current {
    /// Index of its first point (the segment's start for the first level).
    from: usize,
    values: Vec<f64>,
    /// From the lowest to the highest end of its runs' intervals: a new run parts from it
    /// only when its interval parts from every run's of the level.
    pooled: [f64; 2],
}

/// Levels and changes of the capacities `points[from..to]`: only plain answers (a closed
/// interval, an eligible run) enter; lower bounds and indeterminate searches are drawn only.
pub fn segment(
    points: &[Point],
    from: usize,
    to: usize,
    settings: &Settings,
) -> (Vec<Level>, Vec<ChangePoint>) {
    let mut levels = Vec::new();
    let mut changes = Vec::new();
    let mut current: Option<Current> = None;
    for (i, p) in points.iter().enumerate().take(to).skip(from) {
        let Some((lo, hi)) = p.interval.filter(|_| eligible(p)) else {
            continue;
        };
        let interval = [lo, hi];
        let Some(level) = current.as_mut() else {
            current = Some(Current {
                from,
                values: vec![p.value],
                pooled: interval,
            });
            continue;
        };
        let before = mean(&level.values);
        let large = relative(before, p.value).abs() >= settings.min_effect;
        let verdict = match by_intervals(level.pooled, interval) {
            CapacityVerdict::Lower if large => Verdict::Regression,
            CapacityVerdict::Higher if large => Verdict::Improvement,
            _ => {
                level.values.push(p.value);
                level.pooled = [level.pooled[0].min(lo), level.pooled[1].max(hi)];
                continue;
            }
        };
        levels.push(Level {
            from: level.from,
            to: i,
            mean: before,
        });
        changes.push(ChangePoint {
            at: i,
            run: p.run.clone(),
            before,
            after: p.value,
            evidence: Evidence::IntervalsApart {
                level: level.pooled,
                run: interval,
            },
            verdict,
            conditions: Vec::new(),
        });
        current = Some(Current {
            from: i,
            values: vec![p.value],
            pooled: interval,
        });
    }
    if let Some(level) = current {
        levels.push(Level {
            from: level.from,
            to,
            mean: mean(&level.values),
        });
    }
    // A change's `after` is the level it starts, as for the other series.
    for (change, level) in changes.iter_mut().zip(levels.iter().skip(1)) {
        change.after = level.mean;
    }
    (levels, changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::searches::{CAPACITY, SearchAnswer};
    use crate::history::series::SeriesKey;
    use crate::history::synthetic::point;
    use crate::history::trend::analyse;

    fn capacity(n: usize, value: f64, hi: f64, answer: SearchAnswer) -> Point {
        Point {
            interval: Some((value, hi)),
            search: Some(answer),
            ..point(n, value)
        }
    }

    fn key() -> SeriesKey {
        SeriesKey {
            plan: "p".into(),
            phase: "capacity".into(),
            target: "sim".into(),
            figure: CAPACITY.into(),
        }
    }

    #[test]
    fn one_run_whose_interval_lies_below_the_level_is_a_regression() {
        let mut points: Vec<Point> = (1..=3)
            .map(|n| capacity(n, 8.0, 9.0, SearchAnswer::Answer))
            .collect();
        points.push(capacity(4, 4.0, 5.0, SearchAnswer::Answer));
        let trend = analyse(&key(), points, &Settings::default());
        let changes: Vec<_> = trend.changes().collect();
        assert_eq!(changes.len(), 1, "{trend:#?}");
        assert_eq!(changes[0].verdict, Verdict::Regression);
        assert_eq!((changes[0].before, changes[0].after), (8.0, 4.0));
        assert_eq!(changes[0].run, "run-0004");
        assert_eq!(
            changes[0].evidence,
            Evidence::IntervalsApart {
                level: [8.0, 9.0],
                run: [4.0, 5.0]
            }
        );
        assert_eq!(trend.segments[0].levels.len(), 2);
    }

    #[test]
    fn overlapping_intervals_small_moves_and_lower_bounds_change_nothing() {
        let points = vec![
            capacity(1, 8.0, 9.0, SearchAnswer::Answer),
            // Touching the level's interval: no change told.
            capacity(2, 9.0, 10.0, SearchAnswer::Answer),
            // Apart from [8, 10], but 8% under the level's 8.5: less than the minimum effect.
            capacity(3, 7.8, 7.95, SearchAnswer::Answer),
            // Far below, but only a lower bound, then a search that could not tell.
            capacity(4, 2.0, 3.0, SearchAnswer::LowerBound),
            capacity(5, 2.0, 3.0, SearchAnswer::Indeterminate),
        ];
        let trend = analyse(&key(), points, &Settings::default());
        assert_eq!(trend.changes().count(), 0, "{trend:#?}");
        assert_eq!(trend.segments[0].levels.len(), 1);
    }

    #[test]
    fn a_return_above_the_fallen_level_is_an_improvement() {
        let points = vec![
            capacity(1, 8.0, 9.0, SearchAnswer::Answer),
            capacity(2, 4.0, 5.0, SearchAnswer::Answer),
            capacity(3, 8.0, 9.0, SearchAnswer::Answer),
        ];
        let trend = analyse(&key(), points, &Settings::default());
        let verdicts: Vec<Verdict> = trend.changes().map(|c| c.verdict).collect();
        assert_eq!(verdicts, [Verdict::Regression, Verdict::Improvement]);
    }
}
