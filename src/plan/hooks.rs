//! Phase hooks: actions run before and after a phase (cache resets, health waits, pauses).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::duration::HumanDuration;

/// One action run before or after a phase. Exactly one of `http`, `reset_prefix_cache`,
/// `wait_healthy` and `sleep` is set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Hook {
    /// Send one HTTP request and check its status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpHook>,
    /// `POST /reset_prefix_cache` (vLLM's path, also served by the simulator) on the
    /// phase's target.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reset_prefix_cache: bool,
    /// Poll a URL until it answers 2xx.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_healthy: Option<WaitHealthy>,
    /// Pause, e.g. to let a server settle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep: Option<HumanDuration>,
    /// Longest the action may take (default 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
    /// What a failing action does: end the run (`fail`, the default) or only warn.
    #[serde(default)]
    pub on_failure: OnFailure,
}

/// An HTTP request made by a hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpHook {
    /// Defaults to POST.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Where to send it.
    pub url: String,
    /// Request body, sent as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Extra request headers.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// Expected status; any 2xx when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_status: Option<u16>,
}

/// Poll `url` until it answers 2xx or `timeout` passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitHealthy {
    /// URL polled with GET.
    pub url: String,
    /// How long to keep polling (default: the hook's `timeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
}

/// What a failing hook does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// End the run (exit 3) with a partial report.
    #[default]
    Fail,
    /// Note the failure and go on.
    Warn,
}
