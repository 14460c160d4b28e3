//! A capacity-search phase: probes run one after another through the normal phase runner,
//! each a phase of its own in the report, until the course (`schedule::search`) stops. Each
//! probe starts from a drained server, and a client-bound probe never decides: it runs once
//! more, and a second client-bound run ends the search. A probe that could not decide for
//! too few samples runs again longer, up to the plan's `until.max_duration`.

use std::time::{Duration, Instant};

use crate::metrics;
use crate::metrics::verdict::Verdict;
use crate::plan::Search;
use crate::report::assemble::capacity::capacity_interval;
use crate::report::{
    PhaseResult, ProbeOutcome, ProbeSpec, Report, SamplesShort, SearchResult, SearchStop,
};
use crate::schedule::search::{Course, StopReason, longer_probe};
use crate::schedule::{PhaseSettings, probe_load};

use super::options::RunError;
use super::run::Phases;
use super::scrape;

/// Pause before a client-bound probe runs again, for whatever held the client's cores.
const CLIENT_BOUND_SETTLE: Duration = Duration::from_secs(2);
/// Longest wait for the server to drain before a probe.
const DRAIN_WAIT: Duration = Duration::from_secs(60);
const DRAIN_POLL: Duration = Duration::from_millis(200);

/// One probe's run as the search reads it: its outcome (absent when it ran without one),
/// goodput, and how long it was planned to run.
struct Probed {
    outcome: Option<ProbeOutcome>,
    goodput: Option<f64>,
    duration: Duration,
    /// Why the probe's target went down: the search and the run end there.
    target_down: Option<String>,
}

