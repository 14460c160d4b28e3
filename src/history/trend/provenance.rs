//! Provenance changes between consecutive runs of a plan: an engine version, a host, a
//! label that differs from the run before.

use crate::history::series::RunId;
use crate::history::store::RunSummary;

/// One provenance label that changed at a run.
#[derive(Debug, Clone, PartialEq)]
pub struct ProvenanceChange {
    /// The first run with the new value.
    pub run: RunId,
    pub label: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Every label change between consecutive `runs` (oldest first).
pub fn provenance_changes(runs: &[RunSummary]) -> Vec<ProvenanceChange> {
    let mut out = Vec::new();
    for pair in runs.windows(2) {
        let (old, new) = (&pair[0].provenance, &pair[1].provenance);
        let labels: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        for label in labels {
            let (b, a) = (old.get(label), new.get(label));
            if b != a {
                out.push(ProvenanceChange {
                    run: pair[1].id.clone(),
                    label: label.clone(),
                    before: b.cloned(),
                    after: a.cloned(),
                });
            }
        }
    }
    out
}
