//! The percentile-interval table shared by the markdown and HTML writers: each latency
//! percentile with its 95% distribution-free interval (`metrics::interval`).

use super::numfmt::ms;
use super::table::{Align, Cell, Table};
use crate::figure::Figure;
use crate::metrics::{Distribution, Interval, min_samples_for_interval};
use crate::report::model::{PhaseResult, Report};

/// What the table shows, in a sentence.
pub const NOTE: &str = "Each percentile with its 95% distribution-free interval: two order \
     statistics chosen from the binomial distribution, each tail at most 2.5%; the tails of a \
     small sample have none.";

/// Picks one distribution of a phase.
type Pick = fn(&PhaseResult) -> Option<&Distribution>;

/// The latency distributions that carry intervals: name, scale to milliseconds, pick.
const INTERVAL_METRICS: [(&str, f64, Pick); 4] = [
    ("TTFT", 1000.0, |p| p.summary.distribution(Figure::Ttft)),
    ("TPOT", 1000.0, |p| p.summary.distribution(Figure::Tpot)),
    ("E2E", 1000.0, |p| p.summary.distribution(Figure::E2e)),
    ("ITL", 1.0, |p| {
        p.summary.distribution(Figure::MeanInterTokenLatency)
    }),
];

/// `1234 [1100, 1400]`, or why there is no interval.
fn cell(value: f64, interval: Option<Interval>, q: f64, scale: f64) -> Cell {
    Cell::plain(match interval {
        Some(i) => format!(
            "{} [{}, {}]",
            ms(value * scale),
            ms(i.lo * scale),
            ms(i.hi * scale)
        ),
        None => format!(
            "{} (no interval below {} samples)",
            ms(value * scale),
            min_samples_for_interval(q)
        ),
    })
}

/// One row per phase and latency metric that has intervals; empty for reports without them.
pub fn table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Metric", Align::Left),
        ("Samples", Align::Right),
        ("p50 [95% interval] (ms)", Align::Right),
        ("p95 [95% interval] (ms)", Align::Right),
        ("p99 [95% interval] (ms)", Align::Right),
    ]);
    for p in &report.phases {
        for (name, scale, pick) in INTERVAL_METRICS {
            let Some(d) = pick(p) else { continue };
            let Some(ci) = d.ci95 else { continue };
            t.rows.push(vec![
                Cell::plain(p.phase.clone()),
                Cell::plain(name),
                Cell::plain(d.samples.to_string()),
                cell(d.p50, ci.p50, 0.50, scale),
                cell(d.p95, ci.p95, 0.95, scale),
                cell(d.p99, ci.p99, 0.99, scale),
            ]);
        }
    }
    t
}
