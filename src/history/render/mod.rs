//! The trend report: one summary (open alerts, provenance changes, a row per series) built
//! once from the trends, then printed as markdown for a PR comment or as one offline HTML
//! file with a chart per (phase, figure).

mod chart;
mod html;
mod markdown;

pub use html::render as html;
pub use markdown::{MARKDOWN_LIMIT, render as markdown};

use crate::figure::Unit;
use crate::history::searches::{SearchAnswer, is_capacity};
use crate::history::series::{Alert, AlertState, Point};
use crate::history::trend::{
    ChangePoint, Evidence, ProvenanceChange, SeriesTrend, Settings, Verdict,
};
use crate::report::model::figure_path::FigurePath;
use crate::report::render::numfmt;

/// Everything the trend report shows.
pub struct TrendReport<'a> {
    /// The plan, when the report is of one plan.
    pub plan: Option<&'a str>,
    pub trends: &'a [SeriesTrend],
    pub alerts: &'a [Alert],
    pub provenance: &'a [ProvenanceChange],
    pub settings: &'a Settings,
}

impl TrendReport<'_> {
    /// Alerts not resolved, open ones first.
    fn live_alerts(&self) -> Vec<&Alert> {
        let mut live: Vec<&Alert> = self
            .alerts
            .iter()
            .filter(|a| a.state != AlertState::Resolved)
            .collect();
        live.sort_by_key(|a| (a.state != AlertState::Open, a.id));
        live
    }

    /// Phases in the order their series come, each with its series.
    fn phases(&self) -> Vec<(&str, &str, Vec<&SeriesTrend>)> {
        let mut out: Vec<(&str, &str, Vec<&SeriesTrend>)> = Vec::new();
        for t in self.trends {
            match out
                .iter_mut()
                .find(|(p, tg, _)| *p == t.key.phase && *tg == t.key.target)
            {
                Some((_, _, list)) => list.push(t),
                None => out.push((&t.key.phase, &t.key.target, vec![t])),
            }
        }
        out
    }

    /// The live alert of a series, if any.
    fn alert_of(&self, trend: &SeriesTrend) -> Option<&Alert> {
        self.alerts
            .iter()
            .filter(|a| a.key == trend.key && a.state != AlertState::Resolved)
            .max_by_key(|a| a.id)
    }

    /// How detection was set, in a sentence (two with capacity series).
    fn method(&self) -> String {
        let s = self.settings;
        let mut text = format!(
            "Change points: E-divisive candidates, kept when Student's t against the series' \
             own run-to-run noise gives p ≤ {} and the level moves by at least {:.0}%, with {} \
             runs or more on each side; a change of work or deployment starts a new segment; \
             excluded, partial and client-bound runs are shown but left out.",
            s.max_p,
            s.min_effect * 100.0,
            s.min_points
        );
        if self.trends.iter().any(|t| is_capacity(&t.key.figure)) {
            text.push_str(&format!(
                " A search's capacity changes when a run's interval lies wholly beyond its \
                 level's pooled interval and the capacity moves by at least {:.0}%; lower \
                 bounds and indeterminate searches are shown but left out.",
                s.min_effect * 100.0
            ));
        }
        text
    }
}

/// A figure's unit, `Count` when its name is not a figure path.
fn unit_of(figure: &str) -> Unit {
    figure
        .parse::<FigurePath>()
        .map_or(Unit::Count, FigurePath::unit)
}

/// A figure's value in its unit, as report.md writes it (`14.9 ms`, `240.0`).
pub fn value(v: f64, figure: &str) -> String {
    numfmt::with_unit(v, unit_of(figure))
}

/// `before → after (+15.0%)`.
fn level_change(before: f64, after: f64, figure: &str) -> String {
    format!(
        "{} → {} ({})",
        value(before, figure),
        value(after, figure),
        numfmt::pct_change(crate::history::trend::relative_change(before, after))
    )
}

fn verdict_word(c: &ChangePoint) -> &'static str {
    match c.verdict {
        Verdict::Regression => "regression",
        Verdict::Improvement => "improvement",
        Verdict::Unranked => "change",
        Verdict::ConditionChanged => "condition changed",
    }
}

fn state_word(a: &Alert) -> &'static str {
    match a.state {
        AlertState::Open => "open",
        AlertState::Acknowledged => "acknowledged",
        AlertState::Resolved => "resolved",
    }
}

/// A change with its conditions: `regression 0.8 s → 0.92 s (+15.0%) at run-0020; …`; a
/// capacity's with the intervals that part.
fn change_text(c: &ChangePoint, figure: &str) -> String {
    let mut text = format!(
        "{} {} at {}",
        verdict_word(c),
        level_change(c.before, c.after, figure),
        c.run
    );
    if let Evidence::IntervalsApart { level, run } = c.evidence {
        text.push_str(&format!(
            " (interval {} apart from the level's {})",
            interval_text(run, figure),
            interval_text(level, figure)
        ));
    }
    for condition in &c.conditions {
        text.push_str("; ");
        text.push_str(&condition.to_string());
    }
    text
}

/// What an alert says changed, as the trend report and the gate print it: its change point
/// with its conditions when `trends` hold it (`regression 5.54 ms → 8.29 ms (+49.6%) at
/// RUN`), else its stored levels.
pub fn alert_change(alert: &Alert, trends: &[SeriesTrend]) -> String {
    trends
        .iter()
        .find(|t| t.key == alert.key)
        .and_then(|t| t.changes().find(|c| c.run == alert.change_at))
        .map_or_else(
            || {
                format!(
                    "{} at {}",
                    level_change(alert.before, alert.after, &alert.key.figure),
                    alert.change_at
                )
            },
            |c| change_text(c, &alert.key.figure),
        )
}

/// `[8, 9]`.
fn interval_text([lo, hi]: [f64; 2], figure: &str) -> String {
    format!("[{}, {}]", value(lo, figure), value(hi, figure))
}

/// A point's value as a listing shows it: a capacity with its interval, and marked when its
/// search gave only a lower bound or could not tell (`≥ 4 (lower bound)`).
fn point_text(p: &Point, figure: &str) -> String {
    let shown = match p.interval {
        Some((lo, hi)) if is_capacity(figure) => {
            format!(
                "{} {}",
                value(p.value, figure),
                interval_text([lo, hi], figure)
            )
        }
        _ => value(p.value, figure),
    };
    match p.search.and_then(SearchAnswer::mark) {
        Some(mark) => format!("≥ {shown} ({mark})"),
        None => shown,
    }
}

/// `engine_version: 0.9.1 → 0.9.2`.
fn provenance_text(p: &ProvenanceChange) -> String {
    format!(
        "{}: {} → {}",
        p.label,
        p.before.as_deref().unwrap_or("–"),
        p.after.as_deref().unwrap_or("–")
    )
}
