//! Table content shared by the markdown and HTML writers: phases, rechecks, prompt tokens,
//! errors. Each writer only decides how a [`Table`] looks.

use std::collections::BTreeMap;

use super::numfmt::{figure_value, ms, ms_from_s, pct_change, sig3};
use crate::client::ErrorKind;
use crate::figure::{FIGURES, Figure, ShownWhen, Spec, Stat};
use crate::metrics::{Distribution, ErrorCause};
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

/// How a phase drives load: `c=16` or `5 rps`.
pub fn load_label(p: &PhaseResult) -> String {
    match (p.header.concurrency, p.header.rate_rps) {
        (Some(c), None) => format!("c={c}"),
        (None, Some(r)) => format!("{} rps", sig3(r)),
        (Some(c), Some(r)) => format!("{} rps, max c={c}", sig3(r)),
        (None, None) => "–".to_string(),
    }
}

/// The figures the phase table gives columns, with those columns' statistics: each figure
/// the figure table shows, when the report has it. A report of only embeddings or rerank
/// phases adds E2E p99 (it has no TTFT or TPOT columns).
pub(crate) fn shown_figures(
    report: &Report,
    generates: bool,
) -> Vec<(&'static Spec, &'static str, Vec<Stat>)> {
    let measured = |figure: Figure| {
        let has = |p: &PhaseResult| p.summary.distribution(figure).is_some();
        report.phases.iter().any(has)
    };
    let mut shown = Vec::new();
    for spec in &FIGURES {
        let Some(columns) = spec.shown else { continue };
        let on = match columns.when {
            ShownWhen::Always => true,
            ShownWhen::Generating => generates,
            ShownWhen::Measured => measured(spec.figure),
        };
        if !on {
            continue;
        }
        let mut stats = columns.stats.to_vec();
        if spec.figure == Figure::E2e && !generates {
            stats.push(Stat::P99);
        }
        shown.push((spec, columns.label, stats));
    }
    shown
}

/// A figure's statistic in milliseconds (its unit when it is not a time), or `–`.
pub(crate) fn figure_cell(d: Option<&Distribution>, spec: &Spec, stat: Stat) -> Cell {
    let text = match d {
        None => "–".to_string(),
        Some(d) if spec.unit == Unit::Seconds => ms_from_s(stat.of(d)),
        Some(d) if spec.unit == Unit::Millis => ms(stat.of(d)),
        Some(d) => sig3(stat.of(d)),
    };
    Cell::plain(text)
}

