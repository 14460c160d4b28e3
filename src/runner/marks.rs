//! A phase's `during` actions, run at their offsets into the measured window, and the
//! instants they marked.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::plan::{Hook, HookWhen};
use crate::report::{HookOutcome, HookStatus, PhaseMark};

use super::hooks::{HookContext, run_hooks};

/// What the `during` actions did, with the instant each finished.
#[derive(Default)]
pub(super) struct DuringRun {
    pub outcomes: Vec<HookOutcome>,
    /// (mark name, when its action finished).
    pub marks: Vec<(String, Instant)>,
    /// A failing `fail` action's message: the later actions are skipped.
    pub failure: Option<String>,
}

/// Run the `during` actions at their offsets from `base`, the measured window's start; actions
/// not yet due when `done` (the window ended) are skipped, and reported so.
pub(super) async fn run_during(
    hooks: &[Hook],
    ctx: &HookContext<'_>,
    base: Instant,
    done: &CancellationToken,
) -> DuringRun {
    let mut run = DuringRun::default();
    let mut order: Vec<&Hook> = hooks.iter().collect();
    order.sort_by_key(|h| h.at.map_or(Duration::ZERO, |at| at.0));
    for hook in order {
        let due = base + hook.at.map_or(Duration::ZERO, |at| at.0);
        let ended = tokio::select! {
            () = tokio::time::sleep_until(due.into()) => false,
            () = done.cancelled() => true,
        };
        if ended || run.failure.is_some() {
            run.outcomes.push(skipped(hook, ended));
            continue;
        }
        let one = std::slice::from_ref(hook);
        let failure = run_hooks(HookWhen::During, one, ctx, &mut run.outcomes).await;
        if let Some(name) = hook.mark_name() {
            run.marks.push((name.to_string(), Instant::now()));
        }
        run.failure = run.failure.or(failure);
    }
    run
}

fn skipped(hook: &Hook, window_ended: bool) -> HookOutcome {
    let at = hook.at.map_or(0.0, |at| at.as_secs_f64());
    HookOutcome {
        when: HookWhen::During,
        action: format!("at {at:.3}s"),
        outcome: HookStatus::Skipped,
        duration_ms: 0.0,
        detail: if window_ended {
            "the measured window ended first".into()
        } else {
            "an earlier action failed".into()
        },
        exit_status: None,
        output_tail: Vec::new(),
        mark: hook.mark_name().map(str::to_string),
    }
}

/// The `during` actions' marks, at offsets from the measured window's `origin`.
pub(super) fn during_marks(run: &DuringRun, origin: Instant) -> Vec<PhaseMark> {
    run.marks
        .iter()
        .map(|(name, at)| PhaseMark {
            name: name.clone(),
            offset_s: offset_s(*at, origin),
            when: HookWhen::During,
        })
        .collect()
}

/// The message of a `during` action that failed the run, if one did.
pub(super) fn during_failure(hooks: &[HookOutcome]) -> Option<String> {
    hooks
        .iter()
        .find(|h| h.when == HookWhen::During && h.outcome == HookStatus::Failed)
        .map(|h| format!("during hook `{}` failed: {}", h.action, h.detail))
}

/// Seconds from `origin` to `at`, negative when `at` came first.
pub(super) fn offset_s(at: Instant, origin: Instant) -> f64 {
    match at.checked_duration_since(origin) {
        Some(after) => after.as_secs_f64(),
        None => -origin.duration_since(at).as_secs_f64(),
    }
}
