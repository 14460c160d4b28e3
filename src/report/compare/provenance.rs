//! What `compare` checks before it sets two phases side by side: whether they asked for the
//! same work (`work_sha256`), how the two runs differ in provenance (engine and its version,
//! host, plan commit, deployment labels), and the measured conditions of each phase pair.

use indexmap::IndexMap;
use serde::Serialize;

use crate::figure::{Figure, Stat};
use crate::metrics::conditions::{ConditionChange, Conditions, changes};
use crate::report::model::figure_path::FigurePath;
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
    let (Some(b), Some(n)) = (&base.work_sha256, &new.work_sha256) else {
        return None;
    };
    (b != n).then(|| RefusedPhase {
        phase: new.phase.clone(),
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

/// A run's provenance as flat labels: the tool, the client host, the plan's commit, each
/// server as it stated itself, and the plan's `metadata` (what the history's provenance
/// changes can be read from too).
pub fn provenance_labels(r: &Report) -> IndexMap<String, String> {
    let mut out = IndexMap::new();
    out.insert("servebench version".into(), r.tool.version.clone());
    out.insert("host".into(), r.host.hostname.clone());
    out.insert("host os".into(), format!("{} {}", r.host.os, r.host.arch));
    out.insert("host cpus".into(), r.host.cpus.to_string());
    if let Some(cpu) = &r.host.cpu_model {
        out.insert("host cpu".into(), cpu.clone());
    }
    if let Some(kernel) = &r.host.kernel {
        out.insert("host kernel".into(), kernel.clone());
    }
    let Some(p) = &r.provenance else {
        add_metadata(r, &mut out);
        return out;
    };
    if let Some(repo) = &p.repository {
        let dirty = if repo.dirty { " (dirty)" } else { "" };
        out.insert("plan commit".into(), format!("{}{dirty}", repo.commit));
    }
    for s in &p.servers {
        let t = &s.target;
        for (what, value) in [
            ("model", &s.model),
            ("engine", &s.engine),
            ("engine version", &s.engine_version),
            ("server header", &s.server_header),
        ] {
            if let Some(v) = value {
                out.insert(format!("{t}: {what}"), v.clone());
            }
        }
        for (label, value) in &s.info {
            out.insert(format!("{t}: {label}"), value.clone());
        }
    }
    add_metadata(r, &mut out);
    out
}

fn add_metadata(r: &Report, out: &mut IndexMap<String, String>) {
    for (key, value) in &r.metadata {
        let shown = match value {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.insert(format!("metadata {key}"), shown);
    }
}

/// One phase's measured conditions in its run.
pub(super) fn phase_conditions(phase: &PhaseResult, run: &Report) -> Conditions {
    let mean = |figure| FigurePath::Dist(figure, Stat::Mean).value(phase);
    let server_queue_share = mean(Figure::ServerQueue)
        .zip(mean(Figure::E2e))
        .filter(|(_, e2e)| *e2e > 0.0)
        .map(|(queue_ms, e2e)| queue_ms / 1000.0 / e2e);
    let server_uptime_s = run.provenance.as_ref().and_then(|p| {
        p.servers
            .iter()
            .find(|s| s.target == phase.target)
            .and_then(|s| s.uptime_s)
    });
    Conditions {
        cached_token_ratio: phase.summary.cached_token_ratio,
        server_queue_share,
        server_uptime_s,
    }
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
