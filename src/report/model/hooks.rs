//! What a phase's `before`, `during` and `after` actions did.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::plan::HookWhen;

/// What one `before`/`during`/`after` action of a phase did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookOutcome {
    /// The list the action was in.
    pub when: HookWhen,
    /// The action, e.g. `reset_prefix_cache POST http://…/reset_prefix_cache`.
    pub action: String,
    pub outcome: HookStatus,
    pub duration_ms: f64,
    /// Status, or the error.
    pub detail: String,
    /// An `exec` action's exit code (128 + the signal when a signal ended it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    /// An `exec` action's last lines of stdout and stderr, interleaved as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_tail: Vec<String>,
    /// The instant the action marked, if it marked one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
}

/// How an action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HookStatus {
    /// Succeeded.
    Ok,
    /// Failed, and ended the run (`on_failure: fail`).
    Failed,
    /// Failed, and the run went on (`on_failure: warn`).
    Warned,
    /// A `during` action not run: the measured window ended, or an earlier action failed.
    Skipped,
}

impl HookStatus {
    /// The word reports write.
    pub fn as_str(self) -> &'static str {
        match self {
            HookStatus::Ok => "ok",
            HookStatus::Failed => "failed",
            HookStatus::Warned => "warned",
            HookStatus::Skipped => "skipped",
        }
    }
}

impl std::fmt::Display for HookStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_read_and_write_the_words_reports_hold() {
        let text = r#"{"when":"during","action":"sleep 1.000s","outcome":"warned","duration_ms":1.5,"detail":"slept"}"#;
        let outcome: HookOutcome = serde_json::from_str(text).expect("reads");
        assert_eq!(
            (outcome.when, outcome.outcome),
            (HookWhen::During, HookStatus::Warned)
        );
        assert_eq!(serde_json::to_string(&outcome).unwrap(), text);
        for status in [
            HookStatus::Ok,
            HookStatus::Failed,
            HookStatus::Warned,
            HookStatus::Skipped,
        ] {
            let word = serde_json::to_value(status).unwrap();
            assert_eq!(word, status.as_str());
        }
        let unknown = r#"{"when":"later","action":"a","outcome":"ok","duration_ms":0,"detail":""}"#;
        assert!(serde_json::from_str::<HookOutcome>(unknown).is_err());
    }
}
