//! `history show RUN`: a run's provenance, phases (with their headline figures), capacity
//! searches and errors.

use super::{OutputArgs, OutputFormat, fail, md_table, open, to_json};
use crate::commands::emit;
use crate::exit::Exit;
use crate::history::record::PhaseRow;
use crate::history::searches::{SearchRow, load_name};
use crate::history::store::{StoredRun, json, normalize_time};
use crate::history::{Location, OpenMode, Store as _};

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The run's id (see `history list`).
    pub run: String,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The figures a phase's line shows.
const HEADLINE: [&str; 5] = [
    "ttft.p50",
    "ttft.p99",
    "e2e.p99",
    "output_tokens_per_second",
    "error_rate",
];

pub fn run(location: &Location, args: &ShowArgs) -> Exit {
    let run = match open(location, OpenMode::Existing).and_then(|s| s.run(&args.run)) {
        Ok(run) => run,
        Err(e) => return fail(&e),
    };
    let text = match args.output.format {
        OutputFormat::Json => to_json(&run),
        OutputFormat::Md => markdown(&run),
    };
    emit(&text, args.output.output.as_deref())
}

fn markdown(stored: &StoredRun) -> String {
    let run = &stored.rows.run;
    let mut out = format!("# Run {}\n\n", stored.summary.id);
    let facts = [
        ("Plan", Some(run.plan.clone())),
        ("Run id", Some(run.run_id.clone())),
        (
            "Source",
            Some(format!("{} ({})", run.source.name(), run.tool)),
        ),
        ("Started", Some(shown_time(&run.started_at))),
        ("Finished", run.finished_at.as_deref().map(shown_time)),
        (
            "Complete",
            Some(if run.complete { "yes" } else { "no (partial)" }.to_string()),
        ),
        ("Stop reason", run.stop_reason.clone()),
        ("Excluded", stored.summary.excluded.clone()),
        (
            "Tags",
            Some(stored.summary.tags.join(", ")).filter(|t| !t.is_empty()),
        ),
        ("Host", run.hostname.clone()),
        ("Plan sha256", run.plan_sha256.clone()),
        (
            "Report",
            run.report_path.as_ref().map(|p| {
                format!(
                    "{p} (sha256 {})",
                    run.report_sha256.as_deref().unwrap_or("?")
                )
            }),
        ),
        (
            "Requests",
            run.records_path.as_ref().map(|p| {
                format!(
                    "{p} (sha256 {})",
                    run.records_sha256.as_deref().unwrap_or("?")
                )
            }),
        ),
        ("Recorded", Some(shown_time(&stored.summary.recorded_at))),
    ];
    for (label, value) in facts {
        if let Some(value) = value {
            out.push_str(&format!("- {label}: {value}\n"));
        }
    }
    let labels = json(&run.metadata);
    if labels.as_object().is_some_and(|m| !m.is_empty()) {
        out.push_str(&format!("- Labels: {labels}\n"));
    }
    if let Some(provenance) = &run.provenance {
        out.push_str(&format!(
            "\n## Provenance\n\n```json\n{}\n```\n",
            serde_json::to_string_pretty(&json(provenance)).unwrap_or_default()
        ));
    }
    out.push_str("\n## Phases\n\n");
    let mut head = vec!["Phase", "Target", "Requests", "Errors", "Trust", "Partial"];
    head.extend(HEADLINE);
    let rows: Vec<Vec<String>> = stored.rows.phases.iter().map(phase_line).collect();
    out.push_str(&md_table(&head, &rows));
    if !stored.rows.searches.is_empty() {
        out.push_str("\n## Capacity searches\n\n");
        let rows: Vec<Vec<String>> = stored.rows.searches.iter().map(search_line).collect();
        out.push_str(&md_table(
            &[
                "Search",
                "Target",
                "Load",
                "Capacity",
                "Interval",
                "Answer",
                "Stop reason",
                "Objective",
            ],
            &rows,
        ));
    }
    let errors: Vec<Vec<String>> = stored
        .rows
        .phases
        .iter()
        .flat_map(|p| {
            p.errors_by_cause.iter().map(|e| {
                vec![
                    p.phase.clone(),
                    e.cause.clone(),
                    e.count.to_string(),
                    e.example.clone(),
                ]
            })
        })
        .collect();
    if !errors.is_empty() {
        out.push_str("\n## Errors by cause\n\n");
        out.push_str(&md_table(&["Phase", "Cause", "Count", "Example"], &errors));
    }
    let notes: Vec<Vec<String>> = stored
        .rows
        .phases
        .iter()
        .flat_map(|p| p.figures.iter().map(move |f| (p, f)))
        .filter_map(|(p, f)| Some(vec![p.phase.clone(), f.figure.clone(), f.note.clone()?]))
        .collect();
    if !notes.is_empty() {
        out.push_str("\n## Definition notes\n\n");
        out.push_str(&md_table(&["Phase", "Figure", "How it differs"], &notes));
    }
    out
}

fn phase_line(p: &PhaseRow) -> Vec<String> {
    let mut line = vec![
        p.phase.clone(),
        p.target.clone(),
        p.requests.to_string(),
        p.errors.to_string(),
        p.trust
            .map(|t| crate::history::store::trust_name(t).to_string())
            .unwrap_or_default(),
        if p.partial { "yes" } else { "" }.to_string(),
    ];
    for name in HEADLINE {
        let value = p.figures.iter().find(|f| f.figure == name);
        line.push(
            value
                .map(|f| crate::history::render::value(f.value, name))
                .unwrap_or_default(),
        );
    }
    line
}

/// A stored time as every line of `show` writes it: UTC, milliseconds, `Z` (the start is
/// stored so; the finish as the report wrote it).
fn shown_time(text: &str) -> String {
    normalize_time(text).unwrap_or_else(|| text.to_string())
}

fn search_line(s: &SearchRow) -> Vec<String> {
    // Concurrencies are whole; rates get four significant digits.
    let load = |v: f64| {
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format_value(v)
        }
    };
    let end = |e: Option<f64>| e.map_or("open".to_string(), load);
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
}

/// A stored number, to four significant digits.
pub fn format_value(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return value.to_string();
    }
    let digits = (3 - value.abs().log10().floor() as i32).max(0) as usize;
    format!("{value:.digits$}")
}
