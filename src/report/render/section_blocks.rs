//! Each text section's body, built once as blocks that both markups print; the chart sections'
//! bodies are in [`super::chart_sections`]. [`super::sections`] declares which sections there
//! are and when each is shown.

use super::document::{Block, Level, Span, Tone};
use super::table::Mark;
use super::{backends, cancel_table, chart_sections, connections, hook_table};
use super::{interval_table, load_table, model_table, pareto, recovery_html, recovery_table};
use super::{repeat_table, sampling, search_table, server_table, session_table, table};
use super::{timeline, trust_table, until_table};
use crate::report::model::{DriftVerdict, Report};

fn note(text: impl Into<String>) -> Block {
    Block::Note(vec![Span::text(text)])
}

/// A warning banner: `⚠` and the warning in bold.
fn alarm(warning: &str) -> Block {
    Block::Callout(Tone::Warn, vec![Span::strong(format!("⚠ {warning}"))])
}

/// A warning naming the phases it is about after its bold lead.
fn alarm_listing(lead: &str, names: &str) -> Block {
    Block::Callout(
        Tone::Warn,
        vec![Span::strong(lead), Span::text(format!(" {names}"))],
    )
}

/// A chart on a line of its own.
fn figure_line(html: String) -> Block {
    Block::Figure(html + "\n")
}

/// The phases table and, when any phase has them, its hooks and their output.
pub fn phases(report: &Report) -> Vec<Block> {
    let mut blocks = vec![
        note("Latencies in milliseconds; phases in plan order."),
        Block::Table(table::phases(report)),
    ];
    blocks.extend(sampling::notes(report).into_iter().map(note));
    let hooks = hook_table::table(report);
    if !hooks.is_empty() {
        blocks.push(Block::Heading(Level::Subsection, "Phase hooks".into()));
        blocks.push(Block::Table(hooks));
        blocks.extend(hook_output_tails(report));
    }
    blocks
}

/// Each `exec` action's output tail, folded away under the hooks table.
fn hook_output_tails(report: &Report) -> Vec<Block> {
    let mut blocks = Vec::new();
    for phase in &report.phases {
        for hook in phase.hooks.iter().filter(|h| !h.output_tail.is_empty()) {
            blocks.push(Block::Folded {
                summary: format!(
                    "{} · {} · {}: last {} lines of output",
                    phase.header.phase,
                    hook.when,
                    hook.action,
                    hook.output_tail.len()
                ),
                text: hook.output_tail.join("\n"),
            });
        }
    }
    blocks
}

/// What the load held against its plan.
pub fn load_held(report: &Report) -> Vec<Block> {
    vec![
        Block::Table(load_table::table(report)),
        note(load_table::note()),
    ]
}

/// Every mark and, when any phase measured one, its recovery with a timeline per phase.
pub fn marks_and_recovery(report: &Report) -> Vec<Block> {
    let mut blocks = vec![Block::Table(recovery_table::marks(report))];
    let recovery = recovery_table::recovery(report);
    if recovery.is_empty() {
        return blocks;
    }
    blocks.push(note(recovery_table::NOTE));
    blocks.push(Block::Table(recovery));
    for phase in report.phases.iter().filter(|p| p.recovery.is_some()) {
        blocks.push(figure_line(recovery_html::timeline(phase)));
    }
    blocks
}

/// How many requests each phase cancelled and whether it lost capacity by it.
pub fn cancellations(report: &Report) -> Vec<Block> {
    vec![
        note(cancel_table::note()),
        Block::Table(cancel_table::table(report)),
    ]
}

/// What ended each `until` phase, and its estimates then.
pub fn run_until_stable(report: &Report) -> Vec<Block> {
    let mut blocks: Vec<Block> = until_table::warnings(report)
        .into_iter()
        .map(|w| Block::Warning(vec![Span::text(w)]))
        .collect();
    blocks.push(note(until_table::NOTE));
    blocks.push(Block::Table(until_table::table(report)));
    blocks
}

/// Each percentile with its interval, and what a missing interval means.
pub fn percentile_intervals(report: &Report) -> Vec<Block> {
    let intervals = interval_table::intervals(report);
    let mut blocks = vec![note(interval_table::NOTE)];
    let gaps = intervals.gaps_note();
    blocks.push(Block::Table(intervals.table));
    blocks.extend(gaps.map(note));
    blocks
}

/// Each group's points with their frontier flags, then its two frontier charts.
pub fn pareto_frontier(report: &Report) -> Vec<Block> {
    let mut blocks = vec![note(pareto::NOTE), Block::Table(pareto::table(report))];
    blocks.extend(pareto::charts(report).into_iter().map(Block::Figure));
    blocks
}

/// Each search's result, then its probes.
pub fn capacity_searches(report: &Report) -> Vec<Block> {
    let mut blocks: Vec<Block> = search_table::notes(report)
        .into_iter()
        .map(|n| Block::Note(vec![Span::Important(n)]))
        .collect();
    blocks.push(Block::Table(search_table::searches(report)));
    blocks.push(Block::Table(search_table::probes(report)));
    blocks
}

