//! Each section's body in HTML, in the classes of the page's stylesheet; [`super::sections`]
//! declares which sections there are and writes their headings.

use std::fmt::Write;

use super::svg::esc;
use super::table_text::html_table;
use super::{backends, chart_sections, connections, hook_table, interval_table};
use super::{load_table, pareto};
use super::{recovery_html, recovery_table, repeat_table, sampling, search_table};
use super::{server_table, session_table, table, timeline, trust_table, until_table};
use crate::report::model::{DriftVerdict, Report};

/// The phases table and, when any phase has them, its hooks.
pub fn phases(out: &mut String, report: &Report) {
    out.push_str("<p class=\"note\">Latencies in milliseconds; phases in plan order.</p>\n");
    html_table(out, &table::phases(report));
    for note in sampling::notes(report) {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&note));
    }
    let hooks = hook_table::table(report);
    if !hooks.is_empty() {
        out.push_str("<h3>Phase hooks</h3>\n");
        html_table(out, &hooks);
        hook_output_tails(out, report);
    }
}

/// Each `exec` action's output tail, folded away under the hooks table.
fn hook_output_tails(out: &mut String, report: &Report) {
    for phase in &report.phases {
        for hook in phase.hooks.iter().filter(|h| !h.output_tail.is_empty()) {
            let _ = writeln!(
                out,
                "<details><summary>{} · {} · {}: last {} lines of output</summary><pre>{}</pre></details>",
                esc(&phase.header.phase),
                hook.when,
                esc(&hook.action),
                hook.output_tail.len(),
                esc(&hook.output_tail.join("\n"))
            );
        }
    }
}

/// Every mark and, when any phase measured one, its recovery with a timeline per phase.
pub fn marks_and_recovery(out: &mut String, report: &Report) {
    html_table(out, &recovery_table::marks(report));
    let recovery = recovery_table::recovery(report);
    if recovery.is_empty() {
        return;
    }
    let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(recovery_table::NOTE));
    html_table(out, &recovery);
    for phase in report.phases.iter().filter(|p| p.recovery.is_some()) {
        out.push_str(&recovery_html::timeline(phase));
        out.push('\n');
    }
}

/// What ended each `until` phase, and its estimates then.
pub fn run_until_stable(out: &mut String, report: &Report) {
    for warning in until_table::warnings(report) {
        let _ = writeln!(
            out,
            "<div class=\"banner warn\"><b>{}</b></div>",
            esc(&warning)
        );
    }
    let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(until_table::NOTE));
    html_table(out, &until_table::table(report));
}

pub fn percentile_intervals(out: &mut String, report: &Report) {
    let intervals = interval_table::intervals(report);
    let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(interval_table::NOTE));
    html_table(out, &intervals.table);
    if let Some(note) = intervals.gaps_note() {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&note));
    }
}

/// Each search's result, then its probes.
pub fn capacity_searches(out: &mut String, report: &Report) {
    for note in search_table::notes(report) {
        let _ = writeln!(out, "<p class=\"note\"><strong>{}</strong></p>", esc(&note));
    }
    html_table(out, &search_table::searches(report));
    html_table(out, &search_table::probes(report));
}

/// Drift verdicts of the rechecks: a headline, the chart and the table.
pub fn rechecks(out: &mut String, report: &Report) {
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
    chart_sections::recheck_chart(out, report);
    html_table(out, &table::rechecks(report));
}

/// Arms of repeat groups: pooled figures, spread and the verdict per pair.
pub fn repeats(out: &mut String, report: &Report) {
    let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(repeat_table::NOTE));
    for h in repeat_table::headlines(report) {
        let _ = writeln!(out, "<div class=\"banner warn\"><b>{}</b></div>", esc(&h));
    }
    html_table(out, &repeat_table::arms(report));
    html_table(out, &repeat_table::pairs(report));
}

pub fn prompt_tokens(out: &mut String, report: &Report) {
    let warned = table::prompt_warnings(report);
    if !warned.is_empty() {
        let _ = writeln!(
            out,
            "<div class=\"banner warn\"><b>⚠ Prompt size outside tolerance in:</b> {}</div>",
            esc(&warned.join(", "))
        );
    }
    html_table(out, &table::prompt_tokens(report));
    if table::prompt_tokens_of_sessions(report) {
        let _ = writeln!(
            out,
            "<p class=\"note\">{}</p>",
            esc(table::SESSION_PROMPT_NOTE)
        );
    }
}

pub fn load_held(out: &mut String, report: &Report) {
    html_table(out, &load_table::table(report));
    let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&load_table::note()));
}

pub fn client_trust(out: &mut String, report: &Report) {
    let bound = trust_table::client_bound(report);
    if !bound.is_empty() {
        let _ = writeln!(
            out,
            "<div class=\"banner warn\"><b>⚠ Client-bound phases:</b> {}</div>",
            esc(&bound.join(", "))
        );
    }
    html_table(out, &trust_table::table(report));
    let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&trust_table::note()));
}

pub fn connections(out: &mut String, report: &Report) {
    for w in connections::warnings(report) {
        let _ = writeln!(out, "<div class=\"banner warn\"><b>⚠ {}</b></div>", esc(&w));
    }
    let table = connections::table(report);
    if !table.is_empty() {
        html_table(out, &table);
    }
    let split = connections::split_table(report);
    if !split.is_empty() {
        out.push_str("<h3>Latency split</h3>\n");
        html_table(out, &split);
        let _ = writeln!(
            out,
            "<p class=\"note\">{}</p>",
            esc(connections::SPLIT_NOTE)
        );
    }
}

pub fn sessions(out: &mut String, report: &Report) {
    html_table(out, &session_table::table(report));
    let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(session_table::NOTE));
    if session_table::has_tool_calls(report) {
        let _ = writeln!(
            out,
            "<p class=\"note\">{}</p>",
            esc(session_table::TOOLS_NOTE)
        );
    }
}

/// Warnings and notes, the share chart and the table.
pub fn backends(out: &mut String, report: &Report) {
    for w in backends::warnings(report) {
        let _ = writeln!(out, "<div class=\"banner warn\"><b>⚠ {}</b></div>", esc(&w));
    }
    for n in backends::notes(report) {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&n));
    }
    if let Some(chart) = backends::chart(report) {
        out.push_str(&chart);
        out.push('\n');
    }
    html_table(out, &backends::table(report));
}

/// The server during each sampled phase: failed scrapes, the table, what it means, and each
/// phase's charts over time.
pub fn server(out: &mut String, report: &Report) {
    for w in server_table::warnings(report) {
        let _ = writeln!(out, "<div class=\"banner warn\"><b>⚠ {}</b></div>", esc(&w));
    }
    html_table(out, &server_table::table(report));
    let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(server_table::NOTE));
    for chart in timeline::charts(report) {
        out.push_str(&chart);
        out.push('\n');
    }
}

/// Failed requests by kind, then by cause.
pub fn errors(out: &mut String, report: &Report) {
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

/// Each group's points with their frontier flags, then its two frontier charts.
pub fn pareto_frontier(out: &mut String, report: &Report) {
    let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(pareto::NOTE));
    html_table(out, &pareto::table(report));
    pareto::charts(out, report);
}