/// A figure's column heading: `TTFT p50 (ms)`.
pub(crate) fn figure_heading(spec: &Spec, label: &str, stat: Stat) -> String {
    let unit = match spec.unit {
        Unit::Seconds | Unit::Millis => " (ms)",
        Unit::TokensPerSecond => " (tok/s)",
        _ => "",
    };
    format!("{label} {}{unit}", stat.name())
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
    let figures = shown_figures(report, generates);
    let headings: Vec<String> = figures
        .iter()
        .flat_map(|(spec, label, stats)| {
            stats
                .iter()
                .map(move |&stat| figure_heading(spec, label, stat))
        })
        .collect();
    columns.extend(headings.iter().map(|h| (h.as_str(), R)));
    let mut t = Table::new(&columns);
    let rate = |v: Option<f64>| Cell::plain(v.map_or_else(|| "–".to_string(), sig3));
    for p in &report.phases {
        let s = &p.summary;
        let name = match (&p.header.recheck_of, p.partial) {
            (_, true) => Cell::marked(format!("{} (partial)", p.header.phase), Mark::Warn),
            (Some(orig), false) => Cell::plain(format!("{} (recheck of {orig})", p.header.phase)),
            (None, false) => Cell::plain(p.header.phase.clone()),
        };
        let errors = if s.errors > 0 {
            Cell::marked(s.errors.to_string(), Mark::Bad)
        } else {
            Cell::plain("0")
        };
        let mut row = vec![
            name,
            Cell::plain(p.header.route.clone()),
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
        for (spec, _, stats) in &figures {
            let d = s.distribution(spec.figure);
            row.extend(stats.iter().map(|&stat| figure_cell(d, spec, stat)));
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
    v.map_or_else(|| "–".to_string(), |v| figure_value(v, drift_unit(metric)))
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

/// A change's interval as the rechecks table writes it: `−3.1% … +4.2%`, or `–`.
fn change_interval_text(interval: Option<[f64; 2]>) -> String {
    interval.map_or_else(
        || "–".into(),
        |[lo, hi]| format!("{} … {}", pct_change(lo), pct_change(hi)),
    )
}

/// Every recheck metric: original, recheck, change and its interval, tolerance, verdict.
pub fn rechecks(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Original → recheck", L),
        ("Metric", L),
        ("Original", R),
        ("Recheck", R),
        ("Change", R),
        ("Change 95% interval", R),
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
                Cell::plain(change_interval_text(d.change_interval)),
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
    let why = "(the interval of a change straddles its tolerance, or a side has too few \
               samples for an interval)";
    match (inconclusive_rechecks(report), n) {
        (0, 1) => "The recheck stayed within tolerance.".to_string(),
        (0, n) => format!("All {n} rechecks stayed within tolerance."),
        (_, 1) => format!("The recheck did not drift but was inconclusive {why}."),
        (1, n) => format!("No recheck drifted; 1 of {n} was inconclusive {why}."),
        (k, n) => format!("No recheck drifted; {k} of {n} were inconclusive {why}."),
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
        let label = match session_first_turns(p) {
            Some(first) => format!(
                "{} (first turns: {first} of {})",
                p.header.phase, p.summary.requests
            ),
            None => p.header.phase.clone(),
        };
        t.rows.push(vec![
            Cell::plain(label),
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

/// Under the prompt-token table when a phase ran multi-turn sessions.
pub const SESSION_PROMPT_NOTE: &str = "First turns: a session's later turns hold the server's \
    own replies, so only its first turns have a planned size; the row compares those. Sessions \
    by turn gives every turn's prompt tokens.";

/// A multi-turn session phase's first-turn requests: the only ones its prompt check compares.
fn session_first_turns(p: &PhaseResult) -> Option<u64> {
    let sessions = p.sessions.as_ref().filter(|s| s.turns.len() > 1)?;
    sessions.turns.first().map(|t| t.requests)
}

/// Whether the prompt-token table has a session phase's first-turn row.
pub fn prompt_tokens_of_sessions(report: &Report) -> bool {
    report
        .phases
        .iter()
        .any(|p| session_first_turns(p).is_some() && p.prompt_tokens.planned_mean.is_some())
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
                Cell::plain(p.header.phase.clone()),
                Cell::plain(kind_name),
                Cell::marked(count.to_string(), Mark::Bad),
                Cell::plain(examples.get(kind).cloned().unwrap_or_default()),
            ]);
        }
        // Errors counted without a kind breakdown (imported reports).
        let by_kind: u64 = p.summary.errors_by_kind.values().sum();
        if p.summary.errors > by_kind {
            t.rows.push(vec![
                Cell::plain(p.header.phase.clone()),
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
                Cell::plain(p.header.phase.clone()),
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
        .map(|p| p.header.phase.as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headings(t: &Table) -> Vec<&str> {
        t.columns.iter().map(|c| c.title.as_str()).collect()
    }

    #[test]
    fn a_figure_shown_when_measured_gets_its_columns_only_then() {
        let mut report = crate::report::sample_report();
        let before = phases(&report);
        assert!(headings(&before).contains(&"TTFT p99 (ms)"));
        assert!(
            !headings(&before)
                .iter()
                .any(|h| h.starts_with("Server queue"))
        );

        let queue = Distribution {
            p50: 1.5,
            p95: 2.0,
            p99: 12.25,
            ..Distribution::default()
        };
        let figures = &mut report.phases[0].summary.figures;
        figures.set(Figure::ServerQueue, Some(queue));
        let after = phases(&report);
        let names = headings(&after);
        let p50 = names.iter().position(|h| *h == "Server queue p50 (ms)");
        let p99 = names.iter().position(|h| *h == "Server queue p99 (ms)");
        let (p50, p99) = (p50.expect("p50 column"), p99.expect("p99 column"));
        assert_eq!(names.len(), headings(&before).len() + 2);
        // Milliseconds as measured, not converted from seconds.
        assert_eq!(after.rows[0][p50].text, "1.50");
        assert_eq!(after.rows[0][p99].text, "12.2");
        // A phase without the server's timing shows a dash.
        if report.phases.len() > 1 {
            assert_eq!(after.rows[1][p50].text, "–");
        }
    }

    #[test]
    fn a_session_phases_prompt_check_is_labelled_as_its_first_turns() {
        let mut report = crate::report::sample_report();
        assert!(!prompt_tokens_of_sessions(&report));
        let phase = &mut report.phases[0];
        phase.prompt_tokens.planned_mean = Some(1269.0);
        phase.prompt_tokens.actual_mean = Some(1269.0);
        phase.summary.requests = 40;
        let turn = |turn: u64| crate::metrics::TurnFigures {
            turn,
            requests: if turn == 0 { 8 } else { 32 },
            ..Default::default()
        };
        phase.sessions = Some(crate::metrics::SessionSummary {
            sessions: 8,
            complete: 8,
            duration: None,
            turns: vec![turn(0), turn(1)],
        });
        let name = phase.header.phase.clone();
        let t = prompt_tokens(&report);
        assert_eq!(t.rows[0][0].text, format!("{name} (first turns: 8 of 40)"));
        assert!(prompt_tokens_of_sessions(&report));
        // A single-turn "session" is an ordinary request: its row is the phase's.
        report.phases[0]
            .sessions
            .as_mut()
            .unwrap()
            .turns
            .truncate(1);
        assert_eq!(prompt_tokens(&report).rows[0][0].text, name);
        assert!(!prompt_tokens_of_sessions(&report));
    }

    #[test]
    fn the_recheck_sentence_agrees_with_its_count() {
        let mut report = crate::report::sample_report();
        report.rechecks.truncate(1);
        assert_eq!(report.rechecks.len(), 1, "the sample has a recheck");
        report.rechecks[0].verdict = DriftVerdict::Inconclusive;
        assert!(
            no_drift_sentence(&report)
                .starts_with("The recheck did not drift but was inconclusive (")
        );
        let again = report.rechecks[0].clone();
        report.rechecks.push(again);
        report.rechecks[1].verdict = DriftVerdict::Stable;
        assert!(
            no_drift_sentence(&report).starts_with("No recheck drifted; 1 of 2 was inconclusive (")
        );
        report.rechecks[1].verdict = DriftVerdict::Inconclusive;
        assert!(
            no_drift_sentence(&report)
                .starts_with("No recheck drifted; 2 of 2 were inconclusive (")
        );
    }
}
