//! The embedded OpenAI-compatible simulator: latency model, prefix cache, faults, `/metrics`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Simulator settings, as a plan's `simulator:` target section or `servebench sim --config`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Seed for jitter, natural output lengths and fault draws.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}
