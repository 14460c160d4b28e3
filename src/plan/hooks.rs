//! Phase hooks: actions run before and after a phase (cache resets, health waits, pauses).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Plan;
use super::duration::HumanDuration;
use super::schema::Issue;

/// One action run before, during or after a phase. Exactly one of `http`,
/// `reset_prefix_cache`, `wait_healthy`, `sleep`, `exec`, `fault_on` and `fault_off` is set.
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
    /// Switch a simulator fault on: `POST /sim/faults` on the phase's target with this rule
    /// (replacing any switched before). Marks `fault-on` unless `mark` says otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_on: Option<crate::sim::SimFault>,
    /// Switch the simulator's faults off again: `DELETE /sim/faults` on the phase's target.
    /// Marks `fault-off` unless `mark` says otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fault_off: bool,
    /// Name the instant this action finished, e.g. `fault-on`: the report draws it on the
    /// phase's timeline, and measures recovery from `fault-on` and `fault-off` marks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
    /// For `during` actions only: when to run, from the start of the measured window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<HumanDuration>,
    /// Longest the action may take (default 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
    /// What a failing action does: end the run (`fail`, the default) or only warn.
    #[serde(default)]
    pub on_failure: OnFailure,
}

/// Mark names the recovery measurement reads.
pub const MARK_FAULT_ON: &str = "fault-on";
pub const MARK_FAULT_OFF: &str = "fault-off";

/// The action fields of a hook, in the order their names are listed.
pub const HOOK_ACTIONS: &str =
    "http, reset_prefix_cache, wait_healthy, sleep, exec, fault_on, fault_off";

impl Hook {
    /// The names of the actions this hook sets; a valid hook sets exactly one.
    pub fn actions(&self) -> Vec<&'static str> {
        [
            ("http", self.http.is_some()),
            ("reset_prefix_cache", self.reset_prefix_cache),
            ("wait_healthy", self.wait_healthy.is_some()),
            ("sleep", self.sleep.is_some()),
            ("exec", self.exec.is_some()),
            ("fault_on", self.fault_on.is_some()),
            ("fault_off", self.fault_off),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }

    /// The instant's name this action marks, if any: its `mark`, else `fault-on`/`fault-off`
    /// for the fault switches.
    pub fn mark_name(&self) -> Option<&str> {
        match (&self.mark, &self.fault_on, self.fault_off) {
            (Some(mark), _, _) => Some(mark),
            (None, Some(_), _) => Some(MARK_FAULT_ON),
            (None, None, true) => Some(MARK_FAULT_OFF),
            (None, None, false) => None,
        }
    }
}

/// Every hook of the plan: (phase index, `before`/`during`/`after`, hook index, hook).
fn every_hook(plan: &Plan) -> impl Iterator<Item = (usize, &'static str, usize, &Hook)> {
    plan.phases.iter().enumerate().flat_map(|(p, phase)| {
        [
            ("before", &phase.before),
            ("during", &phase.during),
            ("after", &phase.after),
        ]
        .into_iter()
        .flat_map(move |(when, hooks)| {
            hooks
                .iter()
                .enumerate()
                .map(move |(h, hook)| (p, when, h, hook))
        })
    })
}

/// Every hook sets exactly one action: one located issue per hook that sets none or several.
pub fn action_issues(plan: &Plan) -> Vec<Issue> {
    let mut issues = Vec::new();
    for (p, when, h, hook) in every_hook(plan) {
        let actions = hook.actions();
        let message = match actions.as_slice() {
            [_] => continue,
            [] => "this hook has no action".to_string(),
            several => format!(
                "this hook has {} actions ({}); each hook runs exactly one",
                several.len(),
                several.join(", ")
            ),
        };
        issues.push(
            Issue::new(format!("/phases/{p}/{when}/{h}"), message).hint(Some(format!(
                "give it one of {HOOK_ACTIONS}; list several hooks for several actions"
            ))),
        );
    }
    issues
}

/// `at` belongs to `during` actions, and every `during` action needs one: one located issue
/// per action that breaks that.
pub fn timing_issues(plan: &Plan) -> Vec<Issue> {
    let mut issues = Vec::new();
    for (p, phase) in plan.phases.iter().enumerate() {
        for (when, hooks) in [("before", &phase.before), ("after", &phase.after)] {
            for (h, hook) in hooks.iter().enumerate() {
                if hook.at.is_some() {
                    issues.push(
                        Issue::new(
                            format!("/phases/{p}/{when}/{h}/at"),
                            format!("`at` is for `during` actions; a `{when}` action runs {when} the phase"),
                        )
                        .at_key()
                        .hint(Some("move the action to the phase's `during` list".into())),
                    );
                }
            }
        }
        for (h, hook) in phase.during.iter().enumerate() {
            if hook.at.is_none() {
                issues.push(
                    Issue::new(
                        format!("/phases/{p}/during/{h}"),
                        "a `during` action needs `at`: when to run, from the measured start",
                    )
                    .hint(Some("e.g. `at: 10s`".into())),
                );
            }
        }
    }
    issues
}

/// Every `exec` action of the plan: (phase index, `before`/`during`/`after`, hook index, command).
pub fn exec_hooks(plan: &Plan) -> Vec<(usize, &'static str, usize, &[String])> {
    every_hook(plan)
        .filter_map(|(p, when, h, hook)| Some((p, when, h, hook.exec.as_deref()?)))
        .collect()
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
