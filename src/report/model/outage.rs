//! A phase's target outages: each spell the target could not be reached, and the one that
//! ended the phase, if one did.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One spell of the target being down: from the first request that reached no server to the
/// first answer after it. Seconds from the phase's measured start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TargetOutage {
    /// The spell's first request that reached no server.
    pub from_s: f64,
    /// When it counted as down (2 s without a success, 3 failures in a row).
    pub down_at_s: f64,
    /// The first answer after it; absent when none came before the phase ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_s: Option<f64>,
    /// `until_s − from_s`: how long the target took to answer again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered_after_s: Option<f64>,
    /// Why it was not reached, in words: `connection refused`, …
    pub cause: String,
}

impl TargetOutage {
    /// `down 3.1–5.4 s (connection refused), answered again after 2.3 s`.
    pub fn describe(&self) -> String {
        match (self.until_s, self.recovered_after_s) {
            (Some(until), Some(after)) => format!(
                "down {:.1}–{until:.1} s ({}), answered again after {after:.1} s",
                self.from_s, self.cause
            ),
            _ => format!(
                "down from {:.1} s ({}), no answer after it",
                self.from_s, self.cause
            ),
        }
    }
}
