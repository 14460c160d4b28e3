//! Alerts' lifecycle as a pure function: a series' trend and the alerts already kept for it
//! in, the alerts to insert or update out.
//!
//! An alert opens for a regression (a significant change, at least the minimum effect, in
//! the figure's worse direction) at the first eligible run that made it detectable; it is
//! resolved by a later change that brings the level back within the minimum effect of
//! where it was, or when more runs show the change was not one. Acknowledged alerts stay
//! acknowledged until resolved. A change that more runs dismissed and later runs show again
//! opens a new alert.

use super::analyse::{ChangePoint, SeriesTrend, Verdict, analyse, eligible};
use super::detect::Settings;
use crate::figure::Better;
use crate::history::series::{Alert, AlertState};

/// How many eligible runs a change may move, as runs arrive, and still be the same change.
const SAME_CHANGE: usize = 2;

/// The alerts of `trend`'s series to insert (id 0) or update, given the ones kept (`prior`,
/// any series).
pub fn update_alerts(trend: &SeriesTrend, prior: &[Alert], settings: &Settings) -> Vec<Alert> {
    let mine: Vec<&Alert> = prior.iter().filter(|a| a.key == trend.key).collect();
    let mut out = Vec::new();
    for change in trend.changes().filter(|c| c.verdict == Verdict::Regression) {
        if mine
            .iter()
            .any(|a| !dismissed(a) && same_change(trend, a, change))
        {
            continue;
        }
        out.push(Alert {
            id: 0,
            key: trend.key.clone(),
            opened_by: opened_by(trend, change, settings),
            change_at: change.run.clone(),
            before: change.before,
            after: change.after,
            state: AlertState::Open,
            resolved_by: None,
            note: None,
        });
    }
    for alert in mine.into_iter().filter(|a| a.state != AlertState::Resolved) {
        let still_there = trend
            .changes()
            .any(|c| c.verdict == Verdict::Regression && same_change(trend, alert, c));
        let resolved_by = if still_there {
            returned_by(trend, alert, settings)
        } else {
            // More runs (or an exclusion) show it was not a change: resolved, by no run.
            Some(None)
        };
        if let Some(by) = resolved_by {
            out.push(Alert {
                state: AlertState::Resolved,
                resolved_by: by,
                ..(*alert).clone()
            });
        }
    }
    out
}

/// Resolved by no run: more runs showed its change was not one.
fn dismissed(alert: &Alert) -> bool {
    alert.state == AlertState::Resolved && alert.resolved_by.is_none()
}

/// Where a run sits among the eligible runs.
fn eligible_rank(trend: &SeriesTrend, run: &str) -> Option<usize> {
    trend
        .points
        .iter()
        .filter(|p| eligible(p))
        .position(|p| p.run == run)
}

fn same_change(trend: &SeriesTrend, alert: &Alert, change: &ChangePoint) -> bool {
    match (
        eligible_rank(trend, &alert.change_at),
        eligible_rank(trend, &change.run),
    ) {
        (Some(a), Some(c)) => a.abs_diff(c) <= SAME_CHANGE,
        _ => alert.change_at == change.run,
    }
}

/// `Some(run)` when a later change in the alert's segment brings the level back within the
/// minimum effect of `before` (or better); `None` while it has not.
fn returned_by(trend: &SeriesTrend, alert: &Alert, settings: &Settings) -> Option<Option<String>> {
    let at = trend.points.iter().position(|p| p.run == alert.change_at)?;
    let segment = trend.segment_of(at)?;
    let tolerance = settings.min_effect * alert.before.abs();
    let back = |level: f64| match trend.better {
        Better::Lower => level <= alert.before + tolerance,
        Better::Higher => level >= alert.before - tolerance,
        Better::Neither => (level - alert.before).abs() <= tolerance,
    };
    segment
        .changes
        .iter()
        .filter(|c| c.at > at)
        .find(|c| back(c.after))
        .map(|c| Some(c.run.clone()))
}

/// The first eligible run at which the series up to it shows `change` as a regression (the
/// newest run when replaying finds none, e.g. a change seen only with later context).
fn opened_by(trend: &SeriesTrend, change: &ChangePoint, settings: &Settings) -> String {
    let newest = trend
        .points
        .iter()
        .rev()
        .find(|p| eligible(p))
        .map_or_else(|| change.run.clone(), |p| p.run.clone());
    // Replayed over the change's neighbourhood (a window before it), not the whole history,
    // so a first look at a long history stays quick.
    let from = trend
        .segment_of(change.at)
        .map_or(0, |s| s.from)
        .max(change.at.saturating_sub(settings.window));
    let ends = (change.at + 1..=trend.points.len())
        .filter(|&end| eligible(&trend.points[end - 1]))
        .take(settings.window);
    for end in ends {
        let prefix = analyse(&trend.key, trend.points[from..end].to_vec(), settings);
        let seen = prefix.changes().any(|c| {
            c.verdict == Verdict::Regression
                && eligible_rank(trend, &c.run)
                    .zip(eligible_rank(trend, &change.run))
                    .is_some_and(|(a, b)| a.abs_diff(b) <= SAME_CHANGE)
        });
        if seen {
            return trend.points[end - 1].run.clone();
        }
    }
    newest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::series::SeriesKey;
    use crate::history::synthetic::{Shape, point, values};

    /// A series whose TTFT rose 30% at run 16.
    fn stepped() -> SeriesTrend {
        let key = SeriesKey {
            plan: "p".into(),
            phase: "steady".into(),
            target: "default".into(),
            figure: "ttft.p99".into(),
        };
        let shape = Shape {
            runs: 30,
            level: 100.0,
            noise: 0.02,
            step: Some((16, 0.3)),
        };
        let points = values(&shape, 7)
            .into_iter()
            .enumerate()
            .map(|(i, v)| point(i + 1, v))
            .collect();
        analyse(&key, points, &Settings::default())
    }

    #[test]
    fn a_dismissed_change_seen_again_opens_a_new_alert_a_returned_one_does_not() {
        let trend = stepped();
        let settings = Settings::default();
        let opened = update_alerts(&trend, &[], &settings);
        assert_eq!(opened.len(), 1, "{opened:?}");
        assert_eq!(opened[0].state, AlertState::Open);
        let resolved = |by: Option<&str>| Alert {
            id: 1,
            state: AlertState::Resolved,
            resolved_by: by.map(str::to_string),
            ..opened[0].clone()
        };
        let again = update_alerts(&trend, &[resolved(None)], &settings);
        assert_eq!(again.len(), 1, "{again:?}");
        assert_eq!((again[0].id, &again[0].state), (0, &AlertState::Open));
        assert_eq!(again[0].change_at, opened[0].change_at);
        assert!(update_alerts(&trend, &[resolved(Some("run-0040"))], &settings).is_empty());
        let open = Alert {
            id: 1,
            ..opened[0].clone()
        };
        assert!(update_alerts(&trend, &[open], &settings).is_empty());
    }
}
