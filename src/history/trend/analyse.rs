//! One series' trend: its segments (a change of asked-for work or deployment starts one),
//! the levels and change points inside each, and what each change means for the figure. A
//! capacity series' changes are called by its runs' intervals instead (`capacity`).

use super::conditions::{ConditionChange, across};
use super::detect::change_points;
use super::shape::{
    ChangePoint, Evidence, Level, NEARBY, Segment, SegmentStart, SeriesTrend, Verdict, eligible,
    late_band_narrow,
};
use super::split::Settings;
use crate::figure::{Better, Unit};
use crate::history::searches::is_capacity;
use crate::history::series::{Point, SeriesKey};
use crate::report::model::figure_path::FigurePath;

/// The trend of each of `series`, in their order, on as many threads as the machine has
/// cores: a plan's series are independent, and a thousand runs of them take a second on one.
pub fn analyse_each(series: Vec<(SeriesKey, Vec<Point>)>, settings: &Settings) -> Vec<SeriesTrend> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(series.len());
    if threads <= 1 {
        return series
            .into_iter()
            .map(|(key, points)| analyse(&key, points, settings))
            .collect();
    }
    let per_thread = series.len().div_ceil(threads);
    let mut parts = Vec::with_capacity(threads);
    let mut rest = series;
    while rest.len() > per_thread {
        let tail = rest.split_off(per_thread);
        parts.push(rest);
        rest = tail;
    }
    parts.push(rest);
    std::thread::scope(|scope| {
        let running: Vec<_> = parts
            .into_iter()
            .map(|part| {
                scope.spawn(move || {
                    part.into_iter()
                        .map(|(key, points)| analyse(&key, points, settings))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        running
            .into_iter()
            .flat_map(|t| {
                t.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// The trend of one series.
pub fn analyse(key: &SeriesKey, mut points: Vec<Point>, settings: &Settings) -> SeriesTrend {
    // Only a narrow band keeps a client-bound point eligible; a wide one is dropped here.
    for p in points
        .iter_mut()
        .filter(|p| !late_band_narrow(p, settings.min_effect))
    {
        p.late_band = None;
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
        p.facts_mut().client_bound = true;
        p.late_band = Some((value * (1.0 - spread), value * (1.0 + spread)));
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
                late_band: Some((1.0, 1.0 + tenth * 3.0)),
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
    fn series_analysed_on_several_threads_come_back_in_order_as_one_by_one() {
        let settings = Settings::default();
        let series: Vec<(SeriesKey, Vec<Point>)> = (0..7)
            .map(|s| {
                let key = SeriesKey {
                    figure: format!("ttft.p{}", 90 + s),
                    ..key()
                };
                // A step at a different run in each series, so their trends differ.
                let points = (0..30)
                    .map(|n| {
                        point(
                            n,
                            if n < 10 + s { 1.0 } else { 1.5 } + (n % 3) as f64 * 0.01,
                        )
                    })
                    .collect();
                (key, points)
            })
            .collect();
        let one_by_one: Vec<SeriesTrend> = series
            .iter()
            .map(|(key, points)| analyse(key, points.clone(), &settings))
            .collect();
        assert_eq!(analyse_each(series, &settings), one_by_one);
        assert!(analyse_each(Vec::new(), &settings).is_empty());
    }

    #[test]
    fn a_client_bound_run_without_a_band_is_left_out() {
        let mut p = point(0, 1.0);
        p.facts_mut().client_bound = true;
        let trend = analyse(&key(), vec![p], &Settings::default());
        assert!(!eligible(&trend.points[0]));
    }
}
