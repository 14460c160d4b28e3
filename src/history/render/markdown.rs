//! The trend report as markdown for a PR comment: open alerts and provenance changes, then
//! a compact table per phase, kept under a PR comment's size limit.

use std::fmt::Write as _;

use super::{
    RECENT_RUNS, TrendReport, alert_line, change_text, closed_by, moved_lines, point_text,
    provenance_text, runs_text, state_word, value,
};
use crate::history::trend::SeriesTrend;

/// A PR comment's limit, in characters.
pub const MARKDOWN_LIMIT: usize = 65_536;

/// Room kept for the closing note when the tables are cut short.
const CLOSING_ROOM: usize = 400;

/// Markdown text of `report`, under [`MARKDOWN_LIMIT`] characters: unchanged series are
/// left out of the phase tables when all of them do not fit, and the last phases are cut
/// (with a note) when even that is too long.
pub fn render(report: &TrendReport) -> String {
    let full = document(report, true);
    if full.chars().count() <= MARKDOWN_LIMIT {
        return full;
    }
    let compact = document(report, false);
    if compact.chars().count() <= MARKDOWN_LIMIT {
        return compact;
    }
    let mut cut: String = compact
        .lines()
        .scan(0usize, |used, line| {
            *used += line.chars().count() + 1;
            (*used <= MARKDOWN_LIMIT - CLOSING_ROOM).then_some(line)
        })
        .collect::<Vec<_>>()
        .join("\n");
    cut.push_str(
        "\n\n… cut to fit a PR comment: see the HTML trend report \
         (`servebench history trend --format html`) for every phase.\n",
    );
    cut
}

fn document(report: &TrendReport, every_series: bool) -> String {
    let mut out = String::new();
    let title = report
        .plan
        .map_or("every plan".to_string(), |p| format!("`{p}`"));
    let runs = report
        .trends
        .iter()
        .map(|t| t.points.len())
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "## Trend of {title}\n\n{} series, up to {runs} runs each. {}\n",
        report.trends.len(),
        report.method()
    );
    alerts(&mut out, report);
    provenance(&mut out, report);
    for (phase, target, trends) in report.phases() {
        let _ = writeln!(out, "### {phase} → {target}\n");
        let shown: Vec<&&SeriesTrend> = trends
            .iter()
            .filter(|t| {
                every_series || t.changes().next().is_some() || report.alert_of(t).is_some()
            })
            .collect();
        if !shown.is_empty() {
            out.push_str(
                "| figure | latest | level | last change | alert |\n|---|---|---|---|---|\n",
            );
        }
        for t in &shown {
            row(&mut out, report, t);
        }
        let hidden = trends.len() - shown.len();
        if hidden > 0 {
            let _ = writeln!(out, "\n{hidden} figure(s) without a change not shown.");
        }
        out.push('\n');
    }
    out
}

fn alerts(out: &mut String, report: &TrendReport) {
    let live = report.live_alerts();
    if live.is_empty() {
        out.push_str("**No open alerts.**\n\n");
    } else {
        out.push_str(
            "### Alerts\n\n| # | state | change | opened by | note |\n|---|---|---|---|---|\n",
        );
        for a in &live {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                a.id,
                state_word(a),
                alert_line(a),
                a.opened_by,
                a.note.as_deref().unwrap_or("")
            );
        }
        out.push('\n');
        for a in &live {
            let _ = writeln!(
                out,
                "<details><summary>#{}: {} series moved</summary>\n",
                a.id,
                a.moved.len()
            );
            for line in moved_lines(a) {
                let _ = writeln!(out, "- {line}");
            }
            out.push_str("\n</details>\n\n");
        }
    }
    let closed = report.recently_closed();
    if !closed.is_empty() {
        let _ = writeln!(
            out,
            "### Closed in the last {RECENT_RUNS} runs\n\n| # | state | change | open for | closed by | note |\n|---|---|---|---|---|---|"
        );
        for (a, open_for) in closed {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                a.id,
                state_word(a),
                alert_line(a),
                open_for.map_or("–".into(), runs_text),
                closed_by(a),
                a.note.as_deref().unwrap_or("")
            );
        }
        out.push('\n');
    }
}

fn provenance(out: &mut String, report: &TrendReport) {
    if report.provenance.is_empty() {
        return;
    }
    out.push_str("### Provenance changes\n\n| first run | change |\n|---|---|\n");
    for p in report.provenance {
        let _ = writeln!(out, "| {} | {} |", p.run, provenance_text(p));
    }
    out.push('\n');
}

fn row(out: &mut String, report: &TrendReport, t: &SeriesTrend) {
    let figure = &t.key.figure;
    let mut latest = t
        .points
        .iter()
        .rev()
        .find(|p| crate::history::trend::eligible(p))
        .map_or("–".into(), |p| point_text(p, figure));
    // A newer search that gave only a lower bound is shown beside the latest answer.
    if let Some(newest) = t
        .points
        .last()
        .filter(|p| p.search.is_some_and(|a| a.mark().is_some()))
    {
        latest.push_str(&format!("; newest {}", point_text(newest, figure)));
    }
    let level = t
        .segments
        .last()
        .and_then(|s| s.levels.last())
        .map_or("–".into(), |l| value(l.mean, figure));
    let change = t
        .changes()
        .last()
        .map_or("–".into(), |c| change_text(c, figure));
    let alert = report
        .alert_of(t)
        .map_or(String::new(), |a| format!("#{} {}", a.id, state_word(a)));
    let _ = writeln!(
        out,
        "| `{figure}` | {latest} | {level} | {change} | {alert} |"
    );
}
