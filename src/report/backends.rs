//! Table content for how each phase's requests spread over the backends behind a gateway,
//! shared by the markdown and HTML writers; shown only for phases with backend figures.

use super::model::Report;
use super::table::{Align, Cell, Table};

/// One row per phase and backend; empty when no phase listed backend metrics endpoints.
pub fn table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("phase", Align::Left),
        ("backend", Align::Left),
        ("requests", Align::Right),
        ("share", Align::Right),
        ("skew (max ÷ mean)", Align::Right),
        ("prefix-cache hits", Align::Right),
    ]);
    for phase in &report.phases {
        let Some(m) = &phase.server_metrics else {
            continue;
        };
        for b in &m.backends {
            t.rows.push(vec![
                Cell::plain(phase.phase.clone()),
                Cell::plain(b.name.clone()),
                Cell::plain(format!("{:.0}", b.requests)),
                Cell::plain(percent(b.share)),
                Cell::plain(
                    m.backend_skew
                        .map(|s| format!("{s:.2}"))
                        .unwrap_or_default(),
                ),
                Cell::plain(percent(b.prefix_cache_hit_avg)),
            ]);
        }
    }
    t
}

/// `phase: warning` for every metrics endpoint that could not be scraped.
pub fn warnings(report: &Report) -> Vec<String> {
    report
        .phases
        .iter()
        .flat_map(|p| {
            p.server_metrics
                .iter()
                .flat_map(|m| m.warnings.iter())
                .map(move |w| format!("{}: {w}", p.phase))
        })
        .collect()
}

fn percent(v: Option<f64>) -> String {
    v.map(|v| format!("{:.1}%", v * 100.0)).unwrap_or_default()
}
