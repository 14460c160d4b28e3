//! The percentile-interval table shared by the markdown and HTML writers: each latency
//! percentile with its 95% distribution-free interval (`metrics::interval`).

use super::numfmt::ms;
use super::table::{Align, Cell, Table};
use crate::figure::Figure;
use crate::metrics::{Distribution, Interval, Stat, min_samples_for_interval};
use crate::report::model::{PhaseResult, Report};

/// What the table shows, in a sentence.
pub const NOTE: &str = "Each percentile with its 95% distribution-free interval: two order \
     statistics chosen from the binomial distribution, each tail at most 2.5%.";

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

/// The table, and which percentiles had a sample too small for an interval somewhere.
pub struct Intervals {
    pub table: Table,
    /// Per percentile column ([`Stat::PERCENTILES`]), whether a cell of it has no interval.
    gaps: [bool; 3],
}

impl Intervals {
    /// Under the table, when a cell has no interval: what the dash means, with the sample
    /// size each such percentile needs (the same for every row, so said once).
    pub fn gaps_note(&self) -> Option<String> {
        let needs: Vec<String> = Stat::PERCENTILES
            .iter()
            .zip(self.gaps)
            .filter(|(_, gap)| *gap)
            .map(|(stat, _)| {
                let q = stat.quantile().unwrap_or_default();
                format!("{} needs {}", stat.name(), min_samples_for_interval(q))
            })
            .collect();
        (!needs.is_empty()).then(|| {
            format!(
                "[–]: too few samples for an interval; {}.",
                needs.join(", ")
            )
        })
    }
}

/// `1234 [1100, 1400]`, or `1234 [–]` without an interval.
fn cell(value: f64, interval: Option<Interval>, scale: f64) -> Cell {
    Cell::plain(match interval {
        Some(i) => format!(
            "{} [{}, {}]",
            ms(value * scale),
            ms(i.lo * scale),
            ms(i.hi * scale)
        ),
        None => format!("{} [–]", ms(value * scale)),
    })
}

/// One row per phase and latency metric that has intervals; an empty table for reports
/// without them.
pub fn intervals(report: &Report) -> Intervals {
    let mut table = Table::new(&[
        ("Phase", Align::Left),
        ("Metric", Align::Left),
        ("Samples", Align::Right),
        ("p50 [95% interval] (ms)", Align::Right),
        ("p95 [95% interval] (ms)", Align::Right),
        ("p99 [95% interval] (ms)", Align::Right),
    ]);
    let mut gaps = [false; 3];
    for p in &report.phases {
        for (name, scale, pick) in INTERVAL_METRICS {
            let Some(d) = pick(p) else { continue };
            let Some(ci) = d.ci95 else { continue };
            let mut row = vec![
                Cell::plain(p.header.phase.clone()),
                Cell::plain(name),
                Cell::plain(d.samples.to_string()),
            ];
            for (i, stat) in Stat::PERCENTILES.into_iter().enumerate() {
                let interval = ci.of(stat);
                gaps[i] |= interval.is_none();
                row.push(cell(stat.of(d), interval, scale));
            }
            table.rows.push(row);
        }
    }
    Intervals { table, gaps }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::PercentileIntervals;

    fn interval(lo: f64, hi: f64) -> Option<Interval> {
        Some(Interval {
            lo,
            hi,
            rank_lo: 1,
            rank_hi: 2,
            coverage: 0.96,
        })
    }

    #[test]
    fn a_missing_interval_is_a_dash_and_one_note_gives_each_threshold() {
        let mut report = crate::report::sample_report();
        report.phases[0].summary.figures.set(
            Figure::Ttft,
            Some(Distribution {
                p50: 0.1,
                p95: 0.2,
                p99: 0.3,
                samples: 60,
                ci95: Some(PercentileIntervals {
                    p50: interval(0.09, 0.11),
                    p95: None,
                    p99: None,
                }),
                ..Distribution::default()
            }),
        );
        let t = intervals(&report);
        let texts: Vec<&str> = t.table.rows[0].iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts[3..], ["100 [90.0, 110]", "200 [–]", "300 [–]"]);
        assert_eq!(
            t.gaps_note().as_deref(),
            Some("[–]: too few samples for an interval; p95 needs 72, p99 needs 368.")
        );

        let ci = ttft_ci(&mut report);
        ci.p95 = interval(0.18, 0.22);
        ci.p99 = interval(0.28, 0.32);
        assert_eq!(intervals(&report).gaps_note(), None);
    }

    fn ttft_ci(report: &mut Report) -> &mut PercentileIntervals {
        let figures = &mut report.phases[0].summary.figures;
        let ttft = figures.get_mut(Figure::Ttft).expect("ttft");
        ttft.ci95.as_mut().expect("intervals")
    }
}
