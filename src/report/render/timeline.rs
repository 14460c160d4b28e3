//! The HTML's charts of the server over each phase (`server_metrics.timeline`, sampled
//! during the window): requests running and waiting, KV-cache usage and prefix-cache hits,
//! and generated tokens per second.

use super::svg::{self, Series};
use crate::report::model::{MetricsPoint, Report};

/// Fewer points than this make no useful line (a short phase sampled at its two ends).
const MIN_POINTS: usize = 3;

/// Each phase with a time series long enough to plot, and its points.
pub fn plottable(report: &Report) -> impl Iterator<Item = (&str, &[MetricsPoint])> {
    report.phases.iter().filter_map(|p| {
        let points = &p.server_metrics.as_ref()?.timeline;
        (points.len() >= MIN_POINTS).then_some((p.header.phase.as_str(), points.as_slice()))
    })
}

/// The charts of every phase with a time series long enough to plot, each phase's in order;
/// a chart with nothing to draw is left out.
pub fn charts(report: &Report) -> Vec<String> {
    plottable(report)
        .flat_map(|(phase, points)| phase_charts(phase, points))
        .collect()
}

type Field = fn(&MetricsPoint) -> Option<f64>;

fn phase_charts(phase: &str, points: &[MetricsPoint]) -> Vec<String> {
    // A level as sampled.
    let line = |name: &str, field: Field, scale: f64| Series {
        name: name.to_string(),
        points: points
            .iter()
            .filter_map(|p| Some((p.t_s, field(p)? * scale)))
            .collect(),
    };
    let steps = |name: &str, field: Field, scale: f64| Series {
        name: name.to_string(),
        points: rate_steps(points, field, scale),
    };
    let charts: [(String, &str, Vec<Series>); 3] = [
        (
            format!("{phase}: requests on the server"),
            "requests",
            vec![
                line("running", |p| p.requests_running, 1.0),
                line("waiting", |p| p.requests_waiting, 1.0),
            ],
        ),
        (
            format!("{phase}: KV cache and prefix cache"),
            "percent",
            vec![
                line("KV-cache usage", |p| p.kv_cache_usage, 100.0),
                steps("prefix-cache hits", |p| p.prefix_cache_hit_rate, 100.0),
            ],
        ),
        (
            format!("{phase}: generated tokens per second"),
            "tok/s",
            vec![steps("generated", |p| p.generation_tok_s, 1.0)],
        ),
    ];
    charts
        .into_iter()
        .filter_map(|(title, unit, series)| {
            let series: Vec<Series> = series
                .into_iter()
                .filter(|s| !s.points.is_empty())
                .collect();
            (!series.is_empty()).then(|| {
                let x = "seconds into the measured window";
                svg::line_chart(&title, x, unit, false, false, &series)
            })
        })
        .collect()
}

/// A rate since the point before, level across the interval it covers.
fn rate_steps(points: &[MetricsPoint], field: Field, scale: f64) -> Vec<(f64, f64)> {
    points
        .windows(2)
        .filter_map(|w| Some((w[0].t_s, w[1].t_s, field(&w[1])? * scale)))
        .flat_map(|(t0, t1, v)| [(t0, v), (t1, v)])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_phases_with_enough_points_get_charts_and_only_of_what_they_have() {
        let mut report: Report = crate::report::sample_report();
        assert!(charts(&report).is_empty());
        let point = |t_s: f64| MetricsPoint {
            t_s,
            requests_running: Some(t_s),
            generation_tok_s: (t_s > 0.0).then_some(100.0),
            ..MetricsPoint::default()
        };
        let metrics = report.phases[0].server_metrics.get_or_insert_default();
        metrics.timeline = vec![point(0.0), point(1.0)];
        assert!(charts(&report).is_empty());
        let metrics = report.phases[0].server_metrics.as_mut().unwrap();
        metrics.timeline.push(point(2.0));
        let svg = charts(&report);
        assert_eq!(svg.len(), 2, "no KV or prefix cache: no chart of them");
        assert!(svg[0].contains("requests on the server"));
        assert!(svg[0].contains("running"));
        assert!(!svg[0].contains("waiting"));
        assert!(svg[1].contains("generated tokens per second"));
        let metrics = report.phases[0].server_metrics.as_mut().unwrap();
        metrics.timeline[2].kv_cache_usage = Some(0.5);
        let svg = charts(&report);
        assert_eq!(svg.len(), 3);
        assert!(svg[1].contains("KV-cache usage") && !svg[1].contains("prefix-cache hits"));
    }

    #[test]
    fn a_rate_spans_the_interval_it_was_taken_over() {
        let point = |t_s: f64, rate: Option<f64>| MetricsPoint {
            t_s,
            prefix_cache_hit_rate: rate,
            ..MetricsPoint::default()
        };
        let points = [
            point(0.0, None),
            point(1.0, Some(0.5)),
            point(2.5, Some(0.25)),
        ];
        let steps = rate_steps(&points, |p| p.prefix_cache_hit_rate, 100.0);
        assert_eq!(steps, [(0.0, 50.0), (1.0, 50.0), (1.0, 25.0), (2.5, 25.0)]);
    }
}
