//! Table content for session workloads (figures by turn: the figure table's `by_turn`
//! columns), shared by the markdown and HTML writers; empty when no phase ran sessions.

use super::numfmt::sig3;
use super::table::{Align, Cell, Table, figure_cell, figure_heading};
use crate::figure::{Figure, Shown, ShownWhen, Spec};
use crate::metrics::{SessionSummary, TurnFigures, turn_figures};
use crate::report::model::Report;

/// Under the table: what the columns are.
pub const NOTE: &str = "One row per phase and turn index. Each turn's prompt holds the \
    session's history with the server's own earlier replies, so prompt tokens grow by turn; \
    cached tokens are the server's count of reused prefix. A failed turn ends its session; one \
    the phase's bound (its requests or duration) stopped before its last turn is cut short.";

/// Under the table when replies called tools: what the tool columns are.
pub const TOOLS_NOTE: &str = "Tool calls: successful replies that called a tool; tool TTFT is \
    the time to the first tool-call delta (name or argument fragment) among them, tool deltas \
    their mean count of streamed tool-call deltas. A turn after a tool call answers it with a \
    tool result instead of a user message.";

/// Whether any phase's sessions had replies that called a tool.
pub fn has_tool_calls(report: &Report) -> bool {
    turns(report).any(|t| t.figures.get(Figure::TtftTool).is_some())
}

fn turns(report: &Report) -> impl Iterator<Item = &TurnFigures> {
    let sessions = report.phases.iter().filter_map(|p| p.sessions.as_ref());
    sessions.flat_map(|s| s.turns.iter())
}

/// The figures the figure table gives turns, with their columns, when the report has them.
fn shown(report: &Report) -> Vec<(&'static Spec, Shown)> {
    let measured = |figure: Figure| turns(report).any(|t| t.figures.get(figure).is_some());
    turn_figures()
        .filter_map(|spec| Some((spec, spec.by_turn?)))
        .filter(|(spec, columns)| columns.when != ShownWhen::Measured || measured(spec.figure))
        .collect()
}

/// `7 of 8 (1 cut short by the phase's end)`: a failed turn ends its session, so each failed
/// (or cancelled) turn is one session failed; the rest of the incomplete ones the phase's
/// bound stopped.
fn sessions_complete(s: &SessionSummary) -> String {
    let incomplete = s.sessions.saturating_sub(s.complete);
    let failed = s
        .turns
        .iter()
        .map(|t| t.errors)
        .sum::<u64>()
        .min(incomplete);
    let cut = incomplete - failed;
    let why: Vec<String> = [(failed, "failed"), (cut, "cut short by the phase's end")]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    let mut text = format!("{} of {}", s.complete, s.sessions);
    if !why.is_empty() {
        text.push_str(&format!(" ({})", why.join(", ")));
    }
    text
}

pub fn table(report: &Report) -> Table {
    let figures = shown(report);
    let mut headings: Vec<String> = ["Phase", "Turn", "Requests", "Errors"]
        .map(String::from)
        .into();
    for (spec, columns) in &figures {
        headings.extend(columns.count.map(String::from));
        let stats = columns.stats.iter();
        headings.extend(stats.map(|&stat| figure_heading(spec, columns.label, stat)));
    }
    headings.extend(["Sessions complete", "Session p50"].map(String::from));
    let columns: Vec<(&str, Align)> = headings
        .iter()
        .enumerate()
        .map(|(i, h)| (h.as_str(), if i == 0 { Align::Left } else { Align::Right }))
        .collect();
    let mut t = Table::new(&columns);
    for phase in &report.phases {
        let Some(s) = &phase.sessions else {
            continue;
        };
        for (i, turn) in s.turns.iter().enumerate() {
            let mut row = vec![
                Cell::plain(phase.header.phase.clone()),
                Cell::plain(turn.turn.to_string()),
                Cell::plain(turn.requests.to_string()),
                Cell::plain(turn.errors.to_string()),
            ];
            for (spec, columns) in &figures {
                let d = turn.figures.get(spec.figure);
                if columns.count.is_some() {
                    row.push(Cell::plain(d.map_or(0, |d| d.samples).to_string()));
                }
                row.extend(columns.stats.iter().map(|&stat| figure_cell(d, spec, stat)));
            }
            // Whole-session figures once, on the phase's first row.
            let (complete, duration) = if i == 0 {
                (
                    sessions_complete(s),
                    s.duration
                        .as_ref()
                        .map(|d| format!("{} s", sig3(d.p50)))
                        .unwrap_or_default(),
                )
            } else {
                (String::new(), String::new())
            };
            row.extend([Cell::plain(complete), Cell::plain(duration)]);
            t.rows.push(row);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(complete: u64, errors_by_turn: &[u64]) -> SessionSummary {
        SessionSummary {
            sessions: 3,
            complete,
            duration: None,
            turns: errors_by_turn
                .iter()
                .enumerate()
                .map(|(turn, &errors)| TurnFigures {
                    turn: turn as u64,
                    errors,
                    ..Default::default()
                })
                .collect(),
        }
    }

    #[test]
    fn incomplete_sessions_without_a_failed_turn_were_cut_short_by_the_phase() {
        assert_eq!(sessions_complete(&summary(3, &[0, 0])), "3 of 3");
        assert_eq!(
            sessions_complete(&summary(2, &[0, 0])),
            "2 of 3 (1 cut short by the phase's end)"
        );
        assert_eq!(sessions_complete(&summary(2, &[0, 1])), "2 of 3 (1 failed)");
        assert_eq!(
            sessions_complete(&summary(1, &[1, 0])),
            "1 of 3 (1 failed, 1 cut short by the phase's end)"
        );
    }
}
