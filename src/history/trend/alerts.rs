//! Alerts' lifecycle as a pure function: a plan's trends and the alerts already kept for
//! it in, the alerts to insert or update out.
//!
//! One alert per change: the regressions of a target's watched series whose change points
//! lie within [`SAME_CHANGE`] eligible runs of each other are one alert, listing every phase
//! and figure they moved. As runs arrive an alert is kept true in place (its change point,
//! levels and series) while its change moves by at most [`SAME_CHANGE`] runs; a change that
//! moved further takes over a live alert it shares a series with (`superseded`), its
//! acknowledgement included. An alert is resolved when later changes bring every series it
//! moved back within the minimum effect of where it was, or when more runs (or an
//! exclusion) show it was not a change; the same change seen again re-opens it, with its
//! acknowledgement.

use std::collections::BTreeMap;
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};

use super::analyse::analyse;
use super::shape::{ChangePoint, SeriesTrend, Verdict, eligible};
use super::split::Settings;
use super::watch::Watch;
use crate::figure::Better;
use crate::history::series::{Alert, AlertState, Moved, PhaseFacts, RunId};

/// How many eligible runs a change may move, as runs arrive, and still be the same change;
/// also how close two series' changes are to be one.
pub const SAME_CHANGE: usize = 2;

/// What to save: alerts to insert (id 0) or update, then live alerts a new one (by its index
/// in `save`) supersedes.
#[derive(Debug, Default, PartialEq)]
pub struct AlertUpdate {
    pub save: Vec<Alert>,
    pub supersede: Vec<(Alert, usize)>,
}

/// Where each run sits among a plan's eligible runs: how many eligible runs started before
/// it (an excluded run shares the rank of the eligible run after it).
pub struct Ranks {
    rank: HashMap<RunId, usize>,
    newest: Option<RunId>,
}

impl Ranks {
    pub fn of(trends: &[SeriesTrend]) -> Ranks {
        // A plan's thousand runs come as a million points, whose phases share their facts:
        // each phase's run is looked up once, by the facts' address, then the few distinct
        // runs are sorted.
        let mut runs: Vec<(&str, &str, bool)> = Vec::new();
        let mut run_at: HashMap<&str, usize> = HashMap::default();
        let mut phase_at: HashMap<*const PhaseFacts, usize> = HashMap::default();
        for p in trends.iter().flat_map(|t| &t.points) {
            let at = *phase_at.entry(Arc::as_ptr(&p.phase.0)).or_insert_with(|| {
                *run_at.entry(&p.run).or_insert_with(|| {
                    runs.push((&p.started_at, &p.run, false));
                    runs.len() - 1
                })
            });
            runs[at].2 |= eligible(p);
        }
        runs.sort_unstable();
        let mut rank = HashMap::with_capacity(runs.len());
        let mut seen = 0;
        let mut newest = None;
        for (_, run, ok) in runs {
            rank.insert(run.to_string(), seen);
            if ok {
                seen += 1;
                newest = Some(run.to_string());
            }
        }
        Ranks { rank, newest }
    }

    pub fn get(&self, run: &str) -> Option<usize> {
        self.rank.get(run).copied()
    }

    /// The rank of the newest run (0 without runs).
    pub fn newest_rank(&self) -> usize {
        self.rank.values().copied().max().unwrap_or(0)
    }

    /// Eligible runs from `a` to `b`.
    pub fn between(&self, a: &str, b: &str) -> Option<usize> {
        Some(self.get(b)?.saturating_sub(self.get(a)?))
    }

    fn near(&self, a: &str, b: &str) -> bool {
        match (self.get(a), self.get(b)) {
            (Some(x), Some(y)) => x.abs_diff(y) <= SAME_CHANGE,
            _ => a == b,
        }
    }
}

/// One watched series' regression.
struct Found<'a> {
    trend: &'a SeriesTrend,
    change: &'a ChangePoint,
    rank: usize,
    /// The run of a later change that brought the level back, if one did.
    returned: Option<RunId>,
}

