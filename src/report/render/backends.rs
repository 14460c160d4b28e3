//! How each phase's requests spread over the backends behind a gateway: the table (shared
//! by the markdown and HTML writers, with a text bar per share) and the HTML's stacked-bar
//! chart; shown only for phases with backend figures.

use std::fmt::Write;

use super::svg::{PALETTE, esc};
use super::table::{Align, Cell, Table};
use crate::report::model::{Report, ServerMetrics};

/// Characters of the text bar at a 100% share.
const BAR_WIDTH: usize = 20;

/// One row per phase and backend; empty when no phase listed backend metrics endpoints.
pub fn table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Backend", Align::Left),
        ("Requests", Align::Right),
        ("Share", Align::Right),
        ("", Align::Left),
        ("Skew (max ÷ mean)", Align::Right),
        ("Prefix-cache hits", Align::Right),
        ("Counted by", Align::Left),
    ]);
    for (phase, m) in phases(report) {
        for b in &m.backends {
            t.rows.push(vec![
                Cell::plain(phase.to_string()),
                Cell::plain(b.name.clone()),
                Cell::plain(format!("{:.0}", b.requests)),
                Cell::plain(percent(b.share)),
                Cell::plain(bar(b.share)),
                Cell::plain(
                    m.backend_skew
                        .map(|s| format!("{s:.2}"))
                        .unwrap_or_default(),
                ),
                Cell::plain(percent(b.prefix_cache_hit_avg)),
                Cell::plain(m.backend_requests_from.clone().unwrap_or_default()),
            ]);
        }
    }
    t
}

fn phases(report: &Report) -> impl Iterator<Item = (&str, &ServerMetrics)> {
    report.phases.iter().filter_map(|p| {
        p.server_metrics
            .as_ref()
            .filter(|m| !m.backends.is_empty())
            .map(|m| (p.header.phase.as_str(), m))
    })
}

/// A share as a row of blocks, one per 5%.
fn bar(share: Option<f64>) -> String {
    let blocks = share.map_or(0, |s| {
        (s.clamp(0.0, 1.0) * BAR_WIDTH as f64).round() as usize
    });
    "█".repeat(blocks)
}

/// `phase: warning` for every metrics endpoint that could not be scraped.
pub fn warnings(report: &Report) -> Vec<String> {
    per_phase(report, |m| &m.warnings)
}

/// `phase: note` for every remark on the server figures (label sets cut at the cap).
pub fn notes(report: &Report) -> Vec<String> {
    per_phase(report, |m| &m.notes)
}

fn per_phase(report: &Report, field: fn(&ServerMetrics) -> &Vec<String>) -> Vec<String> {
    report
        .phases
        .iter()
        .flat_map(|p| {
            p.server_metrics
                .iter()
                .flat_map(move |m| field(m).iter())
                .map(move |w| format!("{}: {w}", p.header.phase))
        })
        .collect()
}

/// A stacked bar per phase: each backend's share of the phase's requests, one colour per
/// backend name across phases. `None` when no phase has backend figures.
pub fn chart(report: &Report) -> Option<String> {
    let rows: Vec<(&str, &ServerMetrics)> = phases(report).collect();
    if rows.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = Vec::new();
    for (_, m) in &rows {
        for b in &m.backends {
            if !names.contains(&b.name.as_str()) {
                names.push(&b.name);
            }
        }
    }
    let color = |name: &str| {
        let i = names.iter().position(|n| *n == name).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    };
    let (left, right, top, row_h) = (180.0, 740.0, 40.0, 22.0);
    let legend_top = top + row_h * rows.len() as f64 + 12.0;
    let height = legend_top + 16.0 * names.len() as f64 + 8.0;
    let title = "Requests per backend, by phase";
    let mut out = String::new();
    super::svg::open(&mut out, title, height);
    for (i, (phase, m)) in rows.iter().enumerate() {
        let y = top + row_h * i as f64;
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" class=\"tick\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            y + 13.0,
            esc(phase)
        );
        let mut x = left;
        for b in &m.backends {
            let w = b.share.unwrap_or(0.0).clamp(0.0, 1.0) * (right - left);
            if w <= 0.0 {
                continue;
            }
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"16\" fill=\"{}\">\
                 <title>{}: {} ({:.0} requests)</title></rect>",
                color(&b.name),
                esc(&b.name),
                percent(b.share),
                b.requests
            );
            x += w;
        }
    }
    for (i, name) in names.iter().enumerate() {
        let y = legend_top + 16.0 * i as f64;
        let _ = write!(
            out,
            "<rect x=\"{left:.1}\" y=\"{y:.1}\" width=\"10\" height=\"10\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" class=\"tick\">{}</text>",
            color(name),
            left + 14.0,
            y + 9.0,
            esc(name)
        );
    }
    out.push_str("</svg>");
    Some(out)
}

fn percent(v: Option<f64>) -> String {
    v.map(|v| format!("{:.1}%", v * 100.0)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::BackendShare;

    fn report_with(backends: &[(&str, f64, f64)]) -> Report {
        let mut report: Report = crate::report::sample_report();
        report.phases[0].server_metrics = Some(ServerMetrics {
            backends: backends
                .iter()
                .map(|(name, requests, share)| BackendShare {
                    name: name.to_string(),
                    requests: *requests,
                    share: Some(*share),
                    ..BackendShare::default()
                })
                .collect(),
            backend_skew: Some(1.5),
            backend_requests_from: Some("gateway: vllm_router_processed_requests_total".into()),
            ..ServerMetrics::default()
        });
        report
    }

    #[test]
    fn the_table_has_a_bar_per_share_and_names_the_counter() {
        let report = report_with(&[("a", 30.0, 0.75), ("b", 10.0, 0.25)]);
        let t = table(&report);
        assert_eq!(t.rows.len(), 2);
        let text = |row: usize, col: usize| t.rows[row][col].text.clone();
        assert_eq!(text(0, 3), "75.0%");
        assert_eq!(text(0, 4).chars().count(), 15);
        assert_eq!(text(1, 4).chars().count(), 5);
        assert_eq!(text(0, 7), "gateway: vllm_router_processed_requests_total");
    }

    #[test]
    fn the_chart_stacks_each_phase_s_shares() {
        let report = report_with(&[("a", 30.0, 0.75), ("b", 10.0, 0.25)]);
        let svg = chart(&report).expect("a chart");
        assert_eq!(svg.matches("<rect x=\"180.0\" y=\"40.0\"").count(), 1);
        // 75% and 25% of the 560-pixel bar.
        assert!(svg.contains("width=\"420.0\""), "{svg}");
        assert!(svg.contains("width=\"140.0\""), "{svg}");
        assert!(svg.contains("<title>b: 25.0% (10 requests)</title>"));
        let empty = report_with(&[]);
        assert!(chart(&empty).is_none());
    }
}
