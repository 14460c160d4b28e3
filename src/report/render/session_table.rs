//! Table content for session workloads (figures by turn), shared by the markdown and HTML
//! writers; empty when no phase ran sessions.

use super::numfmt::{ms_from_s, sig3};
use super::table::{Align, Cell, Table};
use crate::report::model::Report;

/// Under the table: what the columns are.
pub const NOTE: &str = "One row per phase and turn index. Each turn's prompt holds the \
    session's history with the server's own earlier replies, so prompt tokens grow by turn; \
    cached tokens are the server's count of reused prefix. A failed turn ends its session.";

/// Under the table when replies called tools: what the tool columns are.
pub const TOOLS_NOTE: &str = "Tool calls: successful replies that called a tool; tool TTFT is \
    the time to the first tool-call delta (name or argument fragment) among them, tool deltas \
    their mean count of streamed tool-call deltas. A turn after a tool call answers it with a \
    tool result instead of a user message.";

/// Whether any phase's sessions had replies that called a tool.
pub fn has_tool_calls(report: &Report) -> bool {
    report
        .phases
        .iter()
        .filter_map(|p| p.sessions.as_ref())
        .any(|s| s.turns.iter().any(|t| t.tool_calls > 0))
}

pub fn table(report: &Report) -> Table {
    let tools = has_tool_calls(report);
    let mut columns = vec![
        ("Phase", Align::Left),
        ("Turn", Align::Right),
        ("Requests", Align::Right),
        ("Errors", Align::Right),
        ("TTFT p50 (ms)", Align::Right),
        ("TTFT p99 (ms)", Align::Right),
        ("Prompt tokens (mean)", Align::Right),
        ("Cached tokens (mean)", Align::Right),
        ("Sessions complete", Align::Right),
        ("Session p50", Align::Right),
    ];
    if tools {
        columns.extend([
            ("Tool calls", Align::Right),
            ("Tool TTFT p50 (ms)", Align::Right),
            ("Tool deltas (mean)", Align::Right),
        ]);
    }
    let mut t = Table::new(&columns);
    for phase in &report.phases {
        let Some(s) = &phase.sessions else {
            continue;
        };
        for (i, turn) in s.turns.iter().enumerate() {
            let ttft = |p99: bool| {
                turn.ttft
                    .as_ref()
                    .map(|d| ms_from_s(if p99 { d.p99 } else { d.p50 }))
                    .unwrap_or_default()
            };
            // Whole-session figures once, on the phase's first row.
            let (complete, duration) = if i == 0 {
                (
                    format!("{} of {}", s.complete, s.sessions),
                    s.duration
                        .as_ref()
                        .map(|d| format!("{} s", sig3(d.p50)))
                        .unwrap_or_default(),
                )
            } else {
                (String::new(), String::new())
            };
            let mut row = vec![
                Cell::plain(phase.phase.clone()),
                Cell::plain(turn.turn.to_string()),
                Cell::plain(turn.requests.to_string()),
                Cell::plain(turn.errors.to_string()),
                Cell::plain(ttft(false)),
                Cell::plain(ttft(true)),
                Cell::plain(turn.prompt_tokens_mean.map(sig3).unwrap_or_default()),
                Cell::plain(turn.cached_tokens_mean.map(sig3).unwrap_or_default()),
                Cell::plain(complete),
                Cell::plain(duration),
            ];
            if tools {
                row.extend([
                    Cell::plain(turn.tool_calls.to_string()),
                    Cell::plain(
                        turn.ttft_tool
                            .as_ref()
                            .map(|d| ms_from_s(d.p50))
                            .unwrap_or_default(),
                    ),
                    Cell::plain(turn.tool_call_chunks_mean.map(sig3).unwrap_or_default()),
                ]);
            }
            t.rows.push(row);
        }
    }
    t
}