impl Phases<'_> {
    /// Run `phase`'s search; its probes and result go into `report`. The error that stopped
    /// the run, if one did.
    pub(super) async fn run_search(
        &self,
        phase: &PhaseSettings<'_>,
        search: &Search,
        report: &mut Report,
        run_origin: &mut Option<std::time::Instant>,
    ) -> Result<Option<RunError>, RunError> {
        let mut course = Course::new(search);
        let mut probes = Vec::new();
        let mut capacity_goodput = None;
        // The probes at the ends of the bracket, for the capacity's interval.
        let (mut at_pass, mut at_fail): (Option<ProbeOutcome>, Option<ProbeOutcome>) = (None, None);
        let start = search.start_note();
        if let Some(note) = start.as_ref().filter(|_| !self.options.quiet()) {
            eprintln!("note: search `{}` {note}", phase.name);
        }
        // Set when a probe's target went down: the search and the run end there.
        let mut down = None;
        let stop = loop {
            if self.stops.stop_starting.is_cancelled() {
                break SearchStop::Interrupted;
            }
            let load = match course.next() {
                Ok(load) => load,
                Err(reason) => break search_stop(reason),
            };
            let ran = match self
                .probe_until_sampled(phase, search, load, &mut probes, report, run_origin)
                .await?
            {
                Ok(ran) => ran,
                Err(e) => return Ok(Some(e)),
            };
            let Some(probed) = ran else {
                course.stop_client_bound(load);
                continue;
            };
            // A target that went down says nothing of this load: never a verdict.
            if let Some(why) = probed.target_down {
                down = Some(why);
                break SearchStop::TargetDown { at: load };
            }
            let Some(outcome) = probed.outcome else {
                continue;
            };
            course.record(load, outcome.verdict);
            match outcome.verdict {
                Verdict::Pass if course.passed == Some(load) => {
                    capacity_goodput = probed.goodput;
                    at_pass = Some(outcome);
                }
                Verdict::Fail if course.failed == Some(load) => at_fail = Some(outcome),
                _ => {}
            }
        };
        report.searches.push(SearchResult {
            phase: phase.name.to_string(),
            load: search.load,
            capacity: course.passed,
            lower_bound: stop.is_inconclusive(),
            capacity_interval: capacity_interval(at_pass.as_ref(), at_fail.as_ref()),
            goodput: capacity_goodput,
            bracket: [course.passed, course.failed],
            start,
            stop_reason: stop.describe(search.load),
            stop: Some(stop),
            probes,
            work_sha256: self
                .targets
                .for_phase(phase, self.simulators)
                .ok()
                .and_then(|t| super::salt::work_sha256(&self.loaded.plan, phase, &t.model)),
        });
        super::output::write_report(self.out_dir, report).map_err(RunError::Failed)?;
        Ok(down.map(RunError::TargetDown))
    }

    /// The probe at `load`, run again longer while it could not decide for too few samples
    /// and the plan's `until.max_duration` allows a longer one. `None` when it was
    /// client-bound twice; the inner error is the one that stopped the run.
    async fn probe_until_sampled(
        &self,
        phase: &PhaseSettings<'_>,
        search: &Search,
        load: f64,
        probes: &mut Vec<String>,
        report: &mut Report,
        run_origin: &mut Option<std::time::Instant>,
    ) -> Result<Result<Option<Probed>, RunError>, RunError> {
        let mut duration = search.probe_duration(load);
        loop {
            let probed = match self
                .probe_at(phase, search, (load, duration), probes, report, run_origin)
                .await?
            {
                Ok(Some(probed)) => probed,
                other => return Ok(other),
            };
            // An interrupted probe is short of samples because it was cut: never rerun it.
            let longer = probed
                .outcome
                .as_ref()
                .filter(|_| probed.target_down.is_none())
                .filter(|o| o.verdict == Verdict::Indeterminate)
                .filter(|_| !self.stops.stop_starting.is_cancelled())
                .and_then(|o| lengthen(search, probed.duration, o));
            let Some((longer, why)) = longer else {
                return Ok(Ok(Some(probed)));
            };
            if !self.options.quiet() {
                eprintln!(
                    "note: probe `{}` {why}: running it again for {}",
                    probes.last().map_or("", String::as_str),
                    humantime::format_duration(longer)
                );
            }
            duration = longer;
        }
    }

    /// One probe at `load` for `duration`, run once more after a settle when its client was
    /// the bottleneck. `None` when it was client-bound twice.
    async fn probe_at(
        &self,
        phase: &PhaseSettings<'_>,
        search: &Search,
        (load, duration): (f64, Duration),
        probes: &mut Vec<String>,
        report: &mut Report,
        run_origin: &mut Option<std::time::Instant>,
    ) -> Result<Result<Option<Probed>, RunError>, RunError> {
        let calibration = report.client_calibration.clone();
        for attempt in 1..=2 {
            let name = format!("{}/probe-{}", phase.name, probes.len() + 1);
            let settings = PhaseSettings {
                name: &name,
                load: probe_load(search.load, load),
                duration: Some(duration),
                ..phase.clone()
            };
            self.wait_drained(&settings).await?;
            let mut ran = match self
                .probe(&settings, calibration.as_ref(), run_origin)
                .await
            {
                Ok(ran) => ran,
                Err(e) => return Ok(Err(e)),
            };
            ran.facts.probe = Some(ProbeSpec {
                search_phase: phase.name.to_string(),
                search: search.clone(),
                load,
            });
            let result = self.add_phase(report, ran)?;
            probes.push(name);
            if result.target_down.is_some() || !client_bound(result) {
                return Ok(Ok(Some(Probed {
                    outcome: result.probe.clone(),
                    goodput: goodput(search, result),
                    duration,
                    target_down: result.target_down.clone(),
                })));
            }
            if attempt == 2 || self.stops.stop_starting.is_cancelled() {
                break;
            }
            eprintln!(
                "warning: probe `{}` was client-bound: running it again",
                result.header.phase
            );
            tokio::time::sleep(CLIENT_BOUND_SETTLE).await;
        }
        Ok(Ok(None))
    }

    /// Wait until the target's `/metrics` shows no request running or waiting, so a probe
    /// does not inherit the backlog of the one before; a target without metrics, or one that
    /// does not drain in time, is warned about and probed anyway.
    async fn wait_drained(&self, phase: &PhaseSettings<'_>) -> Result<(), RunError> {
        let target = self.targets.for_phase(phase, self.simulators)?;
        let Some(url) = target.metrics_url.as_deref() else {
            return Ok(());
        };
        let started = Instant::now();
        loop {
            let levels = match scrape::scrape(&target.side, url).await {
                Ok(sample) => scrape::reading::read(&sample).map(|r| r.levels),
                Err(e) => Err(e),
            };
            match levels {
                Ok(levels) if levels.running.is_none() && levels.waiting.is_none() => {
                    return Ok(());
                }
                Ok(levels)
                    if levels.running.unwrap_or(0.0) + levels.waiting.unwrap_or(0.0) == 0.0 =>
                {
                    return Ok(());
                }
                Ok(_) if started.elapsed() < DRAIN_WAIT => {}
                Ok(levels) => {
                    eprintln!(
                        "warning: probe `{}` starts before the server drained ({} running, {} waiting after {} s)",
                        phase.name,
                        levels.running.unwrap_or(0.0),
                        levels.waiting.unwrap_or(0.0),
                        DRAIN_WAIT.as_secs()
                    );
                    return Ok(());
                }
                Err(e) => {
                    eprintln!(
                        "warning: probe `{}`: cannot tell whether the server drained: {e}",
                        phase.name
                    );
                    return Ok(());
                }
            }
            tokio::time::sleep(DRAIN_POLL).await;
        }
    }
}

