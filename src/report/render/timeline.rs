//! The HTML's charts of a phase's server time series (`server_metrics.timeline`, from the
//! target's `metrics_interval`): requests running and waiting, and the request rate.

use super::svg::{self, Series};
use crate::report::model::{MetricsPoint, Report};

/// Fewer points than this make no useful line (a short phase scraped at its two ends).
const MIN_POINTS: usize = 3;

/// Each phase with a time series long enough to plot, and its points.
pub fn plottable(report: &Report) -> impl Iterator<Item = (&str, &[MetricsPoint])> {
    report.phases.iter().filter_map(|p| {
        let points = &p.server_metrics.as_ref()?.timeline;
        (points.len() >= MIN_POINTS).then_some((p.phase.as_str(), points.as_slice()))
    })
}

/// One chart per phase with a time series long enough to plot.
pub fn charts(report: &Report) -> Vec<String> {
    plottable(report)
        .map(|(phase, points)| chart(phase, points))
        .collect()
}

fn chart(phase: &str, points: &[MetricsPoint]) -> String {
    let line = |name: &str, field: fn(&MetricsPoint) -> Option<f64>| Series {
        name: name.to_string(),
        points: points
            .iter()
            .filter_map(|p| Some((p.t_s, field(p)?)))
            .collect(),
    };
    let series: Vec<Series> = [
        line("running", |p| p.requests_running),
        line("waiting", |p| p.requests_waiting),
        line("completed per s", |p| p.requests_per_s),
    ]
    .into_iter()
    .filter(|s| !s.points.is_empty())
    .collect();
    svg::line_chart(
        &format!("{phase}: server requests over the phase"),
        "seconds into the measured window",
        "requests",
        false,
        false,
        &series,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_phases_with_enough_points_get_a_chart() {
        let mut report: Report = crate::report::sample_report();
        assert!(charts(&report).is_empty());
        let point = |t_s: f64| MetricsPoint {
            t_s,
            requests_running: Some(t_s),
            ..MetricsPoint::default()
        };
        let metrics = report.phases[0].server_metrics.get_or_insert_default();
        metrics.timeline = vec![point(0.0), point(1.0)];
        assert!(charts(&report).is_empty());
        let metrics = report.phases[0].server_metrics.as_mut().unwrap();
        metrics.timeline.push(point(2.0));
        let svg = charts(&report);
        assert_eq!(svg.len(), 1);
        assert!(svg[0].contains("server requests over the phase"));
        assert!(svg[0].contains("running"));
        assert!(!svg[0].contains("waiting"));
    }
}
