//! Phase hooks: actions run before, during and after a phase (cache resets, health waits,
//! pauses, fault switches, programs), as plans write them and as one typed action each.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::duration::HumanDuration;
use super::schema::Issue;
use super::{Phase, Plan};

/// One action run before, during or after a phase. Exactly one of `http`,
/// `reset_prefix_cache`, `wait_healthy`, `sleep`, `exec`, `fault_on` and `fault_off` is set.
// Plans write the action as one key of [`HookFields`]; read, it is the one [`HookAction`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "HookFields", into = "HookFields")]
pub struct Hook {
    pub action: HookAction,
    /// Name of the instant this action finished (see [`HookFields::mark`]).
    pub mark: Option<String>,
    /// For `during` actions only: when to run, from the start of the measured window.
    pub at: Option<HumanDuration>,
    /// Longest the action may take (default 30s).
    pub timeout: Option<HumanDuration>,
    pub on_failure: OnFailure,
}

/// What a hook does.
#[derive(Debug, Clone, PartialEq)]
pub enum HookAction {
    /// Send one HTTP request and check its status.
    Http(HttpHook),
    /// `POST /reset_prefix_cache` on the phase's target.
    ResetPrefixCache,
    /// Poll a URL until it answers 2xx.
    WaitHealthy(WaitHealthy),
    /// Pause.
    Sleep(HumanDuration),
    /// Run a local program: `[program, args...]`.
    Exec(Vec<String>),
    /// `POST /sim/faults` on the phase's target with this rule.
    FaultOn(crate::sim::SimFault),
    /// `DELETE /sim/faults` on the phase's target.
    FaultOff,
}

impl HookAction {
    /// The plan key that writes this action.
    pub fn name(&self) -> &'static str {
        match self {
            HookAction::Http(_) => "http",
            HookAction::ResetPrefixCache => "reset_prefix_cache",
            HookAction::WaitHealthy(_) => "wait_healthy",
            HookAction::Sleep(_) => "sleep",
            HookAction::Exec(_) => "exec",
            HookAction::FaultOn(_) => "fault_on",
            HookAction::FaultOff => "fault_off",
        }
    }
}

/// A hook as plans write it: one optional field per action, of which exactly one is set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookFields {
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

