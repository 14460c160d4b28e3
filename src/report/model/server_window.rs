//! How a phase's server figures were sampled during its measured window.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which scrapes a phase's gauge ranges come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GaugesFrom {
    /// The two scrapes just before and just after the window, when the server is idle: the
    /// range says little about the load.
    #[default]
    Edges,
    /// The samples taken during the window (`metrics_interval`): min, max and mean.
    Window,
}

impl GaugesFrom {
    pub fn is_edges(&self) -> bool {
        *self == GaugesFrom::Edges
    }
}

/// The scrapes taken during a measured window.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct WindowSampling {
    /// Seconds between samples asked for (the target's `metrics_interval`).
    pub interval_s: f64,
    /// Samples whose every endpoint answered: the ones the figures are taken from.
    pub samples: u64,
    /// Endpoint scrapes that failed (no answer, an error status, no samples): counted here and
    /// left out of the figures, never fatal.
    pub failed: u64,
    /// Why the first failed scrape failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    /// Seconds from the first sample to the last.
    pub span_s: f64,
    /// Generated tokens per second from the first sample to the last (the server's counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_tok_s: Option<f64>,
    /// The highest generated tokens per second between two successive samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_tok_s_peak: Option<f64>,
}