/// The alerts of `plan` to save, given its `trends` and the alerts kept (`prior`).
pub fn update_alerts(
    plan: &str,
    trends: &[SeriesTrend],
    prior: &[Alert],
    watch: &Watch,
    settings: &Settings,
) -> AlertUpdate {
    let ranks = Ranks::of(trends);
    let mut update = Update {
        prior,
        newest: ranks.newest.clone(),
        claimed: Vec::new(),
        out: AlertUpdate::default(),
    };
    for (target, mut found) in regressions_by_target(trends, watch, settings, &ranks) {
        found.sort_by_key(|f| f.rank);
        for group in groups(found) {
            let fresh = group_alert(plan, target, &group, &ranks, settings);
            match update.kept(target, &fresh, &ranks) {
                Some(old) => update.carry(old, fresh),
                None => update.open(target, fresh),
            }
        }
    }
    update.resolve_unclaimed();
    update.out
}

/// Every regression of a watched series, by target.
fn regressions_by_target<'a>(
    trends: &'a [SeriesTrend],
    watch: &Watch,
    settings: &Settings,
    ranks: &Ranks,
) -> BTreeMap<&'a str, Vec<Found<'a>>> {
    let mut by_target: BTreeMap<&str, Vec<Found>> = BTreeMap::new();
    for trend in trends.iter().filter(|t| watch.watches(&t.key.figure)) {
        for change in trend.changes().filter(|c| c.verdict == Verdict::Regression) {
            by_target.entry(&trend.key.target).or_default().push(Found {
                trend,
                change,
                rank: ranks.get(&change.run).unwrap_or(0),
                returned: returned_by(trend, change, settings),
            });
        }
    }
    by_target
}

/// The alerts being written: the kept ones, which of them a change has claimed, and what to
/// save.
struct Update<'a> {
    prior: &'a [Alert],
    newest: Option<RunId>,
    claimed: Vec<i64>,
    out: AlertUpdate,
}

impl<'a> Update<'a> {
    /// The kept alert that is this change: of the target, not claimed yet, near it, a live
    /// one before a closed one, then the nearest.
    fn kept(&self, target: &str, fresh: &Alert, ranks: &Ranks) -> Option<&'a Alert> {
        self.prior
            .iter()
            .filter(|a| a.target == target && a.state != AlertState::Superseded)
            .filter(|a| !self.claimed.contains(&a.id))
            .filter(|a| ranks.near(&a.change_at, &fresh.change_at))
            .min_by_key(|a| {
                (
                    !a.state.live(),
                    ranks.between(&a.change_at, &fresh.change_at),
                )
            })
    }

    fn carry(&mut self, old: &Alert, fresh: Alert) {
        self.claimed.push(old.id);
        let updated = carried(old, fresh, self.newest.as_deref());
        if updated != *old {
            self.out.save.push(updated);
        }
    }

    /// A new alert; when a live one of the same series moved too far to be this change,
    /// the new one supersedes it and takes over its ack and reason.
    fn open(&mut self, target: &str, mut alert: Alert) {
        let taken = self.prior.iter().find(|a| {
            a.target == target
                && a.state.live()
                && !self.claimed.contains(&a.id)
                && a.moved.iter().any(|m| {
                    alert
                        .moved
                        .iter()
                        .any(|n| n.phase == m.phase && n.figure == m.figure)
                })
        });
        if let Some(old) = taken {
            self.claimed.push(old.id);
            alert.note.clone_from(&old.note);
            if old.state == AlertState::Acknowledged && alert.state.live() {
                alert.state = AlertState::Acknowledged;
            }
            self.out.supersede.push((
                Alert {
                    state: AlertState::Superseded,
                    closed_at: self.newest.clone(),
                    ..old.clone()
                },
                self.out.save.len(),
            ));
        }
        if alert.state != AlertState::Open {
            alert.closed_at.clone_from(&self.newest);
        }
        self.out.save.push(alert);
    }

    /// A live alert whose change no series shows any longer was not one.
    fn resolve_unclaimed(&mut self) {
        for old in self
            .prior
            .iter()
            .filter(|a| a.state.live() && !self.claimed.contains(&a.id))
        {
            self.out.save.push(Alert {
                state: AlertState::Resolved,
                resolved_by: None,
                closed_at: self.newest.clone(),
                ..old.clone()
            });
        }
    }
}

/// Regressions whose change points lie within [`SAME_CHANGE`] eligible runs of the one
/// before them, as groups (`found` in rank order).
fn groups(found: Vec<Found>) -> Vec<Vec<Found>> {
    let mut out: Vec<Vec<Found>> = Vec::new();
    for f in found {
        match out.last_mut() {
            Some(group) if group.last().is_some_and(|l| f.rank - l.rank <= SAME_CHANGE) => {
                group.push(f);
            }
            _ => out.push(vec![f]),
        }
    }
    out
}

