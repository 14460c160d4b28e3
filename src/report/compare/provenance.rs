//! What `compare` checks before it sets two phases side by side: whether they asked for the
//! same work (`work_sha256`), how the two runs differ in provenance (engine and its version,
//! host, plan commit, deployment labels), and the measured conditions of each phase pair.

use serde::Serialize;

use crate::metrics::conditions::{ConditionChange, changes};
pub use crate::report::model::provenance::{phase_conditions, provenance_labels};
use crate::report::model::{PhaseResult, Report};

/// A phase present in both reports that `compare` did not set side by side: the two asked
/// for different work.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RefusedPhase {
    pub phase: String,
    pub base_work_sha256: String,
    pub new_work_sha256: String,
}

/// One provenance label whose value differs between the two runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProvenanceDiff {
    pub label: String,
    pub base: Option<String>,
    pub new: Option<String>,
}

/// The two work hashes when both phases state one and they differ.
pub(super) fn work_differs(base: &PhaseResult, new: &PhaseResult) -> Option<RefusedPhase> {
    let (Some(b), Some(n)) = (&base.header.work_sha256, &new.header.work_sha256) else {
        return None;
    };
    (b != n).then(|| RefusedPhase {
        phase: new.header.phase.clone(),
        base_work_sha256: b.clone(),
        new_work_sha256: n.clone(),
    })
}

/// Every provenance label that differs between the runs, in a fixed order.
pub fn provenance_diffs(base: &Report, new: &Report) -> Vec<ProvenanceDiff> {
    let (b, n) = (provenance_labels(base), provenance_labels(new));
    let mut names: Vec<&String> = b.keys().collect();
    names.extend(n.keys().filter(|k| !b.contains_key(*k)));
    names
        .into_iter()
        .filter(|k| b.get(*k) != n.get(*k))
        .map(|k| ProvenanceDiff {
            label: k.clone(),
            base: b.get(k).cloned(),
            new: n.get(k).cloned(),
        })
        .collect()
}

/// The conditions that differ between a phase pair; a client-bound side counts as one run.
pub(super) fn condition_changes(
    (base, base_run): (&PhaseResult, &Report),
    (new, new_run): (&PhaseResult, &Report),
) -> Vec<ConditionChange> {
    let client_bound = [base, new]
        .iter()
        .filter(|p| p.client_trust.as_ref().is_some_and(|t| !t.is_trusted()))
        .count();
    changes(
        &phase_conditions(base, base_run),
        &phase_conditions(new, new_run),
        client_bound,
    )
}
