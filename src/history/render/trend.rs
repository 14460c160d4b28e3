//! The trend report built once as a [`Document`]: the summary, the open and recently closed
//! alerts, provenance changes, then per phase a table of its figures and (for the HTML page)
//! its charts, the watched figures' first and the rest folded.

use super::chart::{Detail, chart, sparkline};
use super::{
    RECENT_RUNS, TrendReport, alert_line, change_text, closed_by, level_change, point_text,
    provenance_text, runs_text, state_word, value,
};
use crate::history::series::{Alert, AlertState};
use crate::history::trend::{SeriesTrend, eligible};
use crate::report::render::document::{Block, Document, Level, Span, Tone};
use crate::report::render::table::{Align, Cell, Mark, Table};

/// What the charts' marks mean.
const LEGEND: &str = "Blue: each run's value (a whisker: its within-run 95% interval, or a \
    capacity's interval from its probes); dark bars: level means; a vertical line with a \
    dot: a change point (red regression, green improvement, grey unranked or explained by \
    a condition); a red triangle: the run that opened an alert; grey ×: an excluded or \
    partial run; orange square: a client-bound run (both left out of detection); hollow \
    grey circle: a capacity that is only a lower bound or indeterminate (left out); purple \
    dashed rule with a number: provenance changed (listed under the chart); black dotted \
    rule: a new segment (work or deployment changed). The line breaks at either rule. \
    Watched figures draw the newest 60 runs point by point; older runs as a line through \
    one run in every k, so at most 60 more points. Unwatched figures are folded: those that \
    changed as the line alone, the steady ones as a strip with their range.";

/// How much of the report a document holds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Extent {
    /// Charts (the HTML page); markdown has none.
    pub charts: bool,
    /// Every series in the phase tables, or only those with a change or a live alert.
    pub every_series: bool,
    /// How many phases, from the first.
    pub phases: usize,
}

/// The document of `report` to `extent`; the second value is the number of phases the
/// report has.
pub(super) fn document(report: &TrendReport, extent: Extent) -> (Document, usize) {
    let title = match report.plan {
        Some(p) => format!("Trend of {p}"),
        None => "Trend of every plan".to_string(),
    };
    let runs = report.trends.iter().map(|t| t.points.len()).max();
    let mut blocks = vec![Block::Callout(
        Tone::Note,
        vec![Span::text(format!(
            "{} series, up to {} runs each. {}",
            report.trends.len(),
            runs.unwrap_or(0),
            report.method()
        ))],
    )];
    live_alerts(&mut blocks, report);
    closed_alerts(&mut blocks, report);
    provenance(&mut blocks, report);
    if extent.charts {
        blocks.push(Block::Callout(Tone::Note, vec![Span::text(LEGEND)]));
    }
    let phases = report.phases();
    for (phase, target, trends) in phases.iter().take(extent.phases) {
        blocks.push(Block::Heading(
            Level::Section,
            format!("{phase} → {target}"),
        ));
        phase_table(&mut blocks, report, trends, extent.every_series);
        if extent.charts {
            charts(&mut blocks, report, trends);
        }
    }
    (Document { title, blocks }, phases.len())
}

fn live_alerts(blocks: &mut Vec<Block>, report: &TrendReport) {
    let live = report.live_alerts();
    if live.is_empty() {
        blocks.push(Block::Paragraph(vec![Span::strong("No open alerts.")]));
        return;
    }
    blocks.push(Block::Heading(Level::Section, "Alerts".into()));
    let mut table = Table::new(&[
        ("#", Align::Right),
        ("State", Align::Left),
        ("Change", Align::Left),
        ("Opened by", Align::Left),
        ("Note", Align::Left),
    ]);
    for a in &live {
        let mark = if a.state == AlertState::Open {
            Mark::Bad
        } else {
            Mark::Warn
        };
        table.rows.push(vec![
            Cell::plain(a.id.to_string()),
            Cell::marked(state_word(a), mark),
            Cell::plain(alert_line(a)),
            Cell::plain(a.opened_by.clone()),
            Cell::plain(a.note.clone().unwrap_or_default()),
        ]);
    }
    blocks.push(Block::Table(table));
    for a in &live {
        blocks.push(Block::FoldStart(format!(
            "#{}: {} series moved",
            a.id,
            a.moved.len()
        )));
        blocks.push(Block::List(moved(a)));
        blocks.push(Block::FoldEnd);
    }
}

/// Each series an alert moved: `tpot.p50` c1 4.00 ms → 6.00 ms (+50.0%).
fn moved(alert: &Alert) -> Vec<Vec<Span>> {
    alert
        .moved
        .iter()
        .map(|m| {
            vec![
                Span::code(m.figure.clone()),
                Span::text(format!(
                    " {} {}",
                    m.phase,
                    level_change(m.before, m.after, &m.figure)
                )),
            ]
        })
        .collect()
}

fn closed_alerts(blocks: &mut Vec<Block>, report: &TrendReport) {
    let closed = report.recently_closed();
    if closed.is_empty() {
        return;
    }
    blocks.push(Block::Heading(
        Level::Section,
        format!("Closed in the last {RECENT_RUNS} runs"),
    ));
    let mut table = Table::new(&[
        ("#", Align::Right),
        ("State", Align::Left),
        ("Change", Align::Left),
        ("Open for", Align::Left),
        ("Closed by", Align::Left),
        ("Note", Align::Left),
    ]);
    for (a, open_for) in closed {
        table.rows.push(vec![
            Cell::plain(a.id.to_string()),
            Cell::plain(state_word(a)),
            Cell::plain(alert_line(a)),
            Cell::plain(open_for.map_or("–".into(), runs_text)),
            Cell::plain(closed_by(a)),
            Cell::plain(a.note.clone().unwrap_or_default()),
        ]);
    }
    blocks.push(Block::Table(table));
}