/// How much longer to run a probe that ran `ran` and could not decide for too few samples,
/// and why; `None` when none of its objectives was short of samples or it ran the longest
/// the plan allows.
fn lengthen(search: &Search, ran: Duration, outcome: &ProbeOutcome) -> Option<(Duration, String)> {
    let (objective, short) = outcome
        .objectives
        .iter()
        .filter(|o| o.verdict == Verdict::Indeterminate)
        .filter_map(|o| Some((o, o.samples_short()?)))
        .max_by(|(_, a), (_, b)| {
            let shortfall = |s: &SamplesShort| s.needed as f64 / s.effective.max(1.0);
            shortfall(a).total_cmp(&shortfall(b))
        })?;
    let longer = longer_probe(search, ran, short.effective, short.needed)?;
    let why = format!(
        "held {} effective of the {} samples {} needs",
        short.effective.floor(),
        short.needed,
        objective.objective
    );
    Some((longer, why))
}

/// A client-bound probe, unless its verdict would stand without the client's delay: it
/// does not decide.
fn client_bound(result: &PhaseResult) -> bool {
    let untrusted = result
        .client_trust
        .as_ref()
        .is_some_and(|t| !t.is_trusted());
    untrusted
        && !result
            .probe
            .as_ref()
            .is_some_and(|p| p.holds_despite_client())
}

/// The course's stop as the report states it.
fn search_stop(reason: StopReason) -> SearchStop {
    match reason {
        StopReason::PrecisionReached => SearchStop::PrecisionReached,
        StopReason::MaxMet => SearchStop::MaxMet,
        StopReason::MinFailed => SearchStop::MinFailed,
        StopReason::Budget => SearchStop::ProbeBudgetSpent,
        StopReason::Indeterminate(at) => SearchStop::Indeterminate { at },
        StopReason::ClientBound(at) => SearchStop::ClientBound { at },
    }
}

/// Successful requests per second whose figures are within each objective's largest limit
/// (goodput as a plan's `slo` counts it).
fn goodput(search: &Search, result: &PhaseResult) -> Option<f64> {
    let limits = search.slo.request_limits();
    let timings = result.request_timings.iter();
    let good = timings.filter(|r| metrics::meets_slo(r, &limits)).count();
    let elapsed = result.summary.elapsed;
    (elapsed > 0.0).then(|| good as f64 / elapsed)
}
