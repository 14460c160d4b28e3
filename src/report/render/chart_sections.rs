//! The HTML's chart sections and the recheck chart: sweeps against concurrency, latency
//! percentiles per phase and every request's latency over its phase, as blocks. Markdown has
//! none of them ([`super::sections`] says so).

use crate::figure::Figure;
use std::collections::BTreeSet;
use std::fmt::Write;

use indexmap::IndexMap;

use super::document::{Block, Span};
use super::sampling;
use super::svg::{self, RangeRow, RatioRow, Series};
use crate::client::RequestRecord;
use crate::metrics::{Distribution, Interval};
use crate::report::model::{DriftVerdict, PhaseResult, Report};

/// Closed-loop phases sharing route and workload at two or more concurrencies, rechecks left
/// out, keyed by `route / workload`, sorted by concurrency.
pub(crate) fn sweeps(report: &Report) -> IndexMap<String, Vec<&PhaseResult>> {
    let mut groups: IndexMap<String, Vec<&PhaseResult>> = IndexMap::new();
    for p in &report.phases {
        if p.header.recheck_of.is_some()
            || p.header.concurrency.is_none()
            || p.header.rate_rps.is_some()
        {
            continue;
        }
        groups
            .entry(format!("{} / {}", p.header.route, p.header.workload))
            .or_default()
            .push(p);
    }
    for ps in groups.values_mut() {
        // One point per level: the first phase at it in plan order (a later soak or repeat
        // at the same level is not part of the sweep).
        let mut seen = BTreeSet::new();
        ps.retain(|p| seen.insert(p.header.concurrency));
        ps.sort_by_key(|p| p.header.concurrency);
    }
    groups.retain(|_, ps| ps.len() >= 2);
    groups
}

/// Throughput and latency against concurrency, one line per sweep.
pub fn concurrency_sweeps(report: &Report) -> Vec<Block> {
    let (encoding, groups): (IndexMap<_, _>, IndexMap<_, _>) = sweeps(report)
        .into_iter()
        .partition(|(_, ps)| ps.iter().all(|p| p.summary.encodes()));
    let conc = |p: &PhaseResult| f64::from(p.header.concurrency.unwrap_or(0));
    let mut blocks = Vec::new();
    if !encoding.is_empty() {
        blocks.extend(encoding_sweep_charts(&encoding, conc));
    }
    if !groups.is_empty() {
        blocks.extend(generation_sweep_charts(&groups, conc));
    }
    blocks
}

/// Output tok/s and TTFT against concurrency, for sweeps that generate; with checked
/// replies, their accuracy and valid share beside them.
fn generation_sweep_charts(
    groups: &IndexMap<String, Vec<&PhaseResult>>,
    conc: impl Fn(&PhaseResult) -> f64,
) -> Vec<Block> {
    let throughput = sweep_series(groups, &conc, |p| p.summary.output_tokens_per_second);
    let throughput = svg::line_chart(
        "Output throughput vs concurrency",
        "concurrency (log scale)",
        "output tok/s",
        true,
        false,
        &throughput,
    );
    let ttft = p50_p95_ms_series(groups, &conc, |p| p.summary.distribution(Figure::Ttft));
    let ttft = svg::line_chart(
        "TTFT vs concurrency",
        "concurrency (log scale)",
        "TTFT (ms, log scale)",
        true,
        true,
        &ttft,
    );
    let mut blocks = vec![Block::Figure(throughput), Block::Figure(ttft)];
    blocks.extend(checked_sweep_chart(groups, &conc));
    blocks
}

/// A phase's share of checked replies, when it checked them.
type ShareOf = fn(&PhaseResult) -> Option<f64>;

/// Accuracy and the structured-output valid share (%) against concurrency: whether answers
/// hold up under load. Only the sweeps whose phases checked replies have lines.
fn checked_sweep_chart(
    groups: &IndexMap<String, Vec<&PhaseResult>>,
    conc: &impl Fn(&PhaseResult) -> f64,
) -> Option<Block> {
    let shares: [(&str, ShareOf); 2] = [
        ("accuracy", |p| {
            p.summary.accuracy.as_ref().map(|a| a.accuracy)
        }),
        ("valid", |p| {
            p.summary.structured_output.as_ref().map(|o| o.valid_share)
        }),
    ];
    let mut series = Vec::new();
    for (name, ps) in groups {
        for (label, share) in shares {
            let points: Vec<(f64, f64)> = ps
                .iter()
                .filter_map(|p| share(p).map(|v| (conc(p), v * 100.0)))
                .collect();
            if points.len() >= 2 {
                series.push(Series {
                    name: format!("{name} {label}"),
                    points,
                });
            }
        }
    }
    (!series.is_empty()).then(|| {
        Block::Figure(svg::line_chart(
            "Checked replies vs concurrency",
            "concurrency (log scale)",
            "share of replies (%)",
            true,
            false,
            &series,
        ))
    })
}