impl HookFields {
    /// The actions this hook sets, in [`HOOK_ACTIONS`] order; a valid hook sets exactly one.
    fn into_actions(self) -> Vec<HookAction> {
        let HookFields {
            http,
            reset_prefix_cache,
            wait_healthy,
            sleep,
            exec,
            fault_on,
            fault_off,
            ..
        } = self;
        [
            http.map(HookAction::Http),
            reset_prefix_cache.then_some(HookAction::ResetPrefixCache),
            wait_healthy.map(HookAction::WaitHealthy),
            sleep.map(HookAction::Sleep),
            exec.map(HookAction::Exec),
            fault_on.map(HookAction::FaultOn),
            fault_off.then_some(HookAction::FaultOff),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

impl TryFrom<HookFields> for Hook {
    type Error = String;

    fn try_from(mut fields: HookFields) -> Result<Hook, String> {
        let (mark, at, timeout, on_failure) = (
            fields.mark.take(),
            fields.at,
            fields.timeout,
            fields.on_failure,
        );
        let mut actions = fields.into_actions();
        if actions.len() != 1 {
            // `validate` reports these with their place first ([`action_issues`]).
            return Err(format!(
                "a hook needs exactly one of {HOOK_ACTIONS} ({} given)",
                actions.len()
            ));
        }
        Ok(Hook {
            action: actions.remove(0),
            mark,
            at,
            timeout,
            on_failure,
        })
    }
}

impl From<Hook> for HookFields {
    fn from(hook: Hook) -> HookFields {
        let mut fields = HookFields {
            mark: hook.mark,
            at: hook.at,
            timeout: hook.timeout,
            on_failure: hook.on_failure,
            ..HookFields::default()
        };
        match hook.action {
            HookAction::Http(http) => fields.http = Some(http),
            HookAction::ResetPrefixCache => fields.reset_prefix_cache = true,
            HookAction::WaitHealthy(wait) => fields.wait_healthy = Some(wait),
            HookAction::Sleep(sleep) => fields.sleep = Some(sleep),
            HookAction::Exec(command) => fields.exec = Some(command),
            HookAction::FaultOn(rule) => fields.fault_on = Some(rule),
            HookAction::FaultOff => fields.fault_off = true,
        }
        fields
    }
}

impl Hook {
    /// A hook that runs `action` with every shared setting at its default.
    pub fn new(action: HookAction) -> Hook {
        Hook {
            action,
            mark: None,
            at: None,
            timeout: None,
            on_failure: OnFailure::default(),
        }
    }

    /// The instant's name this action marks, if any: its `mark`, else `fault-on`/`fault-off`
    /// for the fault switches.
    pub fn mark_name(&self) -> Option<&str> {
        match (&self.mark, &self.action) {
            (Some(mark), _) => Some(mark),
            (None, HookAction::FaultOn(_)) => Some(MARK_FAULT_ON),
            (None, HookAction::FaultOff) => Some(MARK_FAULT_OFF),
            (None, _) => None,
        }
    }
}

/// When a phase runs a hook: the list of the phase that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HookWhen {
    Before,
    During,
    After,
}

impl HookWhen {
    /// In the order a phase runs them.
    pub const ALL: [HookWhen; 3] = [HookWhen::Before, HookWhen::During, HookWhen::After];

    /// The phase's key for this list, as reports write it too.
    pub fn as_str(self) -> &'static str {
        match self {
            HookWhen::Before => "before",
            HookWhen::During => "during",
            HookWhen::After => "after",
        }
    }
}

impl std::fmt::Display for HookWhen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A phase's list of hooks for `when`.
fn hooks_of(phase: &Phase, when: HookWhen) -> &[Hook] {
    match when {
        HookWhen::Before => &phase.before,
        HookWhen::During => &phase.during,
        HookWhen::After => &phase.after,
    }
}

/// Every hook of the plan: (phase index, when it runs, hook index, hook).
fn every_hook(plan: &Plan) -> impl Iterator<Item = (usize, HookWhen, usize, &Hook)> {
    plan.phases.iter().enumerate().flat_map(|(p, phase)| {
        HookWhen::ALL.into_iter().flat_map(move |when| {
            hooks_of(phase, when)
                .iter()
                .enumerate()
                .map(move |(h, hook)| (p, when, h, hook))
        })
    })
}

/// Every hook sets exactly one action: one located issue per hook of the concrete document
/// that sets none or several. Read from the document, before the typed plan, in which a
/// [`Hook`] can hold only one action.
pub fn action_issues(doc: &Value) -> Vec<Issue> {
    let mut issues = Vec::new();
    let phases = doc.get("phases").and_then(Value::as_array);
    for (p, phase) in phases.into_iter().flatten().enumerate() {
        for when in HookWhen::ALL {
            let hooks = phase.get(when.as_str()).and_then(Value::as_array);
            for (h, hook) in hooks.into_iter().flatten().enumerate() {
                // A hook of another shape is left for the typed read to report.
                let Ok(fields) = HookFields::deserialize(hook) else {
                    continue;
                };
                let actions = fields.into_actions();
                let names: Vec<&str> = actions.iter().map(HookAction::name).collect();
                let message = match names.as_slice() {
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
        }
    }
    issues
}

/// `at` belongs to `during` actions, and every `during` action needs one: one located issue
/// per action that breaks that.
pub fn timing_issues(plan: &Plan) -> Vec<Issue> {
    let mut issues = Vec::new();
    for (p, phase) in plan.phases.iter().enumerate() {
        for when in [HookWhen::Before, HookWhen::After] {
            for (h, hook) in hooks_of(phase, when).iter().enumerate() {
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

/// Every `exec` action of the plan: (phase index, when it runs, hook index, command).
pub fn exec_hooks(plan: &Plan) -> Vec<(usize, HookWhen, usize, &[String])> {
    every_hook(plan)
        .filter_map(|(p, when, h, hook)| match &hook.action {
            HookAction::Exec(command) => Some((p, when, h, command.as_slice())),
            _ => None,
        })
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_action_reads_from_its_key_and_writes_back_the_same() {
        let written = [
            (json!({"http": {"url": "http://127.0.0.1:1/x"}}), "http"),
            (json!({"reset_prefix_cache": true}), "reset_prefix_cache"),
            (
                json!({"wait_healthy": {"url": "http://127.0.0.1:1/health"}}),
                "wait_healthy",
            ),
            (json!({"sleep": "2s", "on_failure": "warn"}), "sleep"),
            (
                json!({"exec": ["./reset.sh", "--all"], "timeout": "5s"}),
                "exec",
            ),
            (
                json!({"fault_on": {"kind": "status", "status": 503}, "at": "1s"}),
                "fault_on",
            ),
            (json!({"fault_off": true, "mark": "back"}), "fault_off"),
        ];
        for (value, name) in written {
            let hook: Hook = serde_json::from_value(value.clone()).expect("reads");
            assert_eq!(hook.action.name(), name);
            let mut back = serde_json::to_value(&hook).expect("writes");
            // `on_failure` is always written; the plan may leave it out.
            if value.get("on_failure").is_none() {
                assert_eq!(back["on_failure"], "fail");
                back.as_object_mut().unwrap().remove("on_failure");
            }
            assert_eq!(back, value);
        }
    }

    #[test]
    fn a_false_switch_is_no_action() {
        let hook: Hook =
            serde_json::from_value(json!({"sleep": "1s", "reset_prefix_cache": false})).unwrap();
        assert_eq!(
            hook.action,
            HookAction::Sleep(HumanDuration(std::time::Duration::from_secs(1)))
        );
        let none = serde_json::from_value::<Hook>(json!({"fault_off": false, "timeout": "5s"}));
        assert!(none.unwrap_err().to_string().contains("(0 given)"));
    }

    #[test]
    fn the_fault_switches_mark_themselves_unless_told_otherwise() {
        let on = |mark: Option<&str>| Hook {
            mark: mark.map(str::to_string),
            ..Hook::new(HookAction::FaultOff)
        };
        assert_eq!(on(None).mark_name(), Some(MARK_FAULT_OFF));
        assert_eq!(on(Some("back")).mark_name(), Some("back"));
        assert_eq!(Hook::new(HookAction::ResetPrefixCache).mark_name(), None);
    }

    #[test]
    fn hooks_with_no_action_or_several_are_found_in_the_document() {
        let doc = json!({"phases": [
            {"before": [{"sleep": "1s"}, {"timeout": "5s"}]},
            {"during": [{"at": "1s", "fault_off": true}],
             "after": [{"sleep": "1s", "reset_prefix_cache": true, "fault_off": false}]},
        ]});
        let issues = action_issues(&doc);
        let found: Vec<(&str, &str)> = issues
            .iter()
            .map(|i| (i.pointer.as_str(), i.message.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("/phases/0/before/1", "this hook has no action"),
                (
                    "/phases/1/after/0",
                    "this hook has 2 actions (reset_prefix_cache, sleep); each hook runs exactly one"
                ),
            ]
        );
    }
}
