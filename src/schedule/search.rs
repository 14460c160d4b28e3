//! The capacity search's course: which load to probe next given the outcomes so far.
//! Doubling from `min` until a probe fails (or `max` passes), then geometric bisection of
//! the bracket until it is within `precision`. Pure; the runner runs the probes.

use std::time::Duration;

use crate::plan::{Search, SearchLoad};
use crate::probe_samples::Verdict;

/// Why a search stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StopReason {
    /// The bracket is within `precision` (or one apart, for concurrency).
    PrecisionReached,
    /// `max` passed: the capacity is at least `max`.
    MaxMet,
    /// `min` failed: the capacity is below the searched range.
    MinFailed,
    /// `max_probes` ran out first.
    Budget,
    /// A probe could not tell pass from fail by its maximum duration: the search cannot
    /// place the capacity against that load.
    Indeterminate(f64),
    /// A probe was client-bound twice: its latencies measure the client, not the target.
    ClientBound(f64),
}

/// A search in progress.
#[derive(Debug, Clone)]
pub struct Course {
    kind: SearchLoad,
    /// The first load: `min`, or a rate search's lowest decidable rate above it.
    first: f64,
    max: f64,
    precision: f64,
    budget: u32,
    probes: u32,
    /// Highest load that passed.
    pub passed: Option<f64>,
    /// Lowest load that failed.
    pub failed: Option<f64>,
    next: Result<f64, StopReason>,
}

impl Course {
    pub fn new(search: &Search) -> Self {
        Course {
            kind: search.load,
            first: search.first_load(),
            max: search.max,
            precision: search.precision.0,
            budget: search.worst_case_probes(),
            probes: 0,
            passed: None,
            failed: None,
            next: Ok(search.first_load()),
        }
    }

    /// The next load to probe, or why the search is over.
    pub fn next(&self) -> Result<f64, StopReason> {
        match self.next {
            Ok(_) if self.probes >= self.budget => Err(StopReason::Budget),
            other => other,
        }
    }

    /// Record a probe's verdict at `load`; an indeterminate one ends the search.
    pub fn record(&mut self, load: f64, verdict: Verdict) {
        self.probes += 1;
        if verdict == Verdict::Indeterminate {
            self.next = Err(StopReason::Indeterminate(load));
            return;
        }
        if verdict == Verdict::Pass {
            self.passed = Some(self.passed.map_or(load, |p| p.max(load)));
        } else {
            self.failed = Some(self.failed.map_or(load, |f| f.min(load)));
        }
        self.next = match (self.passed, self.failed) {
            (None, Some(_)) => Err(StopReason::MinFailed),
            (Some(p), None) if p >= self.max => Err(StopReason::MaxMet),
            (Some(p), None) => Ok(self.round((p * 2.0).min(self.max))),
            (Some(lo), Some(hi)) => self.bisect(lo, hi),
            (None, None) => Ok(self.first),
        };
    }

    /// End the search: the probe at `load` was client-bound even when run again.
    pub fn stop_client_bound(&mut self, load: f64) {
        self.next = Err(StopReason::ClientBound(load));
    }

    fn bisect(&self, lo: f64, hi: f64) -> Result<f64, StopReason> {
        if hi / lo - 1.0 <= self.precision {
            return Err(StopReason::PrecisionReached);
        }
        let mid = self.round((lo * hi).sqrt());
        if mid <= lo || mid >= hi {
            // Whole concurrencies one apart: nothing lies between.
            return Err(StopReason::PrecisionReached);
        }
        Ok(mid)
    }

    fn round(&self, v: f64) -> f64 {
        match self.kind {
            SearchLoad::Concurrency => v.round(),
            SearchLoad::Rate => v,
        }
    }
}

