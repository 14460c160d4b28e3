//! Phase hooks: actions run before and after a phase (cache resets, health waits, pauses).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Plan;
use super::duration::HumanDuration;
use super::schema::Issue;

/// One action run before or after a phase. Exactly one of `http`, `reset_prefix_cache`,
/// `wait_healthy`, `sleep` and `exec` is set.
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
    /// Run a local program: `[program, args...]`, never through a shell, in the plan's
    /// directory. Allowed only with `--allow-exec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub exec: Option<Vec<String>>,
    /// Longest the action may take (default 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
    /// What a failing action does: end the run (`fail`, the default) or only warn.
    #[serde(default)]
    pub on_failure: OnFailure,
}

/// Every `exec` action of the plan: (phase index, `before`/`after`, hook index, command).
pub fn exec_hooks(plan: &Plan) -> Vec<(usize, &'static str, usize, &[String])> {
    let mut found = Vec::new();
    for (p, phase) in plan.phases.iter().enumerate() {
        for (when, hooks) in [("before", &phase.before), ("after", &phase.after)] {
            for (h, hook) in hooks.iter().enumerate() {
                if let Some(command) = &hook.exec {
                    found.push((p, when, h, command.as_slice()));
                }
            }
        }
    }
    found
}

/// A plan may run programs only when its user said so: one located refusal per `exec`
/// action, saying how to allow it.
pub fn exec_refusals(plan: &Plan) -> Vec<Issue> {
    exec_hooks(plan)
        .into_iter()
        .map(|(p, when, h, command)| {
            let program = command.first().map_or("", String::as_str);
            Issue::new(
                format!("/phases/{p}/{when}/{h}/exec"),
                format!(
                    "this hook runs the local program `{program}`, and running programs was not allowed"
                ),
            )
            .at_key()
            .hint(Some(
                "add `--allow-exec` to `run` (and to `validate`/`expand`) if you trust this plan"
                    .into(),
            ))
        })
        .collect()
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
