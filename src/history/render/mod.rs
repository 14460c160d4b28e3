//! The trend report: one summary (open alerts, provenance changes, a row per series) built
//! once from the trends, then printed as markdown for a PR comment or as one offline HTML
//! file with a chart per (phase, figure).

mod chart;
mod html;
mod json;
mod markdown;
mod series;
mod show;
mod thin;
mod trend;

pub use html::render as html;
pub use json::render as json;
pub use markdown::{MARKDOWN_LIMIT, render as markdown};
pub use series::{csv as series_csv, json as series_json, markdown as series_markdown};
pub use show::{json as show_json, markdown as show_markdown};

use crate::figure::Unit;
use crate::history::searches::{SearchAnswer, is_capacity};
use crate::history::series::{Alert, AlertState, Point};
use crate::history::trend::{
    ChangePoint, Evidence, ProvenanceChange, Ranks, SeriesTrend, Settings, Verdict,
};

/// How far back the trend report lists closed alerts, in runs of the plan.
pub const RECENT_RUNS: usize = 10;

/// Figures an alert's line names before it says how many more it moved.
const FIGURES_NAMED: usize = 6;
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
    /// Beside each of `trends`, whether its plan watches it: watched figures are charted
    /// first, the rest folded.
    pub watched: &'a [bool],
}

impl TrendReport<'_> {
    /// Alerts not resolved, open ones first.
    fn live_alerts(&self) -> Vec<&Alert> {
        let mut live: Vec<&Alert> = self.alerts.iter().filter(|a| a.state.live()).collect();
        live.sort_by_key(|a| (a.state != AlertState::Open, a.id));
        live
    }

    /// Alerts resolved or superseded within the plan's last [`RECENT_RUNS`] runs, each with
    /// how many runs it was open, newest first.
    fn recently_closed(&self) -> Vec<(&Alert, Option<usize>)> {
        let ranks = Ranks::of(self.trends);
        let newest = ranks.newest_rank();
        let mut closed: Vec<(&Alert, Option<usize>)> = self
            .alerts
            .iter()
            .filter(|a| !a.state.live())
            .filter(|a| {
                a.closed_at
                    .as_deref()
                    .and_then(|r| ranks.get(r))
                    .is_some_and(|r| newest - r < RECENT_RUNS)
            })
            .map(|a| {
                // From the run that opened it to the newest run when it closed: the runs the
                // gate failed on it.
                let until = a.closed_at.as_deref();
                (a, until.and_then(|u| ranks.between(&a.opened_by, u)))
            })
            .collect();
        closed.sort_by_key(|(a, _)| std::cmp::Reverse(a.id));
        closed
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

    /// The live alert that moved a series, if any.
    fn alert_of(&self, trend: &SeriesTrend) -> Option<&Alert> {
        self.alerts
            .iter()
            .filter(|a| a.state.live() && a.moved_in(&trend.key).is_some())
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
pub fn unit_of(figure: &str) -> Unit {
    figure
        .parse::<FigurePath>()
        .map_or(Unit::Count, FigurePath::unit)
}

/// A figure's value in its unit, as report.md writes it: times under 100 s in milliseconds
/// (`14.9 ms`, `196 ms`), so one figure never switches unit between runs.
pub fn value(v: f64, figure: &str) -> String {
    numfmt::figure_value(v, unit_of(figure))
}

/// How a column (or a chart's axis) of one figure shows its values: stored values times
/// `factor`, in `symbol`. Times are milliseconds, as reports print them, unless the column
/// holds 100 s or more; ratios are percentages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shown {
    pub factor: f64,
    pub symbol: &'static str,
    unit: Unit,
}

impl Shown {
    /// The display of `unit` for a column whose largest magnitude is `largest`.
    pub fn of(unit: Unit, largest: f64) -> Shown {
        let (factor, symbol) = match unit {
            Unit::Seconds if largest < 100.0 => (1000.0, "ms"),
            Unit::Ratio => (100.0, "%"),
            other => (1.0, other.symbol()),
        };
        Shown {
            factor,
            symbol,
            unit,
        }
    }

    /// The display of `figure` for the stored `values`.
    pub fn for_values(figure: &str, values: impl IntoIterator<Item = f64>) -> Shown {
        let largest = values
            .into_iter()
            .filter(|v| v.is_finite())
            .fold(0.0, |m: f64, v| m.max(v.abs()));
        Shown::of(unit_of(figure), largest)
    }

    /// A column heading or axis label: `ttft.p50 (ms)`, `requests` for a count.
    pub fn label(&self, name: &str) -> String {
        if self.symbol.is_empty() {
            name.to_string()
        } else {
            format!("{name} ({})", self.symbol)
        }
    }

    /// A stored value as a number in this display, without the unit.
    pub fn number(&self, v: f64) -> String {
        let shown = v * self.factor;
        match self.unit {
            Unit::Count | Unit::Tokens if shown.fract() == 0.0 && shown.abs() < 1e15 => {
                format!("{shown:.0}")
            }
            _ => numfmt::sig3(shown),
        }
    }
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
        AlertState::Superseded => "superseded",
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

/// An alert in one line, as the gate and the trend report print it: `regression in c1, c8
/// → sim at RUN: tpot.p50 +49.6%, e2e.p99 +31.0%`; each figure with its largest move over
/// the phases, the largest first, at most six named.
pub fn alert_line(alert: &Alert) -> String {
    let mut figures: Vec<(&str, f64)> = Vec::new();
    for m in &alert.moved {
        let change = m.relative();
        match figures.iter_mut().find(|(f, _)| *f == m.figure) {
            Some((_, largest)) if change.abs() > largest.abs() => *largest = change,
            Some(_) => {}
            None => figures.push((&m.figure, change)),
        }
    }
    figures.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    let mut named: Vec<String> = figures
        .iter()
        .take(FIGURES_NAMED)
        .map(|(f, c)| format!("{f} {}", numfmt::pct_change(*c)))
        .collect();
    if figures.len() > FIGURES_NAMED {
        named.push(format!("{} more", figures.len() - FIGURES_NAMED));
    }
    format!(
        "regression in {} → {} at {}: {}",
        alert.phases().join(", "),
        alert.target,
        alert.change_at,
        named.join(", ")
    )
}

/// `1 run`, `3 runs`.
pub fn runs_text(n: usize) -> String {
    if n == 1 {
        "1 run".to_string()
    } else {
        format!("{n} runs")
    }
}

/// What closed an alert: the run that brought the level back, the alert that took it over,
/// or more runs that showed it was not a change.
fn closed_by(a: &Alert) -> String {
    match (&a.state, &a.resolved_by, a.superseded_by) {
        (AlertState::Superseded, _, Some(by)) => format!("superseded by #{by}"),
        (_, Some(run), _) => format!("back at {run}"),
        _ => format!(
            "not a change, seen at {}",
            a.closed_at.as_deref().unwrap_or("–")
        ),
    }
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
