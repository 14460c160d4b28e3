//! A capacity-search phase: probes run one after another through the normal phase runner,
//! each a phase of its own in the report, until the course (`schedule::search`) stops.

use crate::client::RequestRecord;
use crate::metrics::{self, PhaseSummary};
use crate::plan::{Objective, Search, SearchLoad};
use crate::report::{ObjectiveCheck, PhaseResult, ProbeOutcome, Report, SearchResult};
use crate::schedule::search::Course;
use crate::schedule::{PhaseSettings, probe_load};

use super::options::RunError;
use super::run::Phases;
use super::saturation::SATURATED_BELOW;

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
        let calibration = report.client_calibration.clone();
        let stop_reason = loop {
            if self.stops.stop_starting.is_cancelled() {
                break "interrupted".to_string();
            }
            let load = match course.next() {
                Ok(load) => load,
                Err(reason) => break reason.as_str().to_string(),
            };
            let name = format!("{}/probe-{}", phase.name, probes.len() + 1);
            let settings = PhaseSettings {
                name: &name,
                load: probe_load(search.load, load),
                ..phase.clone()
            };
            let mut result = match self
                .probe(&settings, calibration.as_ref(), run_origin)
                .await
            {
                Ok(result) => result,
                Err(e) => return Ok(Some(e)),
            };
            let outcome = judge(phase.name, search, load, &result);
            course.record(load, outcome.passed);
            if outcome.passed && course.passed == Some(load) {
                capacity_goodput = goodput(search, &result);
            }
            result.probe = Some(outcome);
            probes.push(name);
            self.add_phase(report, result)?;
        };
        report.searches.push(SearchResult {
            phase: phase.name.to_string(),
            load: search.load,
            capacity: course.passed,
            goodput: capacity_goodput,
            bracket: [course.passed, course.failed],
            stop_reason,
            probes,
        });
        super::output::write_report(self.out_dir, report).map_err(RunError::Failed)?;
        Ok(None)
    }
}

/// A probe's verdict: every objective met, and (open loop) not over-saturated.
fn judge(search_name: &str, search: &Search, load: f64, result: &PhaseResult) -> ProbeOutcome {
    let s = &result.summary;
    let objectives: Vec<ObjectiveCheck> = search
        .slo
        .objectives()
        .into_iter()
        .map(|objective| {
            let value = figure(objective, s);
            let limit = objective.limit();
            ObjectiveCheck {
                passed: value.is_some_and(|v| v <= limit),
                objective: objective.name(),
                limit,
                value,
            }
        })
        .collect();
    let rate = completion_rate(&result.request_timings);
    let over_saturated_why = match &result.saturation_stop {
        Some(stop) => Some(format!("stopped after {:.1} s: {}", stop.at_s, stop.why)),
        None => (search.load == SearchLoad::Rate && rate < SATURATED_BELOW * load)
            .then(|| format!("completed {rate:.1} req/s against {load} req/s sent, under 90%")),
    };
    let over_saturated = over_saturated_why.is_some();
    ProbeOutcome {
        search: search_name.to_string(),
        load,
        passed: !over_saturated && objectives.iter().all(|o| o.passed),
        over_saturated,
        over_saturated_why,
        stopped_early: result.saturation_stop.is_some(),
        objectives,
    }
}

/// Completions per second: `(n − 1)` over the span of the requests' end times. Below
/// capacity the ends are spaced like the sends, so this is the arrival rate; above it they
/// come at the rate the target can serve.
fn completion_rate(records: &[RequestRecord]) -> f64 {
    let ends = records.iter().map(|r| r.start_offset_ms + r.e2e_ms);
    let (first, last) = ends.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), e| {
        (lo.min(e), hi.max(e))
    });
    let span_s = (last - first) / 1e3;
    if records.len() > 1 && span_s > 0.0 {
        (records.len() - 1) as f64 / span_s
    } else {
        f64::INFINITY
    }
}

/// An objective's figure in its unit, e.g. `ttft.p99` in seconds or `error_rate` as a
/// fraction.
fn figure(objective: Objective, s: &PhaseSummary) -> Option<f64> {
    match objective {
        Objective::ErrorRate(_) => (s.requests > 0).then(|| s.errors as f64 / s.requests as f64),
        Objective::Stat(figure, stat, _) => s.distribution(figure).map(|d| stat.of(d)),
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