/// Drift verdicts of the rechecks: a headline, the chart and the table.
pub fn rechecks(report: &Report) -> Vec<Block> {
    let headlines = table::drift_headlines(report);
    let headline = if headlines.is_empty() {
        let mark = if table::inconclusive_rechecks(report) > 0 {
            Mark::Warn
        } else {
            Mark::Good
        };
        Block::Verdict(mark, vec![Span::text(table::no_drift_sentence(report))])
    } else {
        let drifted = report
            .rechecks
            .iter()
            .filter(|p| p.verdict == DriftVerdict::Drifted)
            .count();
        Block::QuotedList {
            tone: Tone::Bad,
            title: vec![Span::strong(format!(
                "⚠ {drifted} of {} rechecks drifted:",
                report.rechecks.len()
            ))],
            items: headlines
                .into_iter()
                .map(|h| vec![Span::strong(h)])
                .collect(),
        }
    };
    let mut blocks = vec![headline];
    blocks.extend(chart_sections::recheck_chart(report).map(Block::Figure));
    blocks.push(Block::Table(table::rechecks(report)));
    blocks
}

/// Arms of repeat groups: pooled figures, spread and the verdict per pair.
pub fn repeats(report: &Report) -> Vec<Block> {
    let mut blocks = vec![note(repeat_table::NOTE)];
    let headlines = repeat_table::headlines(report);
    if !headlines.is_empty() {
        let items = headlines.into_iter().map(|h| vec![Span::strong(h)]);
        blocks.push(Block::Callouts(Tone::Warn, items.collect()));
    }
    blocks.push(Block::Table(repeat_table::arms(report)));
    blocks.push(Block::Table(repeat_table::pairs(report)));
    blocks
}

/// Planned against actual prompt sizes, and the phases outside tolerance.
pub fn prompt_tokens(report: &Report) -> Vec<Block> {
    let mut blocks = Vec::new();
    let warned = table::prompt_warnings(report);
    if !warned.is_empty() {
        blocks.push(alarm_listing(
            "⚠ Prompt size outside tolerance in:",
            &warned.join(", "),
        ));
    }
    blocks.push(Block::Table(table::prompt_tokens(report)));
    if table::prompt_tokens_of_sessions(report) {
        blocks.push(note(table::SESSION_PROMPT_NOTE));
    }
    blocks
}

/// Whether the client kept up, the phases it did not named first.
pub fn client_trust(report: &Report) -> Vec<Block> {
    let mut blocks = Vec::new();
    let bound = trust_table::client_bound(report);
    if !bound.is_empty() {
        blocks.push(alarm_listing("⚠ Client-bound phases:", &bound.join(", ")));
    }
    blocks.push(Block::Table(trust_table::table(report)));
    blocks.push(note(trust_table::note()));
    blocks
}

/// Connection warnings, the connections table and where request time went.
pub fn connections(report: &Report) -> Vec<Block> {
    let mut blocks: Vec<Block> = connections::warnings(report)
        .iter()
        .map(|w| alarm(w))
        .collect();
    let table = connections::table(report);
    if !table.is_empty() {
        blocks.push(Block::Table(table));
    }
    let split = connections::split_table(report);
    if !split.is_empty() {
        blocks.push(Block::Heading(Level::Subsection, "Latency split".into()));
        blocks.push(Block::Table(split));
        blocks.push(note(connections::SPLIT_NOTE));
    }
    blocks
}

/// Multi-turn sessions' figures by turn.
pub fn sessions(report: &Report) -> Vec<Block> {
    let mut blocks = vec![
        Block::Table(session_table::table(report)),
        note(session_table::NOTE),
    ];
    if session_table::has_tool_calls(report) {
        blocks.push(note(session_table::TOOLS_NOTE));
    }
    blocks
}

/// The figures of each model a phase mixed.
pub fn models(report: &Report) -> Vec<Block> {
    vec![
        Block::Table(model_table::table(report)),
        Block::Paragraph(vec![Span::Markdown(model_table::NOTE.into())]),
    ]
}

/// The figures, goodput and SLO verdicts of each archetype a phase mixed, and the phase's.
pub fn archetypes(report: &Report) -> Vec<Block> {
    vec![
        Block::Table(model_table::archetype_table(report)),
        Block::Paragraph(vec![Span::Markdown(model_table::ARCHETYPE_NOTE.into())]),
    ]
}

/// Warnings and notes, the share chart and the table.
pub fn backends(report: &Report) -> Vec<Block> {
    let mut blocks: Vec<Block> = backends::warnings(report)
        .iter()
        .map(|w| alarm(w))
        .collect();
    let notes = backends::notes(report).into_iter();
    blocks.extend(notes.map(|n| Block::Callout(Tone::Note, vec![Span::text(n)])));
    blocks.extend(backends::chart(report).map(figure_line));
    blocks.push(Block::Table(backends::table(report)));
    blocks
}

/// The server during each sampled phase: failed scrapes, the table, what it means, and each
/// phase's charts over time.
pub fn server(report: &Report) -> Vec<Block> {
    let mut blocks: Vec<Block> = server_table::warnings(report)
        .iter()
        .map(|w| alarm(w))
        .collect();
    blocks.push(Block::Table(server_table::table(report)));
    blocks.push(note(server_table::NOTE));
    blocks.extend(timeline::charts(report).into_iter().map(figure_line));
    blocks
}

/// Failed requests by kind, then by cause.
pub fn errors(report: &Report) -> Vec<Block> {
    let errors = table::errors(report);
    let mut blocks = vec![if errors.is_empty() {
        Block::Paragraph(vec![Span::text("No failed requests.")])
    } else {
        Block::Table(errors)
    }];
    let causes = table::error_causes(report);
    if !causes.is_empty() {
        blocks.push(Block::Heading(Level::Subsection, "Errors by cause".into()));
        blocks.push(Block::Table(causes));
    }
    blocks
}