/// One line per sweep group: `value` of each phase against its concurrency.
fn sweep_series(
    groups: &IndexMap<String, Vec<&PhaseResult>>,
    conc: &impl Fn(&PhaseResult) -> f64,
    value: impl Fn(&PhaseResult) -> f64,
) -> Vec<Series> {
    groups
        .iter()
        .map(|(name, ps)| Series {
            name: name.clone(),
            points: ps.iter().map(|p| (conc(p), value(p))).collect(),
        })
        .collect()
}

/// One p50 and one p95 line (milliseconds) per sweep group, of the distribution `figure` picks.
fn p50_p95_ms_series(
    groups: &IndexMap<String, Vec<&PhaseResult>>,
    conc: &impl Fn(&PhaseResult) -> f64,
    figure: impl Fn(&PhaseResult) -> Option<&Distribution>,
) -> Vec<Series> {
    let mut series = Vec::new();
    for (name, ps) in groups {
        for (stat, pick) in [
            ("p50", (|d: &Distribution| d.p50) as fn(&_) -> f64),
            ("p95", |d| d.p95),
        ] {
            series.push(Series {
                name: format!("{name} {stat}"),
                points: ps
                    .iter()
                    .filter_map(|p| figure(p).map(|d| (conc(p), pick(d) * 1000.0)))
                    .collect(),
            });
        }
    }
    series
}

/// Embeddings and rerank sweeps: inputs/s and E2E latency, as they generate no tokens.
fn encoding_sweep_charts(
    groups: &IndexMap<String, Vec<&PhaseResult>>,
    conc: impl Fn(&PhaseResult) -> f64,
) -> [Block; 2] {
    let throughput = sweep_series(groups, &conc, |p| {
        p.summary.inputs_per_second.unwrap_or(0.0)
    });
    let throughput = svg::line_chart(
        "Inputs per second vs concurrency",
        "concurrency (log scale)",
        "inputs/s",
        true,
        false,
        &throughput,
    );
    let e2e = p50_p95_ms_series(groups, &conc, |p| p.summary.distribution(Figure::E2e));
    let e2e = svg::line_chart(
        "E2E latency vs concurrency",
        "concurrency (log scale)",
        "E2E (ms, log scale)",
        true,
        true,
        &e2e,
    );
    [Block::Figure(throughput), Block::Figure(e2e)]
}

/// The rows of the percentile charts, one per phase that has the figure.
pub struct PercentileRows {
    ttft: Vec<RangeRow>,
    tpot: Vec<RangeRow>,
    /// Embeddings and rerank phases, which have only the end-to-end latency.
    e2e: Vec<RangeRow>,
}

impl PercentileRows {
    pub fn any(&self) -> bool {
        !(self.ttft.is_empty() && self.tpot.is_empty() && self.e2e.is_empty())
    }
}

pub fn percentile_rows(report: &Report) -> PercentileRows {
    let rows = |pick: &dyn Fn(&PhaseResult) -> Option<&Distribution>| -> Vec<RangeRow> {
        let ms = |i: Option<Interval>| i.map(|i| (i.lo * 1e3, i.hi * 1e3));
        report
            .phases
            .iter()
            .filter_map(|p| {
                pick(p).map(|d| RangeRow {
                    label: p.header.phase.clone(),
                    p50: d.p50 * 1000.0,
                    p95: d.p95 * 1000.0,
                    p99: d.p99 * 1000.0,
                    intervals: d
                        .ci95
                        .map(|c| [ms(c.p50), ms(c.p95), ms(c.p99)])
                        .unwrap_or_default(),
                })
            })
            .collect()
    };
    PercentileRows {
        ttft: rows(&|p| p.summary.distribution(Figure::Ttft)),
        tpot: rows(&|p| p.summary.distribution(Figure::Tpot)),
        e2e: rows(&|p| {
            p.summary
                .distribution(Figure::E2e)
                .filter(|_| p.summary.encodes())
        }),
    }
}

/// p50, p95 and p99 of each latency per phase, with their intervals.
pub fn latency_percentiles(report: &Report) -> Vec<Block> {
    let rows = percentile_rows(report);
    [
        ("E2E p50 / p95 / p99", "E2E (ms)", &rows.e2e),
        ("TTFT p50 / p95 / p99", "TTFT (ms)", &rows.ttft),
        ("TPOT p50 / p95 / p99", "TPOT (ms)", &rows.tpot),
    ]
    .into_iter()
    .filter(|(_, _, rows)| !rows.is_empty())
    .map(|(title, axis, rows)| Block::Figure(svg::range_rows(title, axis, rows)))
    .collect()
}

/// Recheck ÷ original per drift metric, drifted ones marked; none when no metric has both.
pub fn recheck_chart(report: &Report) -> Option<String> {
    let mut rows = Vec::new();
    for pair in &report.rechecks {
        for d in &pair.metrics {
            if let (Some(o), Some(r)) = (d.original, d.recheck)
                && o > 0.0
                && r > 0.0
            {
                rows.push(RatioRow {
                    label: format!("{} · {}", pair.original, d.metric),
                    ratio: r / o,
                    bad: d.verdict == DriftVerdict::Drifted,
                });
            }
        }
    }
    (!rows.is_empty()).then(|| svg::ratio_rows("Original vs recheck", &rows))
}

