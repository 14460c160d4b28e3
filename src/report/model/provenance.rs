//! Where a run came from, beyond its plan: the plan's repository, the client machine, each
//! server as it states itself, and the salt its prompts carried. Compare and the results
//! history diff these; a different asked-for work (`PhaseResult::work_sha256`) refuses a
//! side-by-side, a different engine version or host is shown.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::figure_path::FigurePath;
use super::{PhaseResult, Report};
use crate::figure::{Figure, Stat};
use crate::metrics::conditions::Conditions;

/// The run's provenance.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Provenance {
    /// The git checkout the plan file is in, when it is in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<RepositoryState>,
    /// Each target the run used, as its server states itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ServerIdentity>,
    /// The salt the run's prompts carried, when any workload salted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salt: Option<String>,
}

/// The plan's repository at run time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepositoryState {
    /// `HEAD`'s commit id.
    pub commit: String,
    /// Uncommitted changes to tracked files.
    pub dirty: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
}

/// One target's server as it states itself; every field is what the server sent, absent
/// where it sends nothing.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ServerIdentity {
    pub target: String,
    /// The model the phases ask for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `vllm`, `sglang`, `llama.cpp`, `tgi`, `servebench-sim`, … (from `owned_by` in
    /// `/v1/models`, `/version` or the `Server` header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
    /// The `Server` response header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_header: Option<String>,
    /// Seconds the server had been up when the run started (`process_start_time_seconds`
    /// in `/metrics`), where it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime_s: Option<f64>,
    /// Configuration the server states in info series of `/metrics` (vLLM's
    /// `vllm:cache_config_info` labels, for instance), by label.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub info: IndexMap<String, String>,
}

/// How a phase's prompts were kept apart from other runs' in the server's prefix cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SaltUsed {
    /// The run's salt led every prompt's text (counted in its planned tokens).
    Text,
    /// The run's salt went in each request's `cache_salt` field; the text is the same in
    /// every run.
    CacheSalt,
    /// No salt: the prompts are byte-identical in every run of the plan, so a rerun may find
    /// them in the server's prefix cache.
    None,
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

/// Each shard's salt by index, when the shards of a merged report drew different ones (run
/// without one shared `--salt` or `--start-at`); empty when they shared one, or for a report
/// that is not a merge.
pub fn differing_shard_salts(r: &Report) -> Vec<(u32, Option<&str>)> {
    let Some(shards) = &r.merged_from else {
        return Vec::new();
    };
    let salts: Vec<(u32, Option<&str>)> = shards
        .iter()
        .map(|s| (s.index, s.salt.as_deref()))
        .collect();
    let shared = salts.windows(2).all(|pair| pair[0].1 == pair[1].1);
    if shared { Vec::new() } else { salts }
}

/// One phase's measured conditions in its run.
pub fn phase_conditions(phase: &PhaseResult, run: &Report) -> Conditions {
    // The latency split's means cover the same requests on one clock; the figures' means are
    // the fallback where a report has no split.
    let split = phase
        .transport
        .server_timing_gap
        .as_ref()
        .and_then(|gap| gap.split.as_ref())
        .and_then(|s| Some((s.server_queue_ms?, s.e2e_ms)))
        .filter(|(_, e2e_ms)| *e2e_ms > 0.0)
        .map(|(queue_ms, e2e_ms)| queue_ms / e2e_ms);
    let mean = |figure| FigurePath::Dist(figure, Stat::Mean).value(phase);
    let server_queue_share = split.or_else(|| {
        mean(Figure::ServerQueue)
            .zip(mean(Figure::E2e))
            .filter(|(_, e2e)| *e2e > 0.0)
            .map(|(queue_ms, e2e)| queue_ms / 1000.0 / e2e)
    });
    let server_uptime_s = run.provenance.as_ref().and_then(|p| {
        p.servers
            .iter()
            .find(|s| s.target == phase.header.target)
            .and_then(|s| s.uptime_s)
    });
    Conditions {
        cached_token_ratio: phase.summary.cached_token_ratio,
        server_queue_share,
        server_uptime_s,
        late_share: phase
            .client_trust
            .as_ref()
            .and_then(|t| t.load.late_wake_share),
    }
}
