//! `until: {stable: …}`: a compact running column of the listed latencies, fed by the
//! measured window's collector, and a watcher that stops the window at the first check where
//! every listed percentile's 95% interval is tight enough.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::client::RequestRecord;
use crate::metrics::stability::{self, StableEstimate, UntilOutcome};
use crate::plan::{Latency, PercentileMethod, Until};
use crate::scheduler::Stops;

/// Default time between checks.
const DEFAULT_CHECK_EVERY: Duration = Duration::from_secs(1);

/// Called with every record the collector receives.
pub(super) type Observer = Arc<dyn Fn(&RequestRecord) + Send + Sync>;

/// One observer calling each of `observers`; `None` when there are none.
pub(super) fn combine(observers: Vec<Observer>) -> Option<Observer> {
    match observers.len() {
        0 => None,
        1 => observers.into_iter().next(),
        _ => Some(Arc::new(move |record: &RequestRecord| {
            for observe in &observers {
                observe(record);
            }
        })),
    }
}

/// The stops of one window: a child of the run's, so stopping them ends this window only,
/// while an interrupt still ends it too.
pub(super) fn window_stops(run: &Stops) -> Stops {
    Stops {
        stop_starting: run.stop_starting.child_token(),
        abort_in_flight: run.abort_in_flight.child_token(),
    }
}

/// The listed latencies of successful requests, seconds, in arrival order.
#[derive(Default)]
struct Column {
    ttft: Vec<f64>,
    tpot: Vec<f64>,
    e2e: Vec<f64>,
}

impl Column {
    fn values(&self, latency: Latency) -> &[f64] {
        match latency {
            Latency::Ttft => &self.ttft,
            Latency::Tpot => &self.tpot,
            Latency::E2e => &self.e2e,
        }
    }
}

/// One phase's run-until-stable: its window's own stop, its column and what the checks found.
pub(super) struct Stable<'a> {
    until: &'a Until,
    method: PercentileMethod,
    stops: Stops,
    column: Arc<Mutex<Column>>,
    needs: [bool; 3],
}

/// What the watcher saw.
struct Watched {
    stable_at: Option<f64>,
    checks: u64,
    last: Vec<StableEstimate>,
    last_at: f64,
}

impl<'a> Stable<'a> {
    /// `stops` are the window's own: stopping them ends this window only.
    pub(super) fn new(until: &'a Until, method: PercentileMethod, stops: Stops) -> Self {
        let mut needs = [false; 3];
        for metric in &until.stable {
            needs[latency_index(metric.parts().0)] = true;
        }
        Stable {
            until,
            method,
            stops,
            column: Arc::default(),
            needs,
        }
    }

    /// Feeds the column; only the listed latencies are kept.
    pub(super) fn observer(&self) -> Observer {
        let column = self.column.clone();
        let needs = self.needs;
        Arc::new(move |record: &RequestRecord| {
            if !record.is_ok() {
                return;
            }
            let mut column = column.lock().unwrap_or_else(|p| p.into_inner());
            let seconds = |ms: Option<f64>| ms.map(|ms| ms / 1e3).filter(|s| s.is_finite());
            if needs[0]
                && let Some(s) = seconds(record.ttft_ms)
            {
                column.ttft.push(s);
            }
            if needs[1]
                && let Some(s) = seconds(record.tpot_ms)
            {
                column.tpot.push(s);
            }
            if needs[2]
                && let Some(s) = seconds(Some(record.e2e_ms))
            {
                column.e2e.push(s);
            }
        })
    }

    /// Run `window` with the checks beside it; returns its output and the phase's outcome.
    /// `bounded_by_requests` tells a request bound from `max_duration` when neither stability
    /// nor an interrupt ended the window.
    pub(super) async fn around<T>(
        &self,
        window: impl Future<Output = T>,
        run_stops: &Stops,
        bounded_by_requests: impl Fn(&T) -> bool,
    ) -> (T, UntilOutcome) {
        let started = Instant::now();
        let done = tokio_util::sync::CancellationToken::new();
        let window = async {
            let out = window.await;
            done.cancel();
            out
        };
        let (out, watched) = tokio::join!(window, self.watch(started, &done));
        let stopped_by = match watched.stable_at {
            Some(_) => "stable",
            None if run_stops.stop_starting.is_cancelled() => "interrupted",
            None if bounded_by_requests(&out) => "requests",
            None => "max_duration",
        };
        let warning = (stopped_by == "max_duration" || stopped_by == "requests").then(|| {
            let loose: Vec<String> = watched
                .last
                .iter()
                .filter(|e| !e.within(self.until.within.0))
                .map(|e| match e.relative {
                    Some(r) => format!("{} ±{:.1}%", e.metric, r * 100.0),
                    None => format!("{} (too few samples for an interval)", e.metric),
                })
                .collect();
            format!(
                "not stable within {:.1}% by the end of the phase ({stopped_by}): {}",
                self.until.within.0 * 100.0,
                loose.join(", ")
            )
        });
        let outcome = UntilOutcome {
            stopped_by: stopped_by.to_string(),
            within: self.until.within.0,
            checks: watched.checks,
            checked_at_s: watched.stable_at.unwrap_or(watched.last_at),
            estimates: watched.last,
            warning,
        };
        (out, outcome)
    }

    async fn watch(&self, started: Instant, done: &tokio_util::sync::CancellationToken) -> Watched {
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
            watched.last = self.estimates();
            watched.last_at = started.elapsed().as_secs_f64();
            if ended {
                return watched;
            }
            watched.checks += 1;
            if watched.last.iter().all(|e| e.within(self.until.within.0)) {
                watched.stable_at = Some(watched.last_at);
                self.stops.stop_starting.cancel();
                done.cancelled().await;
                return watched;
            }
        }
    }

    /// The listed percentiles now; each latency's column is copied out (so the collector
    /// never waits on a sort) and sorted once, however many of its percentiles are listed.
    fn estimates(&self) -> Vec<StableEstimate> {
        let mut sorted: [Option<Vec<f64>>; 3] = [None, None, None];
        self.until
            .stable
            .iter()
            .map(|metric| {
                let (latency, q) = metric.parts();
                let values = sorted[latency_index(latency)].get_or_insert_with(|| {
                    let mut values = {
                        let column = self.column.lock().unwrap_or_else(|p| p.into_inner());
                        column.values(latency).to_vec()
                    };
                    values.sort_by(f64::total_cmp);
                    values
                });
                stability::estimate(&metric.name(), values, q, self.method)
            })
            .collect()
    }
}

fn latency_index(latency: Latency) -> usize {
    match latency {
        Latency::Ttft => 0,
        Latency::Tpot => 1,
        Latency::E2e => 2,
    }
}
