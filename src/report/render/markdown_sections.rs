//! Each section's body in markdown, sized for a pull-request comment; [`super::sections`]
//! declares which sections there are and writes their headings.

use std::fmt::Write;

use super::repeat_table;
use super::table_text::{inline, markdown_table};
use super::{backends, connections, hook_table, interval_table, recovery_table};
use super::{load_table, pareto, until_table};
use super::{sampling, search_table, server_table, session_table, table, trust_table};
use crate::report::model::{DriftVerdict, Report};

/// The phases table and, when any phase has them, its hooks.
pub fn phases(out: &mut String, report: &Report) {
    out.push_str("Latencies in milliseconds; phases in plan order.\n\n");
    markdown_table(out, &table::phases(report));
    for note in sampling::notes(report) {
        let _ = writeln!(out, "\n{}", inline(&note));
    }
    let hooks = hook_table::table(report);
    if !hooks.is_empty() {
        out.push_str("\n### Phase hooks\n\n");
        markdown_table(out, &hooks);
    }
}

/// Every mark and, when any phase measured one, its recovery.
pub fn marks_and_recovery(out: &mut String, report: &Report) {
    markdown_table(out, &recovery_table::marks(report));
    let recovery = recovery_table::recovery(report);
    if !recovery.is_empty() {
        out.push('\n');
        out.push_str(recovery_table::NOTE);
        out.push_str("\n\n");
        markdown_table(out, &recovery);
    }
}

/// What ended each `until` phase, and its estimates then.
pub fn run_until_stable(out: &mut String, report: &Report) {
    for warning in until_table::warnings(report) {
        let _ = writeln!(out, "> **Warning:** {}\n", inline(&warning));
    }
    out.push_str(until_table::NOTE);
    out.push_str("\n\n");
    markdown_table(out, &until_table::table(report));
}

pub fn percentile_intervals(out: &mut String, report: &Report) {
    let intervals = interval_table::intervals(report);
    out.push_str(interval_table::NOTE);
    out.push_str("\n\n");
    markdown_table(out, &intervals.table);
    if let Some(note) = intervals.gaps_note() {
        let _ = writeln!(out, "\n{}", inline(&note));
    }
}

/// Each group's points with their frontier flags.
pub fn pareto_frontier(out: &mut String, report: &Report) {
    out.push_str(pareto::NOTE);
    out.push_str("\n\n");
    markdown_table(out, &pareto::table(report));
}

/// Each search's result, then its probes.
pub fn capacity_searches(out: &mut String, report: &Report) {
    for note in search_table::notes(report) {
        let _ = writeln!(out, "**{}**\n", inline(&note));
    }
    markdown_table(out, &search_table::searches(report));
    out.push('\n');
    markdown_table(out, &search_table::probes(report));
}

/// Drift verdicts of the rechecks: a headline and the table.
pub fn rechecks(out: &mut String, report: &Report) {
    let headlines = table::drift_headlines(report);
    let drifted = report
        .rechecks
        .iter()
        .filter(|p| p.verdict == DriftVerdict::Drifted)
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

/// Arms of repeat groups: pooled figures, spread and the verdict per pair.
pub fn repeats(out: &mut String, report: &Report) {
    out.push_str(repeat_table::NOTE);
    out.push_str("\n\n");
    let headlines = repeat_table::headlines(report);
    for h in &headlines {
        let _ = writeln!(out, "> **{}**", inline(h));
    }
    if !headlines.is_empty() {
        out.push('\n');
    }
    markdown_table(out, &repeat_table::arms(report));
    out.push('\n');
    markdown_table(out, &repeat_table::pairs(report));
}

pub fn prompt_tokens(out: &mut String, report: &Report) {
    let warned = table::prompt_warnings(report);
    if !warned.is_empty() {
        let _ = writeln!(
            out,
            "> **⚠ Prompt size outside tolerance in:** {}\n",
            inline(&warned.join(", "))
        );
    }
    markdown_table(out, &table::prompt_tokens(report));
    if table::prompt_tokens_of_sessions(report) {
        let _ = writeln!(out, "\n{}", inline(table::SESSION_PROMPT_NOTE));
    }
}

pub fn load_held(out: &mut String, report: &Report) {
    markdown_table(out, &load_table::table(report));
    let _ = writeln!(out, "\n{}", inline(&load_table::note()));
}

pub fn client_trust(out: &mut String, report: &Report) {
    let bound = trust_table::client_bound(report);
    if !bound.is_empty() {
        let _ = writeln!(
            out,
            "> **⚠ Client-bound phases:** {}\n",
            inline(&bound.join(", "))
        );
    }
    markdown_table(out, &trust_table::table(report));
    let _ = writeln!(out, "\n{}", inline(&trust_table::note()));
}

pub fn connections(out: &mut String, report: &Report) {
    for w in connections::warnings(report) {
        let _ = writeln!(out, "> **⚠ {}**\n", inline(&w));
    }
    let table = connections::table(report);
    if !table.is_empty() {
        markdown_table(out, &table);
    }
    let split = connections::split_table(report);
    if !split.is_empty() {
        out.push_str("\n### Latency split\n\n");
        markdown_table(out, &split);
        let _ = writeln!(out, "\n{}", connections::SPLIT_NOTE);
    }
}

pub fn sessions(out: &mut String, report: &Report) {
    markdown_table(out, &session_table::table(report));
    let _ = writeln!(out, "\n{}", session_table::NOTE);
    if session_table::has_tool_calls(report) {
        let _ = writeln!(out, "\n{}", session_table::TOOLS_NOTE);
    }
}

pub fn backends(out: &mut String, report: &Report) {
    for w in backends::warnings(report) {
        let _ = writeln!(out, "> **⚠ {}**\n", inline(&w));
    }
    for n in backends::notes(report) {
        let _ = writeln!(out, "> {}\n", inline(&n));
    }
    markdown_table(out, &backends::table(report));
}

/// The server during each sampled phase: failed scrapes, the table and what it means.
pub fn server(out: &mut String, report: &Report) {
    for w in server_table::warnings(report) {
        let _ = writeln!(out, "> **⚠ {}**\n", inline(&w));
    }
    markdown_table(out, &server_table::table(report));
    let _ = writeln!(out, "\n{}", inline(server_table::NOTE));
}

/// Failed requests by kind, then by cause.
pub fn errors(out: &mut String, report: &Report) {
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
