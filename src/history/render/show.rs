//! `history show RUN` written out: a run's facts, provenance, phases with their headline
//! figures (one unit per column, named in its heading), capacity searches, errors and how
//! imported figures differ. JSON is the stored run with each figure's unit beside it.

use serde_json::Value;

use super::{Shown, unit_of};
use crate::history::record::PhaseRow;
use crate::history::searches::{SearchRow, load_name};
use crate::history::store::{StoredRun, json as stored_json, normalize_time, trust_name};
use crate::report::render::document::{Block, Document, Level, Span};
use crate::report::render::table::{Align, Cell, Table};

/// The figures a phase's row shows.
const HEADLINE: [&str; 6] = [
    "ttft.p50",
    "ttft.p99",
    "tpot.p50",
    "e2e.p99",
    "output_tokens_per_second",
    "error_rate",
];

/// The run as a markdown page.
pub fn markdown(stored: &StoredRun) -> String {
    document(stored).markdown()
}

/// The run as JSON: everything stored, each figure with its unit's symbol.
pub fn json(stored: &StoredRun) -> Value {
    let mut doc = serde_json::to_value(stored).unwrap_or(Value::Null);
    let figures = doc["phases"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .filter_map(|p| p["figures"].as_array_mut())
        .flatten();
    for figure in figures {
        let unit = figure["figure"].as_str().map(|f| unit_of(f).symbol());
        if let (Some(unit), Some(row)) = (unit, figure.as_object_mut()) {
            row.insert("unit".into(), unit.into());
        }
    }
    doc
}

/// The run as a [`Document`].
pub(crate) fn document(stored: &StoredRun) -> Document {
    let mut blocks = vec![Block::List(
        facts(stored)
            .into_iter()
            .map(|(label, value)| vec![Span::text(format!("{label}: {value}"))])
            .collect(),
    )];
    provenance(&mut blocks, stored);
    blocks.push(Block::Heading(Level::Section, "Phases".into()));
    blocks.push(Block::Table(phases(&stored.rows.phases)));
    if !stored.rows.searches.is_empty() {
        blocks.push(Block::Heading(Level::Section, "Capacity searches".into()));
        blocks.push(Block::Table(searches(&stored.rows.searches)));
    }
    let phases = &stored.rows.phases;
    let errors = text_table(
        &["Phase", "Cause", "Count", "Example"],
        phases.iter().flat_map(|p| {
            p.errors_by_cause.iter().map(|e| {
                vec![
                    p.phase.clone(),
                    e.cause.clone(),
                    e.count.to_string(),
                    e.example.clone(),
                ]
            })
        }),
    );
    section(&mut blocks, "Errors by cause", errors);
    let notes = text_table(
        &["Phase", "Figure", "How it differs"],
        phases.iter().flat_map(|p| {
            p.figures
                .iter()
                .filter_map(|f| Some(vec![p.phase.clone(), f.figure.clone(), f.note.clone()?]))
        }),
    );
    section(&mut blocks, "Definition notes", notes);
    Document {
        title: format!("Run {}", stored.summary.id),
        blocks,
    }
}

/// The run's facts that it has, labelled, in reading order.
fn facts(stored: &StoredRun) -> Vec<(&'static str, String)> {
    let run = &stored.rows.run;
    let file = |path: &Option<String>, sha: &Option<String>| {
        path.as_ref()
            .map(|p| format!("{p} (sha256 {})", sha.as_deref().unwrap_or("?")))
    };
    let complete = if run.complete { "yes" } else { "no (partial)" };
    let labels = stored_json(&run.metadata);
    let facts = [
        ("Plan", Some(run.plan.clone())),
        ("Run id", Some(run.run_id.clone())),
        (
            "Source",
            Some(format!("{} ({})", run.source.name(), run.tool)),
        ),
        ("Started", Some(shown_time(&run.started_at))),
        ("Finished", run.finished_at.as_deref().map(shown_time)),
        ("Complete", Some(complete.to_string())),
        ("Stop reason", run.stop_reason.clone()),
        ("Excluded", stored.summary.excluded.clone()),
        (
            "Tags",
            Some(stored.summary.tags.join(", ")).filter(|t| !t.is_empty()),
        ),
        ("Host", run.hostname.clone()),
        ("Plan sha256", run.plan_sha256.clone()),
        ("Report", file(&run.report_path, &run.report_sha256)),
        ("Requests", file(&run.records_path, &run.records_sha256)),
        ("Recorded", Some(shown_time(&stored.summary.recorded_at))),
        (
            "Labels",
            Some(labels.to_string()).filter(|_| labels.as_object().is_some_and(|m| !m.is_empty())),
        ),
    ];
    facts
        .into_iter()
        .filter_map(|(label, value)| Some((label, value?)))
        .collect()
}

/// The provenance labels the run recorded, one row each.
fn provenance(blocks: &mut Vec<Block>, stored: &StoredRun) {
    let Some(provenance) = &stored.rows.run.provenance else {
        return;
    };
    let doc = stored_json(provenance);
    let rows = doc.as_object().into_iter().flatten().map(|(label, v)| {
        let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
        vec![label.clone(), v]
    });
    section(blocks, "Provenance", text_table(&["Label", "Value"], rows));
}

/// One row per phase: its counts and trust, then each headline figure in its column's unit.
fn phases(phases: &[PhaseRow]) -> Table {
    let value =
        |p: &PhaseRow, name: &str| p.figures.iter().find(|f| f.figure == name).map(|f| f.value);
    let shown: Vec<Shown> = HEADLINE
        .iter()
        .map(|name| Shown::for_values(name, phases.iter().filter_map(|p| value(p, name))))
        .collect();
    let headings: Vec<String> = HEADLINE
        .iter()
        .zip(&shown)
        .map(|(name, s)| s.label(name))
        .collect();
    let mut columns = vec![
        ("Phase", Align::Left),
        ("Target", Align::Left),
        ("Requests", Align::Right),
        ("Errors", Align::Right),
        ("Trust", Align::Left),
        ("Partial", Align::Left),
    ];
    columns.extend(headings.iter().map(|h| (h.as_str(), Align::Right)));
    let mut table = Table::new(&columns);
    for p in phases {
        let mut row = vec![
            Cell::plain(p.phase.clone()),
            Cell::plain(p.target.clone()),
            Cell::plain(p.requests.to_string()),
            Cell::plain(p.errors.to_string()),
            Cell::plain(
                p.trust
                    .map(|t| trust_name(t).to_string())
                    .unwrap_or_default(),
            ),
            Cell::plain(if p.partial { "yes" } else { "" }),
        ];
        row.extend(
            HEADLINE.iter().zip(&shown).map(|(name, s)| {
                Cell::plain(value(p, name).map(|v| s.number(v)).unwrap_or_default())
            }),
        );
        table.rows.push(row);
    }
    table
}

fn searches(searches: &[SearchRow]) -> Table {
    // Concurrencies are whole; rates get four significant digits.
    let load = |v: f64| {
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            four_digits(v)
        }
    };
    let end = |e: Option<f64>| e.map_or("open".to_string(), load);
    let head = [
        "Search",
        "Target",
        "Load",
        "Capacity",
        "Interval",
        "Answer",
        "Stop reason",
        "Objective",
    ];
    text_table(
        &head,
        searches.iter().map(|s| {
            vec![
                s.search.clone(),
                s.target.clone(),
                load_name(s.load).to_string(),
                s.capacity.map(load).unwrap_or_else(|| "–".into()),
                format!("[{}, {}]", end(s.interval[0]), end(s.interval[1])),
                s.answer.mark().unwrap_or("answer").to_string(),
                s.stop_reason.clone(),
                s.objective.clone(),
            ]
        }),
    )
}

/// A table of text, every column left-aligned.
fn text_table(head: &[&str], rows: impl Iterator<Item = Vec<String>>) -> Table {
    let columns: Vec<(&str, Align)> = head.iter().map(|h| (*h, Align::Left)).collect();
    let mut table = Table::new(&columns);
    table.rows = rows
        .map(|row| row.into_iter().map(Cell::plain).collect())
        .collect();
    table
}

/// A heading and its table, when the table has rows.
fn section(blocks: &mut Vec<Block>, heading: &str, table: Table) {
    if !table.is_empty() {
        blocks.push(Block::Heading(Level::Section, heading.into()));
        blocks.push(Block::Table(table));
    }
}

/// A stored time as every line of `show` writes it: UTC, milliseconds, `Z` (the start is
/// stored so; the finish as the report wrote it).
fn shown_time(text: &str) -> String {
    normalize_time(text).unwrap_or_else(|| text.to_string())
}

/// A stored number, to four significant digits.
fn four_digits(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return value.to_string();
    }
    let digits = (3 - value.abs().log10().floor() as i32).max(0) as usize;
    format!("{value:.digits$}")
}
