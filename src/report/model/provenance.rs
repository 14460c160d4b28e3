//! Where a run came from, beyond its plan: the plan's repository, the client machine, each
//! server as it states itself, and the salt its prompts carried. Compare and the results
//! history diff these; a different asked-for work (`PhaseResult::work_sha256`) refuses a
//! side-by-side, a different engine version or host is shown.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