/// How long to run again a probe that ran `ran` and held `effective` of the `needed`
/// samples: long enough to hold them with a quarter to spare, in whole seconds, up to the
/// search's longest probe; `None` when it already ran that long.
pub fn longer_probe(
    search: &Search,
    ran: Duration,
    effective: f64,
    needed: u64,
) -> Option<Duration> {
    let longest = search.longest_probe();
    if ran >= longest {
        return None;
    }
    let scale = (needed as f64 / effective.max(1.0) * 1.25).max(1.25);
    let wanted = Duration::from_secs(ran.mul_f64(scale).as_secs_f64().ceil() as u64);
    Some(wanted.min(longest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{HumanDuration, Probe, Slo};

    fn search(load: SearchLoad, min: f64, max: f64, precision: f64) -> Search {
        Search {
            load,
            min,
            max,
            slo: Slo {
                error_rate: Some(crate::plan::Fraction(0.01)),
                ..Slo::default()
            },
            goodput: None,
            precision: crate::plan::Fraction(precision),
            probe: Probe {
                duration: HumanDuration(std::time::Duration::from_secs(1)),
                warmup: None,
                until: None,
            },
            max_probes: None,
        }
    }

    /// Run a course against a knee: loads up to `knee` pass.
    fn find(s: &Search, knee: f64) -> (Option<f64>, StopReason, Vec<f64>) {
        let mut course = Course::new(s);
        let mut probed = Vec::new();
        loop {
            match course.next() {
                Ok(load) => {
                    probed.push(load);
                    course.record(load, Verdict::of(load <= knee));
                }
                Err(reason) => return (course.passed, reason, probed),
            }
        }
    }

    #[test]
    fn finds_a_rate_knee_within_precision_in_the_worst_case_budget() {
        for knee in [3.3, 47.0, 50.0, 199.0] {
            let s = search(SearchLoad::Rate, 1.0, 400.0, 0.05);
            let (found, reason, probed) = find(&s, knee);
            let found = found.unwrap();
            assert_eq!(reason, StopReason::PrecisionReached, "{knee}: {probed:?}");
            assert!(
                found <= knee && found >= knee / 1.05,
                "{knee}: {found} {probed:?}"
            );
            assert!(probed.len() as u32 <= s.worst_case_probes(), "{probed:?}");
        }
    }

    #[test]
    fn finds_a_concurrency_knee_exactly() {
        for knee in [1.0, 7.0, 9.0, 33.0] {
            let s = search(SearchLoad::Concurrency, 1.0, 64.0, 0.05);
            let (found, _, probed) = find(&s, knee);
            assert_eq!(found, Some(knee), "{probed:?}");
            assert!(probed.iter().all(|c| c.fract() == 0.0));
        }
    }

    #[test]
    fn stops_at_the_ends_and_on_budget() {
        let s = search(SearchLoad::Rate, 10.0, 40.0, 0.05);
        assert_eq!(find(&s, 100.0).1, StopReason::MaxMet);
        let (found, reason, _) = find(&s, 5.0);
        assert_eq!((found, reason), (None, StopReason::MinFailed));
        let mut s = search(SearchLoad::Rate, 1.0, 400.0, 0.01);
        s.max_probes = Some(3);
        let (_, reason, probed) = find(&s, 50.0);
        assert_eq!((reason, probed.len()), (StopReason::Budget, 3));
    }

    #[test]
    fn an_under_sampled_probe_runs_longer_up_to_max_duration() {
        let secs = std::time::Duration::from_secs;
        let mut s = search(SearchLoad::Concurrency, 1.0, 8.0, 0.05);
        // Without `until.max_duration` a probe never runs past its `duration`.
        assert_eq!(longer_probe(&s, secs(1), 25.0, 99), None);
        s.probe.until = Some(
            serde_json::from_str(
                r#"{"stable": ["ttft.p95"], "within": 0.05, "max_duration": "8s"}"#,
            )
            .unwrap(),
        );
        // 25 of 99 samples in 1 s: 99 / 25 × 1.25 = 4.95 s, in whole seconds.
        assert_eq!(longer_probe(&s, secs(1), 25.0, 99), Some(secs(5)));
        assert_eq!(longer_probe(&s, secs(5), 90.0, 99), Some(secs(7)));
        assert_eq!(longer_probe(&s, secs(1), 0.0, 505), Some(secs(8)));
        assert_eq!(longer_probe(&s, secs(8), 50.0, 99), None);
    }

    #[test]
    fn a_rate_search_starts_where_its_probe_can_decide() {
        let mut s = search(SearchLoad::Rate, 1.0, 64.0, 0.05);
        s.slo = serde_json::from_str(r#"{"ttft": {"p95": "400ms"}}"#).unwrap();
        s.probe.duration = crate::plan::HumanDuration(std::time::Duration::from_secs(20));
        let (_, _, probed) = find(&s, 12.0);
        assert_eq!(probed[..3], [5.0, 10.0, 20.0], "{probed:?}");
        // Found below the first load: the search says `min` failed, not a capacity.
        let (found, reason, probed) = find(&s, 3.0);
        assert_eq!(
            (found, reason, probed),
            (None, StopReason::MinFailed, vec![5.0])
        );
    }

    #[test]
    fn an_indeterminate_or_client_bound_probe_ends_the_search_inconclusive() {
        let s = search(SearchLoad::Rate, 1.0, 64.0, 0.05);
        let mut course = Course::new(&s);
        course.record(1.0, Verdict::Pass);
        course.record(2.0, Verdict::Indeterminate);
        let reason = course.next().unwrap_err();
        assert_eq!(reason, StopReason::Indeterminate(2.0));
        assert_eq!(course.passed, Some(1.0));
        let mut course = Course::new(&s);
        course.stop_client_bound(1.0);
        assert_eq!(course.next().unwrap_err(), StopReason::ClientBound(1.0));
    }
}
