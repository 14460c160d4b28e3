//! What a capacity search reports: each probe's outcome (on its phase) and the search's result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::SearchLoad;

/// A probe phase's verdict against its search's objectives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeOutcome {
    /// The search phase this probe belongs to.
    pub search: String,
    /// The probed concurrency, or rate in req/s.
    pub load: f64,
    pub passed: bool,
    /// Open loop: requests completed at under 90% of the target rate (`n − 1` over the span
    /// of their end times), so the target fell behind the arrivals; a failure whatever the
    /// latencies.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub over_saturated: bool,
    /// Why it was named over-saturated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_saturated_why: Option<String>,
    /// Stopped before its planned end because it was over-saturated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped_early: bool,
    pub objectives: Vec<ObjectiveCheck>,
}

/// One objective of a probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ObjectiveCheck {
    /// e.g. `ttft.p99` (seconds) or `error_rate` (a fraction).
    pub objective: String,
    pub limit: f64,
    /// `None` when the probe produced no such figure (no successful request): a failure.
    pub value: Option<f64>,
    pub passed: bool,
}

/// A capacity search's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchResult {
    /// The search phase's name; its probes are `NAME/probe-1`, `NAME/probe-2`, ….
    pub phase: String,
    pub load: SearchLoad,
    /// The highest load that passed; `None` when `min` failed.
    pub capacity: Option<f64>,
    /// At the capacity probe: successful requests per second that met every latency
    /// objective's limit as a per-request bound.
    pub goodput: Option<f64>,
    /// Highest passing and lowest failing load.
    pub bracket: [Option<f64>; 2],
    /// `precision reached`, `max met`, `min failed`, `probe budget spent` or `interrupted`.
    pub stop_reason: String,
    pub probes: Vec<String>,
}