/// The alert a group makes on its own: at the run most of its series change at (the
/// earliest of the most common), open unless every series came back.
fn group_alert(
    plan: &str,
    target: &str,
    group: &[Found],
    ranks: &Ranks,
    settings: &Settings,
) -> Alert {
    let mut votes: BTreeMap<(usize, &str), usize> = BTreeMap::new();
    for f in group {
        *votes.entry((f.rank, &f.change.run)).or_default() += 1;
    }
    let most = votes.values().copied().max().unwrap_or(0);
    let change_at = votes
        .iter()
        .find(|(_, n)| **n == most)
        .map(|((_, run), _)| run.to_string())
        .unwrap_or_default();
    let mut moved: Vec<Moved> = group
        .iter()
        .map(|f| Moved {
            phase: f.trend.key.phase.clone(),
            figure: f.trend.key.figure.clone(),
            change_at: f.change.run.clone(),
            before: f.change.before,
            after: f.change.after,
        })
        .collect();
    // In the trends' (the store's key) order, so phases read in the same order everywhere.
    moved.sort_by(|a, b| (&a.phase, &a.figure).cmp(&(&b.phase, &b.figure)));
    let all_back = group.iter().all(|f| f.returned.is_some());
    let resolved_by = all_back
        .then(|| {
            group
                .iter()
                .filter_map(|f| f.returned.clone())
                .max_by_key(|r| ranks.get(r))
        })
        .flatten();
    let opened_by = group
        .iter()
        .map(|f| opened_by(f.trend, f.change, settings))
        .min_by_key(|r| ranks.get(r))
        .unwrap_or_else(|| change_at.clone());
    Alert {
        id: 0,
        plan: plan.to_string(),
        target: target.to_string(),
        opened_by,
        change_at,
        moved,
        state: if all_back {
            AlertState::Resolved
        } else {
            AlertState::Open
        },
        resolved_by,
        closed_at: None,
        superseded_by: None,
        note: None,
        former_ids: Vec::new(),
    }
}

/// A kept alert brought up to date with what its change looks like now: its number,
/// opening run, acknowledgement and former numbers stay.
fn carried(old: &Alert, fresh: Alert, newest: Option<&str>) -> Alert {
    let (state, resolved_by, closed_at) = match (&fresh.state, old.state.live()) {
        (AlertState::Resolved, true) => (
            AlertState::Resolved,
            fresh.resolved_by,
            newest.map(str::to_string),
        ),
        (AlertState::Resolved, false) => (
            AlertState::Resolved,
            fresh.resolved_by,
            old.closed_at.clone(),
        ),
        (_, true) => (old.state.clone(), None, None),
        // Seen again: re-opened, acknowledged still when it was.
        (_, false) if old.note.is_some() => (AlertState::Acknowledged, None, None),
        (_, false) => (AlertState::Open, None, None),
    };
    Alert {
        id: old.id,
        opened_by: old.opened_by.clone(),
        note: old.note.clone(),
        former_ids: old.former_ids.clone(),
        superseded_by: None,
        state,
        resolved_by,
        closed_at,
        ..fresh
    }
}

/// The run of the first later change in `change`'s segment that brings the level back
/// within the minimum effect of where it was (or better).
fn returned_by(trend: &SeriesTrend, change: &ChangePoint, settings: &Settings) -> Option<RunId> {
    let segment = trend.segment_of(change.at)?;
    let tolerance = settings.min_effect * change.before.abs();
    let back = |level: f64| match trend.better {
        Better::Lower => level <= change.before + tolerance,
        Better::Higher => level >= change.before - tolerance,
        Better::Neither => (level - change.before).abs() <= tolerance,
    };
    segment
        .changes
        .iter()
        .filter(|c| c.at > change.at)
        .find(|c| back(c.after))
        .map(|c| c.run.clone())
}

