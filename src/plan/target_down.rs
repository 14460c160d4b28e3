//! `on_target_down: {then: fail | wait | continue, wait_up_to: 1m}`: what a phase does once
//! its target is down (no success for 2 s and at least 3 connections in a row that reached
//! no server).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::HumanDuration;
use super::schema::Issue;

/// How long `then: wait` waits for the target by default.
pub const DEFAULT_WAIT_UP_TO: Duration = Duration::from_secs(60);

/// What a phase does when its target goes down.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OnTargetDown {
    /// `fail` (default): end the phase and the run; `wait`: probe one request at a time and
    /// resume when the target answers within `wait_up_to`, else fail; `continue`: keep
    /// sending, backing off.
    #[serde(default)]
    pub then: DownAction,
    /// With `then: wait`: how long to wait for the target (default 1m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_up_to: Option<HumanDuration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DownAction {
    #[default]
    Fail,
    Wait,
    Continue,
}

/// A phase's settled choice, as the scheduler acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DownPolicy {
    Fail,
    /// Wait this long for the target to answer again.
    Wait(Duration),
    Continue,
}

impl DownPolicy {
    /// The plan's choice; a phase that expects errors keeps sending unless it says otherwise.
    pub fn of(on: Option<&OnTargetDown>, expect_errors: bool) -> DownPolicy {
        match on {
            None if expect_errors => DownPolicy::Continue,
            None => DownPolicy::Fail,
            Some(on) => match on.then {
                DownAction::Fail => DownPolicy::Fail,
                DownAction::Continue => DownPolicy::Continue,
                DownAction::Wait => {
                    DownPolicy::Wait(on.wait_up_to.map_or(DEFAULT_WAIT_UP_TO, |d| d.0))
                }
            },
        }
    }
}

impl OnTargetDown {
    /// `wait_up_to` belongs to `then: wait`, and must be a positive time.
    pub fn check(&self, p: &str, issues: &mut Vec<Issue>) {
        let Some(up_to) = &self.wait_up_to else {
            return;
        };
        let at = format!("{p}/on_target_down/wait_up_to");
        if self.then != DownAction::Wait {
            issues.push(
                Issue::new(at, "`wait_up_to` only applies to `then: wait`")
                    .hint(Some("set `then: wait`, or leave `wait_up_to` out".into())),
            );
        } else if up_to.0.is_zero() {
            issues.push(Issue::new(at, "`wait_up_to` must be longer than zero"));
        } else if up_to.0.as_secs() > super::limits::MAX_PHASE_DURATION_S {
            issues.push(Issue::new(
                at,
                format!(
                    "{:.1} days is longer than the limit of 30 days",
                    up_to.0.as_secs_f64() / 86_400.0
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_follows_the_plan_and_expect_errors() {
        let on = |then, wait_up_to: Option<u64>| OnTargetDown {
            then,
            wait_up_to: wait_up_to.map(|s| HumanDuration(Duration::from_secs(s))),
        };
        assert_eq!(DownPolicy::of(None, false), DownPolicy::Fail);
        assert_eq!(DownPolicy::of(None, true), DownPolicy::Continue);
        let fail = on(DownAction::Fail, None);
        assert_eq!(DownPolicy::of(Some(&fail), true), DownPolicy::Fail);
        assert_eq!(
            DownPolicy::of(Some(&on(DownAction::Wait, None)), false),
            DownPolicy::Wait(DEFAULT_WAIT_UP_TO)
        );
        assert_eq!(
            DownPolicy::of(Some(&on(DownAction::Wait, Some(5))), false),
            DownPolicy::Wait(Duration::from_secs(5))
        );
        let mut issues = Vec::new();
        on(DownAction::Continue, Some(5)).check("/phases/0", &mut issues);
        on(DownAction::Wait, Some(0)).check("/phases/1", &mut issues);
        on(DownAction::Wait, Some(5)).check("/phases/2", &mut issues);
        let pointers: Vec<&str> = issues.iter().map(|i| i.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "/phases/0/on_target_down/wait_up_to",
                "/phases/1/on_target_down/wait_up_to"
            ]
        );
    }
}
