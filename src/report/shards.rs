//! Report sections for sharded runs: a shard's identity, and a merged report's per-shard facts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::model::{HostFacts, ServerMetrics, WarmupResult};
use crate::metrics::Distribution;

/// Which part of a sharded run a report holds (`servebench run --shard I/N`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShardInfo {
    /// 0-based shard index.
    pub index: u32,
    /// Number of shards the plan was split into.
    pub count: u32,
    /// sha256 (hex) of the canonical JSON of the report's expanded `plan`: shards of one run
    /// share it.
    pub plan_sha256: String,
    /// `--start-at`, RFC 3339, when the shard started its phases at planned times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// Each phase's planned start and how late the shard began it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phase_starts: Vec<PlannedStart>,
}

/// A phase's planned start under `--start-at`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlannedStart {
    pub phase: String,
    /// RFC 3339: `start_at` plus the phase's planned offset.
    pub planned_at: String,
    /// How late the shard began the phase (its warmup, or its measured window when it has
    /// none), milliseconds; 0 when on time.
    pub late_ms: f64,
}

/// One shard of a merged report: where it ran and how its client kept up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MergedShard {
    pub index: u32,
    /// The shard report's path as given to `servebench merge`.
    pub file: String,
    pub run_id: String,
    pub host: HostFacts,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub partial: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    pub phases: Vec<ShardPhaseFacts>,
}

/// One phase as one shard ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShardPhaseFacts {
    pub phase: String,
    /// RFC 3339 of this shard's measured start.
    pub started_at: String,
    /// This shard's workers (closed loop).
    pub concurrency: Option<u32>,
    /// This shard's target rate (open loop).
    pub rate_rps: Option<f64>,
    pub requests: u64,
    pub errors: u64,
    pub warmup: WarmupResult,
    /// Open loop: how far this shard's sends lagged their schedule (client headroom).
    pub send_lag_ms: Option<Distribution>,
    /// Open loop: this shard's achieved rate over its target rate.
    pub achieved_rate_ratio: Option<f64>,
    /// Under `--start-at`: how late the shard began the phase, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_ms: Option<f64>,
    /// The shard's own scrape of the server's metrics around its phase.
    pub server_metrics: Option<ServerMetrics>,
}