/// Where a run sits among the series' eligible runs.
fn eligible_rank(trend: &SeriesTrend, run: &str) -> Option<usize> {
    trend
        .points
        .iter()
        .filter(|p| eligible(p))
        .position(|p| p.run == run)
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
    use crate::history::synthetic::point;

    /// 14 runs at 100 with ±1% noise, then a 30% step at run `at` (1-based) for `phase`'s
    /// `figure` against `target`.
    fn stepped(target: &str, phase: &str, figure: &str, at: usize) -> SeriesTrend {
        let key = SeriesKey {
            plan: "p".into(),
            phase: phase.into(),
            target: target.into(),
            figure: figure.into(),
        };
        let points = (1..=20)
            .map(|n| {
                let wobble = [0.0, 1.0, -1.0, 0.5][n % 4];
                let level = if n >= at { 130.0 } else { 100.0 };
                point(n, level + wobble)
            })
            .collect();
        analyse(&key, points, &Settings::default())
    }

    fn update(trends: &[SeriesTrend], prior: &[Alert]) -> AlertUpdate {
        update_alerts("p", trends, prior, &Watch::default(), &Settings::default())
    }

    #[test]
    fn changes_of_one_target_within_two_runs_are_one_alert_and_other_targets_their_own() {
        let trends = [
            stepped("a", "c1", "ttft.p99", 15),
            stepped("a", "c8", "tpot.p50", 16),
            stepped("a", "c8", "tpot.p95", 15),
            stepped("b", "c1", "ttft.p99", 15),
        ];
        let out = update(&trends, &[]);
        assert_eq!(out.save.len(), 2, "{:#?}", out.save);
        let a = &out.save[0];
        assert_eq!((a.target.as_str(), a.change_at.as_str()), ("a", "run-0015"));
        // tpot.p95 is not watched.
        assert_eq!(a.phases(), ["c1", "c8"]);
        assert_eq!(a.moved.len(), 2);
        assert_eq!(out.save[1].target, "b");
    }

    #[test]
    fn an_alert_whose_change_moved_far_is_superseded_and_its_ack_carries_over() {
        let acked = Alert {
            id: 7,
            state: AlertState::Acknowledged,
            note: Some("known".into()),
            ..update(&[stepped("a", "c1", "ttft.p99", 11)], &[]).save[0].clone()
        };
        // The same series now steps five runs later.
        let out = update(
            &[stepped("a", "c1", "ttft.p99", 16)],
            std::slice::from_ref(&acked),
        );
        assert_eq!(out.save.len(), 1, "{out:#?}");
        assert_eq!(out.save[0].state, AlertState::Acknowledged);
        assert_eq!(out.save[0].note.as_deref(), Some("known"));
        assert_eq!(out.save[0].change_at, "run-0016");
        assert_eq!(out.supersede.len(), 1);
        assert_eq!(out.supersede[0].0.id, 7);
        assert_eq!(out.supersede[0].0.state, AlertState::Superseded);
        // Within two runs it is the same alert, updated in place.
        let near = update(
            &[stepped("a", "c1", "ttft.p99", 13)],
            std::slice::from_ref(&acked),
        );
        assert_eq!(near.save.len(), 1);
        assert_eq!(
            (near.save[0].id, near.save[0].change_at.as_str()),
            (7, "run-0013")
        );
        assert!(near.supersede.is_empty());
    }

    #[test]
    fn a_dismissed_alert_seen_again_reopens_with_its_ack_and_a_returned_one_stays_closed() {
        let trend = stepped("a", "c1", "ttft.p99", 15);
        let first = update(std::slice::from_ref(&trend), &[]).save[0].clone();
        let dismissed = Alert {
            id: 3,
            state: AlertState::Resolved,
            note: Some("expected".into()),
            closed_at: Some("run-0016".into()),
            ..first.clone()
        };
        let out = update(
            std::slice::from_ref(&trend),
            std::slice::from_ref(&dismissed),
        );
        assert_eq!(out.save.len(), 1);
        assert_eq!(
            (out.save[0].id, &out.save[0].state),
            (3, &AlertState::Acknowledged)
        );
        assert_eq!(out.save[0].closed_at, None);
        // An open alert whose change no series shows any longer is resolved by no run.
        let open = Alert { id: 4, ..first };
        let flat = stepped("a", "c1", "ttft.p99", 99);
        let out = update(std::slice::from_ref(&flat), std::slice::from_ref(&open));
        assert_eq!(out.save.len(), 1);
        assert_eq!(out.save[0].state, AlertState::Resolved);
        assert_eq!(out.save[0].resolved_by, None);
        assert_eq!(out.save[0].closed_at.as_deref(), Some("run-0020"));
    }
}