fn provenance(blocks: &mut Vec<Block>, report: &TrendReport) {
    if report.provenance.is_empty() {
        return;
    }
    blocks.push(Block::Heading(Level::Section, "Provenance changes".into()));
    let mut table = Table::new(&[("First run", Align::Left), ("Change", Align::Left)]);
    for p in report.provenance {
        table.rows.push(vec![
            Cell::plain(p.run.clone()),
            Cell::plain(provenance_text(p)),
        ]);
    }
    blocks.push(Block::Table(table));
}

/// A phase's figures, one row each: the latest value, the current level, the last change
/// and the live alert that moved it with its level before and after.
fn phase_table(
    blocks: &mut Vec<Block>,
    report: &TrendReport,
    trends: &[&SeriesTrend],
    every_series: bool,
) {
    let shown: Vec<&SeriesTrend> = trends
        .iter()
        .copied()
        .filter(|t| every_series || t.changes().next().is_some() || report.alert_of(t).is_some())
        .collect();
    if !shown.is_empty() {
        let mut table = Table::new(&[
            ("Figure", Align::Left),
            ("Latest", Align::Right),
            ("Level", Align::Right),
            ("Last change", Align::Left),
            ("Alert", Align::Left),
        ]);
        table.rows = shown.iter().map(|t| phase_row(report, t)).collect();
        blocks.push(Block::Table(table));
    }
    let hidden = trends.len() - shown.len();
    if hidden > 0 {
        blocks.push(Block::Paragraph(vec![Span::text(format!(
            "{hidden} figure(s) without a change not shown."
        ))]));
    }
}

fn phase_row(report: &TrendReport, t: &SeriesTrend) -> Vec<Cell> {
    let figure = &t.key.figure;
    let mut latest = t
        .points
        .iter()
        .rev()
        .find(|p| eligible(p))
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
    vec![
        Cell::plain(figure.clone()),
        Cell::plain(latest),
        Cell::plain(level),
        Cell::plain(change),
        alert_cell(report.alert_of(t), t),
    ]
}

/// `#3 open: 4.00 ms → 6.00 ms (+50.0%)`: the alert and the series' level before and after.
fn alert_cell(alert: Option<&Alert>, t: &SeriesTrend) -> Cell {
    let Some(a) = alert else {
        return Cell::plain("");
    };
    let mut text = format!("#{} {}", a.id, state_word(a));
    if let Some(m) = a.moved_in(&t.key) {
        text.push_str(&format!(": {}", level_change(m.before, m.after, &m.figure)));
    }
    let mark = if a.state == AlertState::Open {
        Mark::Bad
    } else {
        Mark::Warn
    };
    Cell::marked(text, mark)
}

/// The phase's charts: its watched figures' in the open, the others folded, those that
/// changed first and those that never moved last.
fn charts(blocks: &mut Vec<Block>, report: &TrendReport, trends: &[&SeriesTrend]) {
    let watched = |t: &SeriesTrend| {
        let at = report.trends.iter().position(|r| std::ptr::eq(r, t));
        at.and_then(|i| report.watched.get(i).copied())
            .unwrap_or(false)
    };
    let svg = |t: &SeriesTrend, detail: Detail| {
        let alerts: Vec<&Alert> = report
            .alerts
            .iter()
            .filter(|a| a.moved_in(&t.key).is_some())
            .collect();
        Block::Figure(chart(t, &alerts, report.provenance, detail))
    };
    let (open, mut folded): (Vec<&SeriesTrend>, Vec<&SeriesTrend>) =
        trends.iter().copied().partition(|t| watched(t));
    blocks.extend(open.iter().map(|t| svg(t, Detail::Runs)));
    if folded.is_empty() {
        return;
    }
    folded.sort_by_key(|t| (t.changes().next().is_none(), is_flat(t)));
    blocks.push(Block::FoldStart(format!(
        "{} more figures ({}): those that changed as charts, the others as strips",
        folded.len(),
        if open.is_empty() {
            "the plan watches none of this phase's figures"
        } else {
            "not watched"
        }
    )));
    // Those that changed as charts, the steady rest as strips.
    blocks.extend(folded.iter().map(|t| {
        if t.changes().next().is_some() {
            svg(t, Detail::Line)
        } else {
            Block::Figure(sparkline(t, report.provenance))
        }
    }));
    blocks.push(Block::FoldEnd);
}

/// Every run has the same value (an all-zero cached-token ratio, say).
fn is_flat(t: &SeriesTrend) -> bool {
    t.points.windows(2).all(|w| w[0].value == w[1].value)
}

#[cfg(test)]
mod tests {
    use super::LEGEND;
    use crate::history::render::thin::{OLDER, RECENT};

    #[test]
    fn the_legend_states_how_many_runs_are_drawn() {
        assert!(LEGEND.contains(&format!("the newest {RECENT} runs point by point")));
        assert!(LEGEND.contains(&format!("at most {OLDER} more points")));
    }
}
