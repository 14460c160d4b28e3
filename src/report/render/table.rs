//! Table content shared by the markdown and HTML writers: header facts, phases, rechecks,
//! prompt tokens, errors. Each writer only decides how a [`Table`] looks.

use std::collections::BTreeMap;

use super::numfmt::{ms_from_s, pct_change, sig3, with_unit};
use crate::client::ErrorKind;
use crate::metrics::ErrorCause;
use crate::report::model::figure_path::{FigurePath, Unit};
use crate::report::model::{DriftVerdict, PhaseResult, Report};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// How a cell should stand out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Plain,
    /// Worth a look (a prompt-size warning, a partial phase).
    Warn,
    /// A problem (drift, a failed gate, errors).
    Bad,
    Good,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub text: String,
    pub mark: Mark,
}

impl Cell {
    pub fn plain(text: impl Into<String>) -> Self {
        Cell {
            text: text.into(),
            mark: Mark::Plain,
        }
    }

    pub fn marked(text: impl Into<String>, mark: Mark) -> Self {
        Cell {
            text: text.into(),
            mark,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub title: String,
    pub align: Align,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(columns: &[(&str, Align)]) -> Self {
        Table {
            columns: columns
                .iter()
                .map(|(t, a)| Column {
                    title: t.to_string(),
                    align: *a,
                })
                .collect(),
            rows: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

const L: Align = Align::Left;
const R: Align = Align::Right;

/// `(label, value)` pairs describing the run.
pub fn header_facts(report: &Report) -> Vec<(String, String)> {
    let plan = &report.plan;
    let mut facts = vec![(
        "Plan".to_string(),
        format!(
            "{} ({}{})",
            plan.name,
            report.plan_source.path,
            short_sha(&report.plan_source.sha256)
        ),
    )];
    if let Some(d) = &plan.description {
        facts.push(("Description".to_string(), d.clone()));
    }
    let targets: Vec<String> = plan
        .targets
        .iter()
        .map(|(name, t)| {
            let place = match (&t.base_url, &t.simulator) {
                (Some(url), _) => Some(url.clone()),
                (None, Some(_)) => Some("embedded simulator".to_string()),
                (None, None) => None,
            };
            match (place, &t.model) {
                (Some(p), Some(m)) => format!("{name}: {p}, model {m}"),
                (Some(p), None) => format!("{name}: {p}"),
                (None, Some(m)) => format!("{name} (model {m})"),
                (None, None) => name.clone(),
            }
        })
        .collect();
    facts.push(("Targets".to_string(), targets.join("; ")));
    for (k, v) in &report.metadata {
        let text = match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        facts.push((k.clone(), text));
    }
    facts.push(("Run".to_string(), report.run_id.clone()));
    facts.push(("Started".to_string(), report.started_at.clone()));
    facts.push((
        "Finished".to_string(),
        report
            .finished_at
            .clone()
            .unwrap_or_else(|| "not recorded (in progress, or not stated)".to_string()),
    ));
    facts.push((
        "Tool".to_string(),
        format!("{} {}", report.tool.name, report.tool.version),
    ));
    let status = if report.partial {
        match &report.stop_reason {
            Some(r) => format!("PARTIAL: {r}"),
            None => "PARTIAL".to_string(),
        }
    } else {
        "complete".to_string()
    };
    facts.push(("Status".to_string(), status));
    if let Some(client) = client_fact(report) {
        facts.push(("Client".to_string(), client));
    }
    facts.push((
        "Percentiles".to_string(),
        match report.timing_methodology.percentile_method {
            crate::plan::PercentileMethod::Linear => "linear interpolation".to_string(),
            crate::plan::PercentileMethod::NearestRank => "nearest rank".to_string(),
        },
    ));
    facts
}

/// The client's own limits, when the run measured them: ceiling, wake latency, wake hint.
fn client_fact(report: &Report) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(c) = &report.client_calibration {
        parts.push(format!(
            "ceiling {} req/s, {} events/s",
            sig3(c.requests_per_second),
            sig3(c.events_per_second)
        ));
        if let Some(w) = &c.wake_latency {
            let slow = if w.p99_ms > crate::wakeup::SLOW_WAKE_MS {
                " (slow: timings can be off by this much)"
            } else {
                ""
            };
            parts.push(format!("wakeup late by p99 {} ms{slow}", sig3(w.p99_ms)));
        }
    }
    if let Some(hint) = &report.host.cpu_latency_hint {
        parts.push(match hint.status {
            crate::wakeup::HintStatus::Held => "CPU wake-latency hint held".to_string(),
            crate::wakeup::HintStatus::Off => "CPU wake-latency hint off".to_string(),
            crate::wakeup::HintStatus::Unavailable => {
                "CPU wake-latency hint unavailable".to_string()
            }
        });
    }
    if report.client_busy_poll {
        parts.push("busy polling".to_string());
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn short_sha(sha: &str) -> String {
    if sha.is_empty() {
        String::new()
    } else {
        format!(", sha256 {}", sha.get(..12).unwrap_or(sha))
    }
}

/// How a phase drives load: `c=16` or `5 rps`.
pub fn load_label(p: &PhaseResult) -> String {
    match (p.concurrency, p.rate_rps) {
        (Some(c), None) => format!("c={c}"),
        (None, Some(r)) => format!("{} rps", sig3(r)),
        (Some(c), Some(r)) => format!("{} rps, max c={c}", sig3(r)),
        (None, None) => "–".to_string(),
    }
}

fn dist_ms(
    d: Option<&crate::metrics::Distribution>,
    f: fn(&crate::metrics::Distribution) -> f64,
) -> Cell {
    Cell::plain(d.map_or_else(|| "–".to_string(), |d| ms_from_s(f(d))))
}

/// Seed 004's columns, one row per phase in plan order. Latencies in milliseconds.
/// Embeddings and rerank phases add inputs/s and input tok/s; a report of only those has
/// no output, TTFT or TPOT columns, and E2E p99 instead.
pub fn phases(report: &Report) -> Table {
    let encodes = report.phases.iter().any(|p| p.summary.encodes());
    let generates = !encodes || report.phases.iter().any(|p| !p.summary.encodes());
    let mut columns = vec![
        ("Phase", L),
        ("Route", L),
        ("Load", L),
        ("Requests", R),
        ("Errors", R),
    ];
    if generates {
        columns.push(("Output tok/s", R));
    }
    columns.push(("Req/s", R));
    if encodes {
        columns.extend([("Inputs/s", R), ("Input tok/s", R)]);
    }
    if generates {
        columns.extend([
            ("TTFT p50 (ms)", R),
            ("TTFT p95 (ms)", R),
            ("TTFT p99 (ms)", R),
            ("TPOT p50 (ms)", R),
            ("TPOT p95 (ms)", R),
        ]);
    }
    columns.extend([("E2E p50 (ms)", R), ("E2E p95 (ms)", R)]);
    if !generates {
        columns.push(("E2E p99 (ms)", R));
    }
    let mut t = Table::new(&columns);
    let rate = |v: Option<f64>| Cell::plain(v.map_or_else(|| "–".to_string(), sig3));
    for p in &report.phases {
        let s = &p.summary;
        let name = match (&p.recheck_of, p.partial) {
            (_, true) => Cell::marked(format!("{} (partial)", p.phase), Mark::Warn),
            (Some(orig), false) => Cell::plain(format!("{} (recheck of {orig})", p.phase)),
            (None, false) => Cell::plain(p.phase.clone()),
        };
        let errors = if s.errors > 0 {
            Cell::marked(s.errors.to_string(), Mark::Bad)
        } else {
            Cell::plain("0")
        };
        let mut row = vec![
            name,
            Cell::plain(p.route.clone()),
            Cell::plain(load_label(p)),
            Cell::plain(s.requests.to_string()),
            errors,
        ];
        if generates {
            // An embeddings phase generates nothing: no output rate rather than a zero.
            row.push(rate((!s.encodes()).then_some(s.output_tokens_per_second)));
        }
        row.push(Cell::plain(sig3(s.request_rate)));
        if encodes {
            row.extend([rate(s.inputs_per_second), rate(s.input_tokens_per_second)]);
        }
        if generates {
            row.extend([
                dist_ms(s.ttft.as_ref(), |d| d.p50),
                dist_ms(s.ttft.as_ref(), |d| d.p95),
                dist_ms(s.ttft.as_ref(), |d| d.p99),
                dist_ms(s.tpot.as_ref(), |d| d.p50),
                dist_ms(s.tpot.as_ref(), |d| d.p95),
            ]);
        }
        row.extend([
            dist_ms(s.e2e.as_ref(), |d| d.p50),
            dist_ms(s.e2e.as_ref(), |d| d.p95),
        ]);
        if !generates {
            row.push(dist_ms(s.e2e.as_ref(), |d| d.p99));
        }
        t.rows.push(row);
    }
    t
}

/// The unit of a drift metric's numbers, from its name.
fn drift_unit(metric: &str) -> Unit {
    metric
        .parse::<FigurePath>()
        .map(|m| m.unit())
        .unwrap_or(Unit::Count)
}

fn drift_value(v: Option<f64>, metric: &str) -> String {
    v.map_or_else(|| "–".to_string(), |v| with_unit(v, drift_unit(metric)))
}

/// A change as written in the rechecks table: relative, or absolute points for `error_rate`.
pub fn drift_change(metric: &str, change: Option<f64>) -> String {
    match change {
        None => "–".to_string(),
        Some(c) if metric == "error_rate" => {
            let pts = c * 100.0;
            if pts < 0.0 {
                format!("−{} pts", sig3(-pts))
            } else {
                format!("+{} pts", sig3(pts))
            }
        }
        Some(c) => pct_change(c),
    }
}

fn drift_tolerance(metric: &str, tol: f64) -> String {
    if metric == "error_rate" {
        format!("±{} pts", sig3(tol * 100.0))
    } else {
        format!("±{}%", sig3(tol * 100.0))
    }
}

/// Every recheck metric: original, recheck, change, tolerance, verdict.
pub fn rechecks(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Original → recheck", L),
        ("Metric", L),
        ("Original", R),
        ("Recheck", R),
        ("Change", R),
        ("Tolerance", R),
        ("Verdict", L),
    ]);
    for pair in &report.rechecks {
        for d in &pair.metrics {
            let drifted = d.verdict == DriftVerdict::Drifted;
            let mark = if drifted { Mark::Bad } else { Mark::Plain };
            t.rows.push(vec![
                Cell::plain(format!("{} → {}", pair.original, pair.recheck)),
                Cell::marked(d.metric.clone(), mark),
                Cell::plain(drift_value(d.original, &d.metric)),
                Cell::plain(drift_value(d.recheck, &d.metric)),
                Cell::marked(drift_change(&d.metric, d.change), mark),
                Cell::plain(drift_tolerance(&d.metric, d.tolerance)),
                match d.verdict {
                    DriftVerdict::Drifted => Cell::marked("DRIFTED", Mark::Bad),
                    DriftVerdict::Inconclusive => Cell::marked("inconclusive", Mark::Warn),
                    DriftVerdict::Stable => Cell::marked("stable", Mark::Good),
                },
            ]);
        }
    }
    t
}

/// How many rechecks were inconclusive (none drifted, some change the samples cannot tell
/// from noise), for the sentence above the rechecks table.
pub fn inconclusive_rechecks(report: &Report) -> usize {
    report
        .rechecks
        .iter()
        .filter(|p| p.verdict == DriftVerdict::Inconclusive)
        .count()
}

/// The sentence for rechecks none of which drifted.
pub fn no_drift_sentence(report: &Report) -> String {
    let n = report.rechecks.len();
    match inconclusive_rechecks(report) {
        0 => format!("All {n} rechecks stayed within tolerance."),
        k => format!(
            "No recheck drifted; {k} of {n} were inconclusive (a change beyond tolerance \
             that the samples cannot tell from noise)."
        ),
    }
}

/// One line per drifted metric, e.g. `gateway-c4 → recheck-c4: ttft.p99 14.9 s → 0.322 s (−97.8%)`.
pub fn drift_headlines(report: &Report) -> Vec<String> {
    let mut lines = Vec::new();
    for pair in &report.rechecks {
        for d in &pair.metrics {
            if d.verdict == DriftVerdict::Drifted {
                lines.push(format!(
                    "{} → {}: {} {} → {} ({})",
                    pair.original,
                    pair.recheck,
                    d.metric,
                    drift_value(d.original, &d.metric),
                    drift_value(d.recheck, &d.metric),
                    drift_change(&d.metric, d.change)
                ));
            }
        }
    }
    lines
}

/// Planned against server-reported prompt tokens, per phase that planned a size.
pub fn prompt_tokens(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", L),
        ("Planned mean", R),
        ("Actual mean", R),
        ("Error", R),
        ("Tolerance", R),
        ("Check", L),
    ]);
    for p in &report.phases {
        let c = &p.prompt_tokens;
        if c.planned_mean.is_none() && c.actual_mean.is_none() {
            continue;
        }
        let opt = |v: Option<f64>| v.map_or_else(|| "–".to_string(), sig3);
        t.rows.push(vec![
            Cell::plain(p.phase.clone()),
            Cell::plain(opt(c.planned_mean)),
            Cell::plain(opt(c.actual_mean)),
            Cell::marked(
                c.relative_error.map_or_else(|| "–".to_string(), pct_change),
                if c.warning { Mark::Warn } else { Mark::Plain },
            ),
            Cell::plain(format!("±{}%", sig3(c.tolerance * 100.0))),
            if c.warning {
                Cell::marked("WARNING: outside tolerance", Mark::Warn)
            } else if c.relative_error.is_some() {
                Cell::marked("ok", Mark::Good)
            } else {
                Cell::plain("not checked")
            },
        ]);
    }
    t
}

/// The first error message seen per phase and kind, for the error summary.
fn first_messages(p: &PhaseResult) -> BTreeMap<ErrorKind, String> {
    let mut out = BTreeMap::new();
    for r in &p.request_timings {
        if let Some(e) = &r.error {
            out.entry(e.kind).or_insert_with(|| {
                let mut m = match e.status {
                    Some(s) => format!("HTTP {s}: {}", e.message),
                    None => e.message.clone(),
                };
                if m.chars().count() > 80 {
                    m = m.chars().take(79).collect::<String>() + "…";
                }
                m
            });
        }
    }
    out
}

/// Errors per phase and kind, with an example message when records exist.
pub fn errors(report: &Report) -> Table {
    let mut t = Table::new(&[("Phase", L), ("Kind", L), ("Count", R), ("Example", L)]);
    for p in &report.phases {
        let examples = first_messages(p);
        for (kind, count) in &p.summary.errors_by_kind {
            let kind_name = serde_json::to_value(kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            t.rows.push(vec![
                Cell::plain(p.phase.clone()),
                Cell::plain(kind_name),
                Cell::marked(count.to_string(), Mark::Bad),
                Cell::plain(examples.get(kind).cloned().unwrap_or_default()),
            ]);
        }
        // Errors counted without a kind breakdown (imported reports).
        let by_kind: u64 = p.summary.errors_by_kind.values().sum();
        if p.summary.errors > by_kind {
            t.rows.push(vec![
                Cell::plain(p.phase.clone()),
                Cell::plain("unknown"),
                Cell::marked((p.summary.errors - by_kind).to_string(), Mark::Bad),
                Cell::plain(""),
            ]);
        }
    }
    t
}

/// How much of a cause's example message the table shows, in characters.
const CAUSE_EXAMPLE_CHARS: usize = 160;

/// A phase's failed requests by cause: its summary's `errors_by_cause`, or, for a report
/// written before causes, the causes of its records when it holds every one of them.
pub fn phase_error_causes(p: &PhaseResult) -> Vec<ErrorCause> {
    if !p.summary.errors_by_cause.is_empty() || p.summary.errors == 0 {
        return p.summary.errors_by_cause.clone();
    }
    let every_record = p.records.is_none() && p.request_timings.len() as u64 == p.summary.requests;
    if every_record {
        crate::metrics::errors_by_cause(&p.request_timings)
    } else {
        Vec::new()
    }
}

/// Failed requests per phase and cause, most frequent first, with one example message.
pub fn error_causes(report: &Report) -> Table {
    let mut t = Table::new(&[("Phase", L), ("Count", R), ("Cause", L), ("Example", L)]);
    for p in &report.phases {
        for c in phase_error_causes(p) {
            let mut example = c.example;
            if let Some((cut, _)) = example.char_indices().nth(CAUSE_EXAMPLE_CHARS) {
                example = format!("{}…", &example[..cut]);
            }
            t.rows.push(vec![
                Cell::plain(p.phase.clone()),
                Cell::marked(c.count.to_string(), Mark::Bad),
                Cell::plain(c.cause),
                Cell::plain(example),
            ]);
        }
    }
    t
}

/// Phases whose served prompt size missed the plan beyond tolerance.
pub fn prompt_warnings(report: &Report) -> Vec<&str> {
    report
        .phases
        .iter()
        .filter(|p| p.prompt_tokens.warning)
        .map(|p| p.phase.as_str())
        .collect()
}
