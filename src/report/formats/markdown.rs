//! Markdown writer: a report sized for a pull-request comment.

use std::fmt::Write;

use crate::report::model::Report;
use crate::report::render::table;
use crate::report::render::table_text::{cell, inline, markdown_table};

/// Render `report` as GitHub-flavoured markdown.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    head(&mut out, report);
    phases_section(&mut out, report);
    crate::report::render::recovery_table::markdown_section(&mut out, report);
    crate::report::render::until_table::markdown_section(&mut out, report);
    estimates_sections(&mut out, report);
    rechecks_section(&mut out, report);
    repeats_section(&mut out, report);
    diagnostics_sections(&mut out, report);
    errors_section(&mut out, report);
    out
}

/// Title, the partial-run banner and the run's facts.
fn head(out: &mut String, report: &Report) {
    let _ = writeln!(out, "# servebench report: {}\n", inline(&report.plan.name));
    if report.partial {
        let _ = writeln!(
            out,
            "> **Partial run:** not every phase finished{}.\n",
            report
                .stop_reason
                .as_deref()
                .map(|r| format!(" ({})", inline(r)))
                .unwrap_or_default()
        );
    }
    out.push_str("| | |\n|---|---|\n");
    for (k, v) in table::header_facts(report) {
        let _ = writeln!(out, "| {} | {} |", cell(&k), cell(&v));
    }
}

/// The phases table and, when any phase has them, its hooks.
fn phases_section(out: &mut String, report: &Report) {
    out.push_str("\n## Phases\n\n");
    out.push_str("Latencies in milliseconds; phases in plan order.\n\n");
    markdown_table(out, &table::phases(report));
    for note in crate::report::render::sampling::notes(report) {
        let _ = writeln!(out, "\n{}", inline(&note));
    }
    let hooks = crate::report::render::hook_table::table(report);
    if !hooks.is_empty() {
        out.push_str("\n### Phase hooks\n\n");
        markdown_table(out, &hooks);
    }
}

/// Percentile intervals and capacity searches, when present.
fn estimates_sections(out: &mut String, report: &Report) {
    let intervals = crate::report::render::interval_table::table(report);
    if !intervals.is_empty() {
        out.push_str("\n## Percentile intervals\n\n");
        out.push_str(crate::report::render::interval_table::NOTE);
        out.push_str("\n\n");
        markdown_table(out, &intervals);
    }

    if !report.searches.is_empty() {
        out.push_str("\n## Capacity searches\n\n");
        markdown_table(out, &crate::report::render::search_table::searches(report));
        out.push('\n');
        markdown_table(out, &crate::report::render::search_table::probes(report));
    }
}

/// Arms of repeat groups: pooled figures, spread and the verdict per pair.
fn repeats_section(out: &mut String, report: &Report) {
    if !report.repeats.is_empty() {
        out.push_str("\n## Repeats\n\n");
        out.push_str("Each arm pooled over its rounds; an arm pair differs when the gap between their pooled figures is larger than either arm's range across rounds.\n\n");
        let headlines = crate::report::render::repeat_table::headlines(report);
        for h in &headlines {
            let _ = writeln!(out, "> **{}**", inline(h));
        }
        if !headlines.is_empty() {
            out.push('\n');
        }
        markdown_table(out, &crate::report::render::repeat_table::arms(report));
        out.push('\n');
        markdown_table(out, &crate::report::render::repeat_table::pairs(report));
    }
}

/// Prompt sizes, connections and backends: what explains a figure.
fn diagnostics_sections(out: &mut String, report: &Report) {
    let prompts = table::prompt_tokens(report);
    if !prompts.is_empty() {
        out.push_str("\n## Prompt tokens: planned vs actual\n\n");
        let warned = table::prompt_warnings(report);
        if !warned.is_empty() {
            let _ = writeln!(
                out,
                "> **⚠ Prompt size outside tolerance in:** {}\n",
                inline(&warned.join(", "))
            );
        }
        markdown_table(out, &prompts);
    }

    let trust = crate::report::render::trust_table::table(report);
    if !trust.is_empty() {
        out.push_str("\n## Client trust\n\n");
        let bound = crate::report::render::trust_table::client_bound(report);
        if !bound.is_empty() {
            let _ = writeln!(
                out,
                "> **⚠ Client-bound phases:** {}\n",
                inline(&bound.join(", "))
            );
        }
        markdown_table(out, &trust);
        let _ = writeln!(
            out,
            "\n{}",
            inline(&crate::report::render::trust_table::note())
        );
    }

    let connections = crate::report::render::connections::table(report);
    let connection_warnings = crate::report::render::connections::warnings(report);
    if !connections.is_empty() || !connection_warnings.is_empty() {
        out.push_str("\n## Connections and server timing\n\n");
        for w in connection_warnings {
            let _ = writeln!(out, "> **⚠ {}**\n", inline(&w));
        }
        if !connections.is_empty() {
            markdown_table(out, &connections);
        }
        let split = crate::report::render::connections::split_table(report);
        if !split.is_empty() {
            out.push_str("\n### Latency split\n\n");
            markdown_table(out, &split);
            let _ = writeln!(out, "\n{}", crate::report::render::connections::SPLIT_NOTE);
        }
    }

    let sessions = crate::report::render::session_table::table(report);
    if !sessions.is_empty() {
        out.push_str("\n## Sessions by turn\n\n");
        markdown_table(out, &sessions);
        let _ = writeln!(out, "\n{}", crate::report::render::session_table::NOTE);
        if crate::report::render::session_table::has_tool_calls(report) {
            let _ = writeln!(
                out,
                "\n{}",
                crate::report::render::session_table::TOOLS_NOTE
            );
        }
    }

    let backends = crate::report::render::backends::table(report);
    let metrics_warnings = crate::report::render::backends::warnings(report);
    let metrics_notes = crate::report::render::backends::notes(report);
    if !backends.is_empty() || !metrics_warnings.is_empty() || !metrics_notes.is_empty() {
        out.push_str("\n## Backends behind the gateway\n\n");
        for w in metrics_warnings {
            let _ = writeln!(out, "> **⚠ {}**\n", inline(&w));
        }
        for n in metrics_notes {
            let _ = writeln!(out, "> {}\n", inline(&n));
        }
        markdown_table(out, &backends);
    }
}

/// Failed requests by kind, then by cause.
fn errors_section(out: &mut String, report: &Report) {
    out.push_str("\n## Errors\n\n");
    let errors = table::errors(report);
    if errors.is_empty() {
        out.push_str("No failed requests.\n");
    } else {
        markdown_table(out, &errors);
    }
    let causes = table::error_causes(report);
    if !causes.is_empty() {
        out.push_str("\n### Errors by cause\n\n");
        markdown_table(out, &causes);
    }
}

/// Drift verdicts of the rechecks: a headline and the table.
fn rechecks_section(out: &mut String, report: &Report) {
    if report.rechecks.is_empty() {
        return;
    }
    out.push_str("\n## Rechecks\n\n");
    let headlines = table::drift_headlines(report);
    let drifted = report
        .rechecks
        .iter()
        .filter(|p| p.verdict == crate::report::model::DriftVerdict::Drifted)
        .count();
    if headlines.is_empty() {
        let _ = writeln!(out, "{}\n", inline(&table::no_drift_sentence(report)));
    } else {
        let _ = writeln!(
            out,
            "> **⚠ {drifted} of {} rechecks drifted:**",
            report.rechecks.len()
        );
        for h in headlines {
            let _ = writeln!(out, "> - **{}**", inline(&h));
        }
        out.push('\n');
    }
    markdown_table(out, &table::rechecks(report));
}
