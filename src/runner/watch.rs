//! What watches a measured window while it runs: the run-until-stable checks, the saturation
//! check of a rate probe and the `during` actions, all reading the window's one tally and all
//! told by one token when the window ends.

use std::future::Future;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::metrics::stability::UntilOutcome;
use crate::plan::Hook;
use crate::report::SaturationStop;
use crate::scheduler::Stops;
use crate::scheduler::live::{Keep, LiveTally, SharedTally};

use super::decide::Decide;
use super::hooks::HookContext;
use super::marks::{DuringRun, run_during};
use super::saturation::Saturation;
use super::stable::Stable;

/// The stops of one window: a child of the run's, so stopping them ends this window only,
/// while an interrupt still ends it too.
pub(super) fn window_stops(run: &Stops) -> Stops {
    Stops {
        stop_starting: run.stop_starting.child_token(),
        abort_in_flight: run.abort_in_flight.child_token(),
    }
}

/// The watchers of one measured window.
pub(super) struct WindowWatch<'a> {
    pub stable: Option<Stable<'a>>,
    pub saturation: Option<Saturation>,
    /// A search probe's early looks at its verdict.
    pub decide: Option<Decide>,
    /// The `during` actions, and what they need; none run without a context.
    pub during: (&'a [Hook], Option<&'a HookContext<'a>>),
}

/// What the watchers found.
pub(super) struct Watched {
    pub until: Option<UntilOutcome>,
    pub saturation: Option<SaturationStop>,
    /// Seconds into the window at which a probe's verdict was in and the window stopped.
    pub decided_at_s: Option<f64>,
    pub during: DuringRun,
}

impl WindowWatch<'_> {
    /// The tally the window's records feed, keeping what the watchers read.
    pub(super) fn tally(&self) -> SharedTally {
        let keep = Keep {
            figures: self
                .stable
                .iter()
                .flat_map(Stable::figures)
                .chain(self.decide.iter().flat_map(Decide::figures))
                .collect(),
            completions_for: self
                .saturation
                .as_ref()
                .map(|_| Saturation::KEEP_COMPLETIONS),
        };
        LiveTally::shared(&keep)
    }

    /// Run `window` (fed into `tally`) with every watcher beside it, until it ends.
    /// `run_stops` and `bounded_by_requests` tell how a window that did not become stable
    /// ended.
    pub(super) async fn around<T>(
        &self,
        window: impl Future<Output = T>,
        tally: &SharedTally,
        run_stops: &Stops,
        bounded_by_requests: impl Fn(&T) -> bool,
    ) -> (T, Watched) {
        let started = Instant::now();
        let done = CancellationToken::new();
        let window = async {
            let out = window.await;
            done.cancel();
            out
        };
        let stable = async {
            match &self.stable {
                Some(stable) => Some(stable.watch(started, tally, &done).await),
                None => None,
            }
        };
        let saturation = async {
            match &self.saturation {
                Some(saturation) => saturation.watch(started, tally, &done).await,
                None => None,
            }
        };
        let decide = async {
            match &self.decide {
                Some(decide) => decide.watch(started, tally, &done).await,
                None => None,
            }
        };
        let during = async {
            match self.during {
                (hooks, Some(ctx)) if !hooks.is_empty() => {
                    run_during(hooks, ctx, started, &done).await
                }
                _ => DuringRun::default(),
            }
        };
        let (out, stable_watched, saturation, decided_at_s, during) =
            tokio::join!(window, stable, saturation, decide, during);
        let until = self.stable.as_ref().zip(stable_watched).map(|(s, w)| {
            let by_requests = bounded_by_requests(&out);
            s.outcome(w, run_stops, by_requests)
        });
        let watched = Watched {
            until,
            saturation,
            decided_at_s,
            during,
        };
        (out, watched)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::client::RequestRecord;
    use crate::plan::{Fraction, HookAction, HumanDuration, Until};
    use crate::scheduler::Load;

    fn hook(at_ms: u64, mark: &str) -> Hook {
        Hook {
            mark: Some(mark.to_string()),
            at: Some(HumanDuration(Duration::from_millis(at_ms))),
            ..Hook::new(HookAction::Sleep(HumanDuration(Duration::from_millis(1))))
        }
    }

    /// The stability check ends the window through the window's own stops; the one token
    /// that says the window ended then reaches every other watcher.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_window_end_reaches_every_watcher() {
        let run_stops = Stops::default();
        let stops = window_stops(&run_stops);
        let until = Until {
            stable: vec!["ttft.p50".parse().unwrap()],
            within: Fraction(0.05),
            max_duration: HumanDuration(Duration::from_secs(60)),
            check_every: Some(HumanDuration(Duration::from_millis(20))),
        };
        let target = super::super::targets::PhaseTarget {
            endpoint: Default::default(),
            side: reqwest::Client::new(),
            metrics_url: None,
            metrics: Vec::new(),
            metrics_interval: None,
            model: "m".into(),
        };
        let ctx = HookContext {
            phase: "p",
            target: &target,
            allow_exec: false,
            plan_dir: Path::new("."),
        };
        let hooks = [hook(0, "early"), hook(60_000, "late")];
        let load = Load::Open {
            rps: 1000.0,
            arrival: crate::plan::Arrival::Constant,
            burstiness: None,
            max_concurrency: None,
        };
        let watch = WindowWatch {
            stable: Some(Stable::new(&until, Default::default(), stops.clone())),
            saturation: Saturation::for_probe(&load, true, stops.clone()),
            decide: None,
            during: (&hooks, Some(&ctx)),
        };
        let tally = watch.tally();
        {
            let mut tally = LiveTally::lock(&tally);
            for _ in 0..200 {
                let record = RequestRecord {
                    ttft_ms: Some(100.0),
                    ..RequestRecord::default()
                };
                tally.record(&record, Instant::now());
            }
        }
        // Stands in for a window: it runs until its stops say to end it.
        let window = async { stops.stop_starting.cancelled().await };
        let ((), watched) = watch.around(window, &tally, &run_stops, |_| false).await;

        let until = watched.until.expect("an until outcome");
        assert_eq!(until.stopped_by, "stable");
        assert_eq!(until.checks, 1);
        // Ended before the saturation check had a full window to judge.
        assert!(watched.saturation.is_none());
        assert!(!run_stops.stop_starting.is_cancelled());
        let outcomes: Vec<(&str, &str)> = watched
            .during
            .outcomes
            .iter()
            .map(|o| (o.mark.as_deref().unwrap_or(""), o.outcome.as_str()))
            .collect();
        assert_eq!(outcomes, [("early", "ok"), ("late", "skipped")]);
        assert_eq!(watched.during.marks.len(), 1);
    }
}
