//! HTML writer: one self-contained offline page with inline CSS and inline SVG charts.

use std::collections::BTreeSet;
use std::fmt::Write;

use indexmap::IndexMap;

use crate::figure::Figure;
use crate::report::model::{DriftVerdict, PhaseResult, Report};
use crate::report::render::svg::{self, RangeRow, RatioRow, Series, esc};
use crate::report::render::table;
use crate::report::render::table_text::html_table;

const CSS: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#222;background:#fff}\
h1{font-size:1.5em;margin-bottom:.3em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}\
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}\
th,td{border:1px solid #ddd;padding:3px 7px}th{background:#f4f4f4;text-align:left}\
td.r{text-align:right;font-variant-numeric:tabular-nums}\
.bad{color:#b00020;font-weight:600}.warn{color:#8a5a00;font-weight:600}.good{color:#1b7a2b}\
.banner{border-left:4px solid #b00020;background:#fdecee;padding:8px 12px;margin:.8em 0}\
.banner.warn{border-color:#c98a00;background:#fff6e0}\
.facts th{width:9em}.note{color:#555;font-size:.9em}\
svg.chart{width:100%;max-width:760px;height:auto;display:block;margin:.8em 0}\
svg .ct{font-size:14px;font-weight:600;fill:#222}svg .tick{font-size:11px;fill:#444}\
svg .al{font-size:12px;fill:#333}svg .lg{font-size:11px;fill:#333}\
svg .grid{stroke:#e6e6e6;stroke-width:1}svg .axis{stroke:#555;stroke-width:1}\
svg .pt{fill:#1f77b4;fill-opacity:.55}";

/// Render `report` as one HTML document that needs nothing from the network.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    head(&mut out, report);
    phases_section(&mut out, report);
    crate::report::render::recovery_html::section(&mut out, report);
    crate::report::render::until_table::html_section(&mut out, report);
    intervals_section(&mut out, report);
    sweep_charts(&mut out, report);
    percentile_charts(&mut out, report);
    searches_section(&mut out, report);
    rechecks_section(&mut out, report);
    scatter_charts(&mut out, report);
    repeats_section(&mut out, report);
    diagnostics_sections(&mut out, report);
    timelines_section(&mut out, report);
    errors_section(&mut out, report);
    out.push_str("</body></html>\n");
    out
}

/// The phases table and, when any phase has them, its hooks.
fn phases_section(out: &mut String, report: &Report) {
    out.push_str(
        "<h2>Phases</h2>\n<p class=\"note\">Latencies in milliseconds; phases in plan order.</p>\n",
    );
    html_table(out, &table::phases(report));
    for note in crate::report::render::sampling::notes(report) {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&note));
    }
    let hooks = crate::report::render::hook_table::table(report);
    if !hooks.is_empty() {
        out.push_str("<h3>Phase hooks</h3>\n");
        html_table(out, &hooks);
        hook_output_tails(out, report);
    }
}

/// Percentile intervals, when any phase has them.
fn intervals_section(out: &mut String, report: &Report) {
    let intervals = crate::report::render::interval_table::table(report);
    if !intervals.is_empty() {
        let _ = writeln!(
            out,
            "<h2>Percentile intervals</h2>\n<p class=\"note\">{}</p>",
            esc(crate::report::render::interval_table::NOTE)
        );
        html_table(out, &intervals);
    }
}

/// Capacity searches and their probes.
fn searches_section(out: &mut String, report: &Report) {
    if !report.searches.is_empty() {
        out.push_str("<h2>Capacity searches</h2>\n");
        html_table(out, &crate::report::render::search_table::searches(report));
        html_table(out, &crate::report::render::search_table::probes(report));
    }
}

/// Arms of repeat groups: pooled figures, spread and the verdict per pair.
fn repeats_section(out: &mut String, report: &Report) {
    if !report.repeats.is_empty() {
        out.push_str("<h2>Repeats</h2>\n<p class=\"note\">Each arm pooled over its rounds; an arm pair differs when the gap between their pooled figures is larger than either arm's range across rounds.</p>\n");
        for h in crate::report::render::repeat_table::headlines(report) {
            let _ = writeln!(out, "<div class=\"banner warn\"><b>{}</b></div>", esc(&h));
        }
        html_table(out, &crate::report::render::repeat_table::arms(report));
        html_table(out, &crate::report::render::repeat_table::pairs(report));
    }
}

/// Prompt sizes, connections and backends: what explains a figure.
fn diagnostics_sections(out: &mut String, report: &Report) {
    let prompts = table::prompt_tokens(report);
    if !prompts.is_empty() {
        out.push_str("<h2>Prompt tokens: planned vs actual</h2>\n");
        let warned = table::prompt_warnings(report);
        if !warned.is_empty() {
            let _ = writeln!(
                out,
                "<div class=\"banner warn\"><b>⚠ Prompt size outside tolerance in:</b> {}</div>",
                esc(&warned.join(", "))
            );
        }
        html_table(out, &prompts);
    }

    let trust = crate::report::render::trust_table::table(report);
    if !trust.is_empty() {
        out.push_str("<h2>Client trust</h2>\n");
        let bound = crate::report::render::trust_table::client_bound(report);
        if !bound.is_empty() {
            let _ = writeln!(
                out,
                "<div class=\"banner warn\"><b>⚠ Client-bound phases:</b> {}</div>",
                esc(&bound.join(", "))
            );
        }
        html_table(out, &trust);
        let _ = writeln!(
            out,
            "<p>{}</p>",
            esc(&crate::report::render::trust_table::note())
        );
    }

    let connections = crate::report::render::connections::table(report);
    let connection_warnings = crate::report::render::connections::warnings(report);
    if !connections.is_empty() || !connection_warnings.is_empty() {
        out.push_str("<h2>Connections and server timing</h2>\n");
        for w in connection_warnings {
            let _ = writeln!(out, "<div class=\"banner warn\"><b>⚠ {}</b></div>", esc(&w));
        }
        if !connections.is_empty() {
            html_table(out, &connections);
        }
        let split = crate::report::render::connections::split_table(report);
        if !split.is_empty() {
            out.push_str("<h3>Latency split</h3>\n");
            html_table(out, &split);
            let _ = writeln!(
                out,
                "<p>{}</p>",
                esc(crate::report::render::connections::SPLIT_NOTE)
            );
        }
    }

    let sessions = crate::report::render::session_table::table(report);
    if !sessions.is_empty() {
        out.push_str("<h2>Sessions by turn</h2>\n");
        html_table(out, &sessions);
        let _ = writeln!(
            out,
            "<p>{}</p>",
            esc(crate::report::render::session_table::NOTE)
        );
        if crate::report::render::session_table::has_tool_calls(report) {
            let _ = writeln!(
                out,
                "<p>{}</p>",
                esc(crate::report::render::session_table::TOOLS_NOTE)
            );
        }
    }

    let backends = crate::report::render::backends::table(report);
    let metrics_warnings = crate::report::render::backends::warnings(report);
    let metrics_notes = crate::report::render::backends::notes(report);
    if !backends.is_empty() || !metrics_warnings.is_empty() || !metrics_notes.is_empty() {
        out.push_str("<h2>Backends behind the gateway</h2>\n");
        for w in metrics_warnings {
            let _ = writeln!(out, "<div class=\"banner warn\"><b>⚠ {}</b></div>", esc(&w));
        }
        for n in metrics_notes {
            let _ = writeln!(out, "<p>{}</p>", esc(&n));
        }
        if let Some(chart) = crate::report::render::backends::chart(report) {
            out.push_str(&chart);
            out.push('\n');
        }
        html_table(out, &backends);
    }
}

/// Server metrics scraped during each phase.
fn timelines_section(out: &mut String, report: &Report) {
    let timelines = crate::report::render::timeline::charts(report);
    if !timelines.is_empty() {
        out.push_str("<h2>Server metrics over each phase</h2>\n");
        for chart in timelines {
            out.push_str(&chart);
            out.push('\n');
        }
    }
}

/// Failed requests by kind, then by cause.
fn errors_section(out: &mut String, report: &Report) {
    out.push_str("<h2>Errors</h2>\n");
    let errors = table::errors(report);
    if errors.is_empty() {
        out.push_str("<p>No failed requests.</p>\n");
    } else {
        html_table(out, &errors);
    }
    let causes = table::error_causes(report);
    if !causes.is_empty() {
        out.push_str("<h3>Errors by cause</h3>\n");
        html_table(out, &causes);
    }
}

/// Each `exec` action's output tail, folded away under the hooks table.
fn hook_output_tails(out: &mut String, report: &Report) {
    for phase in &report.phases {
        for hook in phase.hooks.iter().filter(|h| !h.output_tail.is_empty()) {
            let _ = writeln!(
                out,
                "<details><summary>{} · {} · {}: last {} lines of output</summary><pre>{}</pre></details>",
                esc(&phase.phase),
                esc(&hook.when),
                esc(&hook.action),
                hook.output_tail.len(),
                esc(&hook.output_tail.join("\n"))
            );
        }
    }
}

/// The document head, the partial-run banner and the run's facts.
fn head(out: &mut String, report: &Report) {
    let title = format!("servebench report: {}", report.plan.name);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t}</title><style>{CSS}</style></head><body>\n<h1>{t}</h1>\n",
        t = esc(&title)
    );
    if report.partial {
        let _ = writeln!(
            out,
            "<div class=\"banner\"><b>Partial run:</b> not every phase finished{}.</div>",
            report
                .stop_reason
                .as_deref()
                .map(|r| format!(" ({})", esc(r)))
                .unwrap_or_default()
        );
    }
    out.push_str("<table class=\"facts\">");
    for (k, v) in table::header_facts(report) {
        let _ = write!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(&k), esc(&v));
    }
    out.push_str("</table>\n");
}

/// Drift verdicts of the rechecks: a headline, the chart and the table.
fn rechecks_section(out: &mut String, report: &Report) {
    if report.rechecks.is_empty() {
        return;
    }
    out.push_str("<h2>Rechecks</h2>\n");
    let headlines = table::drift_headlines(report);
    if headlines.is_empty() {
        let class = if table::inconclusive_rechecks(report) > 0 {
            "warn"
        } else {
            "good"
        };
        let _ = writeln!(
            out,
            "<p class=\"{class}\">{}</p>",
            esc(&table::no_drift_sentence(report))
        );
    } else {
        let drifted = report
            .rechecks
            .iter()
            .filter(|p| p.verdict == DriftVerdict::Drifted)
            .count();
        let _ = write!(
            out,
            "<div class=\"banner\"><b>⚠ {drifted} of {} rechecks drifted:</b><ul>",
            report.rechecks.len()
        );
        for h in headlines {
            let _ = write!(out, "<li><b>{}</b></li>", esc(&h));
        }
        out.push_str("</ul></div>\n");
    }
    recheck_chart(out, report);
    html_table(out, &table::rechecks(report));
}

/// Closed-loop phases sharing route and workload at two or more concurrencies, rechecks left
/// out, keyed by `route / workload`, sorted by concurrency.
pub(crate) fn sweeps(report: &Report) -> IndexMap<String, Vec<&PhaseResult>> {
    let mut groups: IndexMap<String, Vec<&PhaseResult>> = IndexMap::new();
    for p in &report.phases {
        if p.recheck_of.is_some() || p.concurrency.is_none() || p.rate_rps.is_some() {
            continue;
        }
        groups
            .entry(format!("{} / {}", p.route, p.workload))
            .or_default()
            .push(p);
    }
    for ps in groups.values_mut() {
        // One point per level: the first phase at it in plan order (a later soak or repeat
        // at the same level is not part of the sweep).
        let mut seen = BTreeSet::new();
        ps.retain(|p| seen.insert(p.concurrency));
        ps.sort_by_key(|p| p.concurrency);
    }
    groups.retain(|_, ps| ps.len() >= 2);
    groups
}

fn sweep_charts(out: &mut String, report: &Report) {
    let (encoding, groups): (IndexMap<_, _>, IndexMap<_, _>) = sweeps(report)
        .into_iter()
        .partition(|(_, ps)| ps.iter().all(|p| p.summary.encodes()));
    if groups.is_empty() && encoding.is_empty() {
        return;
    }
    out.push_str("<h2>Concurrency sweeps</h2>\n");
    let conc = |p: &PhaseResult| f64::from(p.concurrency.unwrap_or(0));
    if !encoding.is_empty() {
        encoding_sweep_charts(out, &encoding, conc);
    }
    if groups.is_empty() {
        return;
    }
    let throughput = sweep_series(&groups, &conc, |p| p.summary.output_tokens_per_second);
    out.push_str(&svg::line_chart(
        "Output throughput vs concurrency",
        "concurrency (log scale)",
        "output tok/s",
        true,
        false,
        &throughput,
    ));
    let ttft = p50_p95_ms_series(&groups, &conc, |p| p.summary.distribution(Figure::Ttft));
    out.push_str(&svg::line_chart(
        "TTFT vs concurrency",
        "concurrency (log scale)",
        "TTFT (ms, log scale)",
        true,
        true,
        &ttft,
    ));
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
    figure: impl Fn(&PhaseResult) -> Option<&crate::metrics::Distribution>,
) -> Vec<Series> {
    let mut series = Vec::new();
    for (name, ps) in groups {
        for (stat, pick) in [
            (
                "p50",
                (|d: &crate::metrics::Distribution| d.p50) as fn(&_) -> f64,
            ),
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
    out: &mut String,
    groups: &IndexMap<String, Vec<&PhaseResult>>,
    conc: impl Fn(&PhaseResult) -> f64,
) {
    let throughput = sweep_series(groups, &conc, |p| {
        p.summary.inputs_per_second.unwrap_or(0.0)
    });
    out.push_str(&svg::line_chart(
        "Inputs per second vs concurrency",
        "concurrency (log scale)",
        "inputs/s",
        true,
        false,
        &throughput,
    ));
    let e2e = p50_p95_ms_series(groups, &conc, |p| p.summary.distribution(Figure::E2e));
    out.push_str(&svg::line_chart(
        "E2E latency vs concurrency",
        "concurrency (log scale)",
        "E2E (ms, log scale)",
        true,
        true,
        &e2e,
    ));
}

fn percentile_charts(out: &mut String, report: &Report) {
    let rows = |pick: fn(&PhaseResult) -> Option<&crate::metrics::Distribution>| -> Vec<RangeRow> {
        report
            .phases
            .iter()
            .filter_map(|p| {
                pick(p).map(|d| {
                    let ms =
                        |i: Option<crate::metrics::Interval>| i.map(|i| (i.lo * 1e3, i.hi * 1e3));
                    RangeRow {
                        label: p.phase.clone(),
                        p50: d.p50 * 1000.0,
                        p95: d.p95 * 1000.0,
                        p99: d.p99 * 1000.0,
                        intervals: d
                            .ci95
                            .map(|c| [ms(c.p50), ms(c.p95), ms(c.p99)])
                            .unwrap_or_default(),
                    }
                })
            })
            .collect()
    };
    let ttft = rows(|p| p.summary.distribution(Figure::Ttft));
    let tpot = rows(|p| p.summary.distribution(Figure::Tpot));
    // Embeddings and rerank phases have only the end-to-end latency.
    let e2e = rows(|p| {
        p.summary
            .distribution(Figure::E2e)
            .filter(|_| p.summary.encodes())
    });
    if ttft.is_empty() && tpot.is_empty() && e2e.is_empty() {
        return;
    }
    out.push_str("<h2>Latency percentiles per phase</h2>\n");
    if !e2e.is_empty() {
        out.push_str(&svg::range_rows("E2E p50 / p95 / p99", "E2E (ms)", &e2e));
    }
    if !ttft.is_empty() {
        out.push_str(&svg::range_rows("TTFT p50 / p95 / p99", "TTFT (ms)", &ttft));
    }
    if !tpot.is_empty() {
        out.push_str(&svg::range_rows("TPOT p50 / p95 / p99", "TPOT (ms)", &tpot));
    }
}

fn recheck_chart(out: &mut String, report: &Report) {
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
    if !rows.is_empty() {
        out.push_str(&svg::ratio_rows("Original vs recheck", &rows));
    }
}

fn scatter_charts(out: &mut String, report: &Report) {
    // Embeddings and rerank requests have no first token: their whole latency is drawn.
    let heading = if report.phases.iter().all(|p| p.summary.encodes()) {
        "E2E latency"
    } else {
        "TTFT"
    };
    let _ = writeln!(out, "<h2>{heading} of every request over each phase</h2>");
    let mut any = false;
    for p in &report.phases {
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
            continue;
        }
        any = true;
        let failed = p.request_timings.iter().filter(|r| !r.is_ok()).count();
        let mut title = if failed > 0 {
            format!(
                "{}: {} requests ({failed} failed, not shown)",
                p.phase,
                points.len()
            )
        } else {
            format!("{}: {} requests", p.phase, points.len())
        };
        if let Some(sampled) = crate::report::render::sampling::sampled(p) {
            let _ = write!(title, ", {sampled}");
        }
        let thinned = crate::report::render::sampling::thin(
            &points,
            crate::report::render::sampling::CHART_POINTS,
        );
        if thinned.len() < points.len() {
            let _ = write!(title, ", {} drawn (extremes kept)", thinned.len());
        }
        let points = thinned;
        out.push_str(&svg::scatter(
            &title,
            "request start within the phase (s)",
            if encodes { "E2E (ms)" } else { "TTFT (ms)" },
            &points,
        ));
    }
    if !any {
        out.push_str("<p class=\"note\">This report holds no per-request records.</p>\n");
    }
}
