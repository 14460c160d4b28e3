//! The parts of a report drawn across its phases: rechecks paired with their originals, and
//! repeat groups.

use crate::metrics::{self, RecheckPair};
use crate::plan::Tolerance;
use crate::report::model::{PhaseResult, Report};

/// The report's parts drawn across its phases, made again from them: each recheck paired
/// with its original (with the plan's tolerances), and the repeat groups.
pub fn relate_phases(report: &mut Report) {
    let settings = crate::schedule::resolve(&report.plan).unwrap_or_default();
    report.rechecks = pair_rechecks(&report.phases, |name| {
        settings
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.tolerance.clone())
            .unwrap_or_default()
    });
    report.repeats = super::repeats::repeat_results(report);
}

/// Every recheck among `phases` paired with its original, each judged with the tolerance
/// `tolerance_of` gives for the recheck's name.
pub fn pair_rechecks(
    phases: &[PhaseResult],
    tolerance_of: impl Fn(&str) -> Tolerance,
) -> Vec<RecheckPair> {
    phases
        .iter()
        .filter_map(|recheck| {
            let original_name = recheck.header.recheck_of.as_deref()?;
            let original = phases.iter().find(|p| p.header.phase == original_name)?;
            Some(metrics::recheck_pair(
                original_name,
                &original.summary,
                &recheck.header.phase,
                &recheck.summary,
                &tolerance_of(&recheck.header.phase),
            ))
        })
        .collect()
}
