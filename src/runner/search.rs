//! A capacity-search phase: probes run one after another through the normal phase runner,
//! each a phase of its own in the report, until the course (`schedule::search`) stops.

use crate::metrics;
use crate::plan::Search;
use crate::report::{PhaseResult, ProbeSpec, Report, SearchResult};
use crate::schedule::search::Course;
use crate::schedule::{PhaseSettings, probe_load};

use super::options::RunError;
use super::run::Phases;

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
            let mut ran = match self
                .probe(&settings, calibration.as_ref(), run_origin)
                .await
            {
                Ok(ran) => ran,
                Err(e) => return Ok(Some(e)),
            };
            ran.facts.probe = Some(ProbeSpec {
                search_phase: phase.name.to_string(),
                search: search.clone(),
                load,
            });
            let result = self.add_phase(report, ran)?;
            let passed = result.probe.as_ref().is_some_and(|p| p.passed);
            course.record(load, passed);
            if passed && course.passed == Some(load) {
                capacity_goodput = goodput(search, result);
            }
            probes.push(name);
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

/// Successful requests per second whose figures are within each objective's largest limit
/// (goodput as a plan's `slo` counts it).
fn goodput(search: &Search, result: &PhaseResult) -> Option<f64> {
    let limits = search.slo.request_limits();
    let timings = result.request_timings.iter();
    let good = timings.filter(|r| metrics::meets_slo(r, &limits)).count();
    let elapsed = result.summary.elapsed;
    (elapsed > 0.0).then(|| good as f64 / elapsed)
}
