//! `until: {stable: …}`: checks of the listed latencies the measured window's tally keeps,
//! stopping the window at the first check where every listed percentile's 95% interval is
//! tight enough and none moved across the window.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::figure::Figure;
use crate::metrics::DriftVerdict;
use crate::metrics::stability::{self, StableEstimate, UntilOutcome};
use crate::plan::{PercentileMethod, Until};
use crate::scheduler::Stops;
use crate::scheduler::live::{LiveTally, SharedTally};

/// Default time between checks.
const DEFAULT_CHECK_EVERY: Duration = Duration::from_secs(1);

/// One phase's run-until-stable: its window's own stop and its checks.
pub(super) struct Stable<'a> {
    until: &'a Until,
    method: PercentileMethod,
    stops: Stops,
}

/// What the checks saw.
pub(super) struct Watched {
    stable_at: Option<f64>,
    checks: u64,
    last: Vec<StableEstimate>,
    last_at: f64,
}

impl<'a> Stable<'a> {
    /// `stops` are the window's own: stopping them ends this window only.
    pub(super) fn new(until: &'a Until, method: PercentileMethod, stops: Stops) -> Self {
        Stable {
            until,
            method,
            stops,
        }
    }

    /// The figures the window's tally keeps for the checks: the listed ones.
    pub(super) fn figures(&self) -> impl Iterator<Item = Figure> + '_ {
        self.until.stable.iter().map(|metric| metric.parts().0)
    }

    /// The phase's outcome from what the checks saw; `run_stops` tell an interrupt, and
    /// `bounded_by_requests` a request bound from `max_duration`, when stability did not
    /// end the window.
    pub(super) fn outcome(
        &self,
        watched: Watched,
        run_stops: &Stops,
        bounded_by_requests: bool,
    ) -> UntilOutcome {
        let stopped_by = match watched.stable_at {
            Some(_) => "stable",
            None if run_stops.stop_starting.is_cancelled() => "interrupted",
            None if bounded_by_requests => "requests",
            None => "max_duration",
        };
        let warning = (stopped_by == "max_duration" || stopped_by == "requests").then(|| {
            let loose: Vec<String> = watched
                .last
                .iter()
                .filter(|e| e.verdict != DriftVerdict::Stable)
                .map(|e| match (e.verdict, e.relative) {
                    (DriftVerdict::Drifted, _) => format!("{} drifted", e.metric),
                    (_, Some(r)) => format!("{} ±{:.1}%", e.metric, r * 100.0),
                    (_, None) => format!("{} (too few samples for an interval)", e.metric),
                })
                .collect();
            format!(
                "not stable within {:.1}% by the end of the phase ({stopped_by}): {}",
                self.until.within.0 * 100.0,
                loose.join(", ")
            )
        });
        UntilOutcome {
            verdict: stability::window_verdict(&watched.last),
            stopped_by: stopped_by.to_string(),
            within: self.until.within.0,
            checks: watched.checks,
            checked_at_s: watched.stable_at.unwrap_or(watched.last_at),
            estimates: watched.last,
            warning,
        }
    }

    /// Check every `check_every` until `done` (the window ended); stops the window at the
    /// first check where every listed interval is tight enough.
    pub(super) async fn watch(
        &self,
        started: Instant,
        tally: &SharedTally,
        done: &CancellationToken,
    ) -> Watched {
        let every = self.until.check_every.map_or(DEFAULT_CHECK_EVERY, |d| d.0);
        let mut watched = Watched {
            stable_at: None,
            checks: 0,
            last: Vec::new(),
            last_at: 0.0,
        };
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        // A check that overran is not followed by a burst of catch-up checks.
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let ended = tokio::select! {
                _ = ticks.tick() => false,
                () = done.cancelled() => true,
            };
            watched.last = self.estimates(tally);
            watched.last_at = started.elapsed().as_secs_f64();
            if ended {
                return watched;
            }
            watched.checks += 1;
            if watched
                .last
                .iter()
                .all(|e| e.verdict == DriftVerdict::Stable)
            {
                watched.stable_at = Some(watched.last_at);
                self.stops.stop_starting.cancel();
                done.cancelled().await;
                return watched;
            }
        }
    }

    /// The listed percentiles now; each figure's column is copied out (so the collector
    /// never waits on a sort) and sorted once, however many of its percentiles are listed.
    fn estimates(&self, tally: &SharedTally) -> Vec<StableEstimate> {
        // Per figure: its values in arrival order, and sorted.
        let mut columns: Vec<(Figure, Vec<f64>, Vec<f64>)> = Vec::new();
        self.until
            .stable
            .iter()
            .map(|metric| {
                let (figure, q) = metric.parts();
                let at = match columns.iter().position(|(f, _, _)| *f == figure) {
                    Some(at) => at,
                    None => {
                        let in_order = LiveTally::lock(tally).values(figure).to_vec();
                        let mut sorted = in_order.clone();
                        sorted.sort_by(f64::total_cmp);
                        columns.push((figure, in_order, sorted));
                        columns.len() - 1
                    }
                };
                let (_, in_order, sorted) = &columns[at];
                let within = self.until.within.0;
                stability::estimate(&metric.name(), in_order, sorted, q, self.method, within)
            })
            .collect()
    }
}
