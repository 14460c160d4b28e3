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

pub mod tokenizer;

use std::net::SocketAddr;

/// A running simulator; dropping the handle does not stop it, `shutdown` does.
pub struct SimHandle {
    _private: (),
}

impl SimHandle {
    /// Stop accepting, close connections, and wait for the server task to end.
    pub async fn shutdown(self) {}
}

/// Start a simulator on `127.0.0.1:0`.
pub async fn serve(config: SimConfig) -> std::io::Result<(SocketAddr, SimHandle)> {
    let _ = config;
    unimplemented!("lands with the simulator issue")
}