/// Embeddings and rerank requests have no first token: their whole latency is drawn.
fn draws_e2e(report: &Report) -> bool {
    report.phases.iter().all(|p| p.summary.encodes())
}

pub fn every_request_title(report: &Report) -> &'static str {
    if draws_e2e(report) {
        "E2E latency of every request over each phase"
    } else {
        "TTFT of every request over each phase"
    }
}

/// The records a phase's chart leaves out, by why: `["37 cancelled", "2 failed"]`.
fn left_out(records: &[RequestRecord], shown: usize, encodes: bool) -> Vec<String> {
    let cancelled = records.iter().filter(|r| r.is_cancelled()).count();
    let failed = records
        .iter()
        .filter(|r| r.error.is_some() && !r.is_cancelled())
        .count();
    let unmeasured = records.len().saturating_sub(shown + cancelled + failed);
    let what = if encodes {
        "no latency"
    } else {
        "no first token"
    };
    [
        (failed, "failed"),
        (cancelled, "cancelled"),
        (unmeasured, what),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{n} {why}"))
    .collect()
}

/// Per phase, the latency of every successful request kept against its start time.
pub fn every_request(report: &Report) -> Vec<Block> {
    let charts: Vec<Block> = report
        .phases
        .iter()
        .filter_map(request_scatter)
        .map(Block::Figure)
        .collect();
    if charts.is_empty() {
        let none = "This report holds no per-request records.";
        return vec![Block::Note(vec![Span::text(none)])];
    }
    charts
}

/// One phase's scatter of its kept requests; none when it kept no measured request.
fn request_scatter(p: &PhaseResult) -> Option<String> {
    let encodes = p.summary.encodes();
    let points: Vec<(f64, f64)> = p
        .request_timings
        .iter()
        .filter(|r| r.is_ok())
        .filter_map(|r| {
            let latency = if encodes { Some(r.e2e_ms) } else { r.ttft_ms };
            latency.map(|t| (r.start_offset_ms / 1000.0, t))
        })
        .collect();
    if points.is_empty() {
        return None;
    }
    let mut title = format!("{}: {} requests", p.header.phase, points.len());
    let left_out = left_out(&p.request_timings, points.len(), encodes);
    if !left_out.is_empty() {
        let _ = write!(title, " ({} not shown)", left_out.join(", "));
    }
    if let Some(sampled) = sampling::sampled(p) {
        let _ = write!(title, ", {sampled}");
    }
    let thinned = sampling::thin(&points, sampling::CHART_POINTS);
    if thinned.len() < points.len() {
        let _ = write!(title, ", {} drawn (extremes kept)", thinned.len());
    }
    Some(svg::scatter(
        &title,
        "request start within the phase (s)",
        if encodes { "E2E (ms)" } else { "TTFT (ms)" },
        &thinned,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_that_scored_its_replies_draws_accuracy_against_concurrency() {
        let mut report = crate::report::sample_report();
        let swept: Vec<String> = sweeps(&report)
            .values()
            .flatten()
            .map(|p| p.header.phase.clone())
            .collect();
        assert!(swept.len() >= 2, "the sample report has a sweep");
        let charts = |report: &Report| -> String {
            concurrency_sweeps(report)
                .into_iter()
                .filter_map(|b| match b {
                    Block::Figure(svg) => Some(svg),
                    _ => None,
                })
                .collect()
        };
        assert!(!charts(&report).contains("Checked replies vs concurrency"));
        for (n, p) in report
            .phases
            .iter_mut()
            .filter(|p| swept.contains(&p.header.phase))
            .enumerate()
        {
            p.summary.accuracy = Some(crate::metrics::score::Accuracy {
                scored: 100,
                correct: 90 - n as u64,
                accuracy: (90 - n) as f64 / 100.0,
                accuracy_ci95: [0.8, 0.95],
            });
        }
        let html = charts(&report);
        assert!(html.contains("Checked replies vs concurrency"), "{html}");
        assert!(html.contains(" accuracy<"), "{html}");
        assert!(
            !html.contains(" valid<"),
            "no valid share was checked: {html}"
        );
    }

    #[test]
    fn a_phases_chart_title_counts_what_it_plots_and_names_what_it_leaves_out() {
        let mut report = crate::report::sample_report();
        let phase = &mut report.phases[0];
        let total = phase.request_timings.len();
        for r in &mut phase.request_timings[..2] {
            r.cancelled_ms = Some(5.0);
        }
        let name = phase.header.phase.clone();
        let html: String = every_request(&report)
            .into_iter()
            .map(|b| match b {
                Block::Figure(svg) => svg,
                other => panic!("not a chart: {other:?}"),
            })
            .collect();
        let title = format!(
            "<title>{name}: {} requests (2 cancelled not shown)</title>",
            total - 2
        );
        assert!(html.contains(&title), "{title} in {html}");
    }
}
