//! Over-saturated rate probes stopped early: while a capacity search's rate probe runs, the
//! completions of the last few seconds (kept by the window's tally) are counted, and a probe whose targets falls behind its
//! arrivals for a sustained stretch is stopped and named over-saturated, with why.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::report::SaturationStop;
use crate::report::assemble::probe::SATURATED_BELOW;
use crate::scheduler::live::{LiveTally, SharedTally};
use crate::scheduler::{Load, Stops};

/// Completions are counted over this trailing window, and a shortfall must last this long.
const WINDOW: Duration = Duration::from_secs(2);
/// Time between checks.
const CHECK_EVERY: Duration = Duration::from_millis(250);

/// A rate probe's watch.
pub(super) struct Saturation {
    rps: f64,
    stops: Stops,
}

impl Saturation {
    /// A watch for an open-loop probe of a capacity search; `None` for any other window.
    pub(super) fn for_probe(load: &Load, is_probe: bool, stops: Stops) -> Option<Self> {
        let Load::Open { rps, .. } = load else {
            return None;
        };
        (is_probe && *rps > 0.0).then(|| Saturation { rps: *rps, stops })
    }

    /// How long the window's tally keeps completion instants: only the trailing window is
    /// ever counted.
    pub(super) const KEEP_COMPLETIONS: Duration = WINDOW.saturating_mul(2);

    /// Check every `CHECK_EVERY` until `done` (the window ended); `Some` when the watch
    /// stopped the window.
    pub(super) async fn watch(
        &self,
        started: Instant,
        tally: &SharedTally,
        done: &CancellationToken,
    ) -> Option<SaturationStop> {
        let mut ticks =
            tokio::time::interval_at(tokio::time::Instant::now() + CHECK_EVERY, CHECK_EVERY);
        let mut first_end: Option<Instant> = None;
        let mut behind_since: Option<Instant> = None;
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                () = done.cancelled() => return None,
            }
            let now = Instant::now();
            let (recent, oldest) = LiveTally::lock(tally).completions_within(now, WINDOW);
            first_end = first_end.or(oldest);
            // Before a full window of completions has passed, a slow first request looks like
            // a shortfall: judge only windows that start after the first completion.
            if first_end.is_none_or(|first| now.duration_since(first) < WINDOW) {
                continue;
            }
            let achieved = recent as f64 / WINDOW.as_secs_f64();
            // The same share of the target the verdict after a probe judges by.
            if achieved >= SATURATED_BELOW * self.rps {
                behind_since = None;
                continue;
            }
            let since = *behind_since.get_or_insert(now);
            if now.duration_since(since) < WINDOW {
                continue;
            }
            // The verdict is in: waiting for a queue the target cannot serve only costs time.
            self.stops.stop_starting.cancel();
            self.stops.abort_in_flight.cancel();
            let at_s = now.duration_since(started).as_secs_f64();
            let held_s = now.duration_since(since).as_secs_f64() + WINDOW.as_secs_f64();
            return Some(SaturationStop {
                at_s,
                achieved_rps: achieved,
                target_rps: self.rps,
                why: format!(
                    "completed {achieved:.1} req/s against {:.1} req/s sent ({:.0}%) for {held_s:.1} s: the target fell behind its arrivals, so its queue grew",
                    self.rps,
                    100.0 * achieved / self.rps
                ),
            });
        }
    }
}
