//! A probe that ends once its verdict is in: at 1/8, 1/4 and 1/2 of its duration (the last
//! look is the verdict after the window) the percentile objectives' bounds are taken from
//! the window's tally, each look at its share of the error rate, and a probe whose every
//! objective already passes, or one of which already fails, is stopped. A search with an
//! error-rate or goodput objective is judged after the window only.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::figure::Figure;
use crate::metrics::verdict::{PROBE_LOOKS, PercentileBounds, Verdict, look_tail};
use crate::plan::{Objective, PercentileMethod, Search};
use crate::scheduler::Stops;
use crate::scheduler::live::{LiveTally, SharedTally};

/// A probe's early looks.
pub(super) struct Decide {
    /// Each percentile objective: figure, quantile, limit.
    objectives: Vec<(Figure, f64, f64)>,
    duration: Duration,
    method: PercentileMethod,
    stops: Stops,
}

impl Decide {
    /// The looks of a search's probe that runs for `duration`; `None` for any other window,
    /// or a search with an objective the looks cannot judge (the error rate is judged after
    /// the window).
    pub(super) fn for_probe(
        search: Option<&Search>,
        duration: Option<Duration>,
        method: PercentileMethod,
        stops: Stops,
    ) -> Option<Self> {
        let (search, duration) = (search?, duration?);
        let objectives: Option<Vec<_>> = search
            .objectives()
            .into_iter()
            .map(|o| match o {
                Objective::Stat(figure, stat, limit) => Some((figure, stat.quantile()?, limit)),
                Objective::ErrorRate(_) | Objective::Goodput(_) => None,
            })
            .collect();
        let objectives = objectives.filter(|o| !o.is_empty())?;
        Some(Decide {
            objectives,
            duration,
            method,
            stops,
        })
    }

    /// The figures the window's tally keeps for the looks.
    pub(super) fn figures(&self) -> impl Iterator<Item = Figure> + '_ {
        self.objectives.iter().map(|(figure, _, _)| *figure)
    }

    /// Look at each early point until `done`; the seconds into the window at which the
    /// verdict was in and the window stopped, if it was.
    pub(super) async fn watch(
        &self,
        started: Instant,
        tally: &SharedTally,
        done: &CancellationToken,
    ) -> Option<f64> {
        for look in 1..PROBE_LOOKS {
            let share = 0.5f64.powi((PROBE_LOOKS - look) as i32);
            let at = tokio::time::Instant::from_std(started) + self.duration.mul_f64(share);
            tokio::select! {
                () = tokio::time::sleep_until(at) => {}
                () = done.cancelled() => return None,
            }
            let verdict = self.verdict(tally);
            if verdict != Verdict::Indeterminate {
                self.stops.stop_starting.cancel();
                return Some(started.elapsed().as_secs_f64());
            }
        }
        None
    }

    /// The verdict of the percentile objectives on the values so far.
    fn verdict(&self, tally: &SharedTally) -> Verdict {
        let mut verdicts = self.objectives.iter().map(|(figure, q, limit)| {
            let series = LiveTally::lock(tally).values(*figure).to_vec();
            let mut sorted = series.clone();
            sorted.sort_by(f64::total_cmp);
            let estimate = crate::metrics::percentile(&sorted, *q, self.method);
            PercentileBounds::of(&series, *q, estimate, *limit, look_tail(PROBE_LOOKS))
                .map_or(Verdict::Indeterminate, |b| b.verdict)
        });
        let verdicts: Vec<Verdict> = verdicts.by_ref().collect();
        if verdicts.contains(&Verdict::Fail) {
            Verdict::Fail
        } else if verdicts.iter().all(|v| *v == Verdict::Pass) {
            Verdict::Pass
        } else {
            Verdict::Indeterminate
        }
    }
}
