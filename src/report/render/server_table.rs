//! The server's own view of each phase, sampled during its measured window: the table shared
//! by the markdown and HTML writers, its note, and the failed scrapes.

use super::numfmt::with_unit;
use super::table::{Align, Cell, Mark, Table};
use crate::report::model::figure_path::Unit;
use crate::report::model::{GaugesFrom, PhaseResult, Report, ServerMetrics};

/// What each column means, stated once under the table.
pub const NOTE: &str = "Sampled from the server's metrics during each measured window: as it \
    opens, every metrics_interval (default 1 s) and once more as it closes. Requests \
    running and waiting (summed over the backends) and KV-cache usage (the fullest \
    backend's): min / mean / max over the samples, the mean weighted by time. Prefix-cache \
    hits: hits over queries between the scrapes just before and after the window. Generated: \
    the server's token counter from the first sample to the last, and its highest rate \
    between two successive samples.";

/// Each phase the server was sampled in, with its server figures.
pub fn sampled(report: &Report) -> impl Iterator<Item = (&PhaseResult, &ServerMetrics)> {
    report.phases.iter().filter_map(|p| {
        let m = p.server_metrics.as_ref()?;
        (m.sampling.is_some() || !m.timeline.is_empty()).then_some((p, m))
    })
}

/// One row per sampled phase; empty when no phase was sampled.
pub fn table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Samples", Align::Right),
        ("Running (min / mean / max)", Align::Right),
        ("Waiting (min / mean / max)", Align::Right),
        ("KV-cache usage (min / mean / max)", Align::Right),
        ("Prefix-cache hits", Align::Right),
        ("Generated (peak)", Align::Right),
    ]);
    for (phase, m) in sampled(report) {
        let level = |name: &str, unit: Unit| {
            let range = m
                .normalized_gauges
                .get(name)
                .filter(|_| m.gauges_from == GaugesFrom::Window);
            range.map_or_else(String::new, |r| {
                let mean = r
                    .mean
                    .map_or_else(|| "–".to_string(), |v| with_unit(v, unit));
                let (min, max) = (with_unit(r.min, unit), with_unit(r.max, unit));
                format!("{min} / {mean} / {max}")
            })
        };
        let generated = m.sampling.as_ref().and_then(|s| {
            let rate = with_unit(s.generation_tok_s?, Unit::TokensPerSecond);
            Some(match s.generation_tok_s_peak {
                Some(peak) => format!("{rate} ({})", with_unit(peak, Unit::TokensPerSecond)),
                None => rate,
            })
        });
        t.rows.push(vec![
            Cell::plain(phase.header.phase.clone()),
            samples(m),
            Cell::plain(level("requests_running", Unit::Count)),
            Cell::plain(level("requests_waiting", Unit::Count)),
            Cell::plain(level("kv_cache_usage", Unit::Ratio)),
            Cell::plain(
                m.prefix_cache_hit_avg
                    .map_or_else(String::new, |h| with_unit(h, Unit::Ratio)),
            ),
            Cell::plain(generated.unwrap_or_default()),
        ]);
    }
    t
}

/// How many samples the figures use, and how many scrapes failed.
fn samples(m: &ServerMetrics) -> Cell {
    match &m.sampling {
        // Written before the window's figures were: its time series' points.
        None => Cell::plain(m.timeline.len().to_string()),
        Some(s) if s.failed == 0 => Cell::plain(s.samples.to_string()),
        Some(s) => Cell::marked(format!("{} ({} failed)", s.samples, s.failed), Mark::Warn),
    }
}

/// `phase: …` for each phase some of whose scrapes during the window failed.
pub fn warnings(report: &Report) -> Vec<String> {
    sampled(report)
        .filter_map(|(phase, m)| {
            let s = m.sampling.as_ref().filter(|s| s.failed > 0)?;
            let first = s.first_failure.as_deref().unwrap_or("no reason given");
            Some(format!(
                "{}: failed scrapes during the window: {}, left out of its figures (the first: \
                 {first})",
                phase.header.phase, s.failed
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{GaugeRange, MetricsPoint, WindowSampling};

    fn sampled_phase(failed: u64) -> Report {
        let mut report: Report = crate::report::sample_report();
        let range = |min, mean, max| GaugeRange {
            min,
            max,
            mean: Some(mean),
        };
        report.phases[0].server_metrics = Some(ServerMetrics {
            normalized_gauges: [
                ("requests_running".to_string(), range(0.0, 3.75, 4.0)),
                ("requests_waiting".to_string(), range(0.0, 3.5, 4.0)),
                ("kv_cache_usage".to_string(), range(0.1, 0.25, 0.5)),
            ]
            .into(),
            gauges_from: GaugesFrom::Window,
            prefix_cache_hit_avg: Some(0.5),
            sampling: Some(WindowSampling {
                interval_s: 1.0,
                samples: 12,
                failed,
                first_failure: (failed > 0).then(|| "cannot scrape u: HTTP 500".into()),
                span_s: 11.0,
                generation_tok_s: Some(812.4),
                generation_tok_s_peak: Some(950.0),
            }),
            ..ServerMetrics::default()
        });
        report
    }

    #[test]
    fn a_row_per_sampled_phase_with_ranges_means_and_rates() {
        let t = table(&sampled_phase(0));
        assert_eq!(t.rows.len(), 1);
        let text: Vec<&str> = t.rows[0].iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            text[1..],
            [
                "12",
                "0 / 3.75 / 4",
                "0 / 3.50 / 4",
                "10.0% / 25.0% / 50.0%",
                "50.0%",
                "812 tok/s (950 tok/s)"
            ]
        );
        assert!(warnings(&sampled_phase(0)).is_empty());
    }

    #[test]
    fn failed_scrapes_are_counted_and_named() {
        let report = sampled_phase(2);
        let t = table(&report);
        assert_eq!(t.rows[0][1], Cell::marked("12 (2 failed)", Mark::Warn));
        let w = warnings(&report);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("during the window: 2,") && w[0].contains("HTTP 500"),
            "{w:?}"
        );
    }

    #[test]
    fn ranges_from_around_the_window_are_not_shown_as_the_window_s() {
        let mut report = sampled_phase(0);
        let mut m = report.phases[0].server_metrics.clone().unwrap();
        m.gauges_from = GaugesFrom::Edges;
        report.phases[0].server_metrics = Some(m.clone());
        assert_eq!(table(&report).rows[0][2].text, "");
        // A phase neither sampled nor with a time series has no row.
        m.sampling = None;
        report.phases[0].server_metrics = Some(m.clone());
        assert!(table(&report).is_empty());
        // One written before the window's figures: its time series' points.
        m.timeline = vec![MetricsPoint::default(); 3];
        report.phases[0].server_metrics = Some(m);
        assert_eq!(table(&report).rows[0][1].text, "3");
    }
}
