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
    let method = report.timing_methodology.percentile_method;
    let against: Vec<Option<String>> = report
        .phases
        .iter()
        .map(|phase| {
            let planned = report
                .plan
                .phases
                .iter()
                .find(|p| p.name.as_deref() == Some(phase.header.phase.as_str()));
            planned.and_then(|p| p.compare_to.clone())
        })
        .collect();
    for (i, other) in against.into_iter().enumerate() {
        let Some(other) = other else { continue };
        let overhead = report
            .phases
            .iter()
            .find(|p| p.header.phase == other)
            .and_then(|base| phase_overhead(base, &report.phases[i], method));
        if overhead.is_some() {
            report.phases[i].overhead = overhead;
        }
    }
}

/// `new`'s overhead over `base`, from both phases' kept records; `None` without records.
pub fn phase_overhead(
    base: &PhaseResult,
    new: &PhaseResult,
    method: crate::plan::PercentileMethod,
) -> Option<metrics::overhead::Overhead> {
    use crate::report::model::figure_path::FigurePath;
    let figures: Vec<_> = metrics::overhead::OVERHEAD_FIGURES
        .iter()
        .filter_map(|&(figure, stat)| {
            let path = FigurePath::Dist(figure, stat);
            let (b, _) = path.samples(base)?;
            let (n, _) = path.samples(new)?;
            let seed = crate::hash::fnv1a_64(format!("{}/{path}", new.header.phase).as_bytes());
            metrics::overhead::overhead_figure(
                path.to_string(),
                (&b[..], &n[..]),
                method,
                stat,
                seed,
            )
        })
        .collect();
    (!figures.is_empty()).then(|| metrics::overhead::Overhead {
        against: base.header.phase.clone(),
        figures,
    })
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
