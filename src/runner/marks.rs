//! A phase's marked instants: its `during` actions run at their offsets into the measured
//! window, the marks of all its actions collected, and the recovery around fault marks.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::metrics::recovery::{self, RecoverySample, RecoverySettings};
use crate::plan::{Hook, MARK_FAULT_OFF, MARK_FAULT_ON};
use crate::report::{HookOutcome, PhaseMark, PhaseResult};

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
        let failure = run_hooks("during", std::slice::from_ref(hook), ctx, &mut run.outcomes).await;
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
        when: "during".into(),
        action: format!("at {at:.3}s"),
        outcome: "skipped".into(),
        detail: if window_ended {
            "the measured window ended first".into()
        } else {
            "an earlier action failed".into()
        },
        mark: hook.mark_name().map(str::to_string),
        ..HookOutcome::default()
    }
}

/// The `during` actions' marks, at offsets from the measured window's `origin`.
pub(super) fn during_marks(run: &DuringRun, origin: Instant) -> Vec<PhaseMark> {
    run.marks
        .iter()
        .map(|(name, at)| PhaseMark {
            name: name.clone(),
            offset_s: offset_s(*at, origin),
            when: "during".into(),
        })
        .collect()
}

/// The message of a `during` action that failed the run, if one did.
pub(super) fn during_failure(result: &PhaseResult) -> Option<String> {
    result
        .hooks
        .iter()
        .find(|h| h.when == "during" && h.outcome == "failed")
        .map(|h| format!("during hook `{}` failed: {}", h.action, h.detail))
}

/// Seconds from `origin` to `at`, negative when `at` came first.
pub(super) fn offset_s(at: Instant, origin: Instant) -> f64 {
    match at.checked_duration_since(origin) {
        Some(after) => after.as_secs_f64(),
        None => -origin.duration_since(at).as_secs_f64(),
    }
}

/// Add the marks of the phase's `before`/`after` actions (its hooks are in place by now) and
/// measure recovery when it has a `fault-on` mark; `previous` is the phase run before it.
pub(super) fn finish(result: &mut PhaseResult, previous: Option<&PhaseResult>) {
    let length = (result.end_offset_seconds - result.start_offset_seconds).max(0.0);
    for hook in &result.hooks {
        let offset_s = match hook.when.as_str() {
            "before" => 0.0,
            "after" => length,
            _ => continue,
        };
        if let Some(name) = &hook.mark {
            result.marks.push(PhaseMark {
                name: name.clone(),
                offset_s,
                when: hook.when.clone(),
            });
        }
    }
    result
        .marks
        .sort_by(|a, b| a.offset_s.total_cmp(&b.offset_s));
    let find = |name: &str, from: f64| {
        result
            .marks
            .iter()
            .find(|m| m.name == name && m.offset_s >= from)
            .map(|m| m.offset_s)
    };
    let Some(on) = find(MARK_FAULT_ON, f64::NEG_INFINITY) else {
        return;
    };
    let off = find(MARK_FAULT_OFF, on);
    let baseline = previous.and_then(|p| recovery::baseline(&samples(p), "previous phase"));
    result.recovery = recovery::recovery(
        &samples(result),
        on,
        off,
        baseline,
        RecoverySettings::default(),
    );
    if result.recovery.is_none() {
        eprintln!(
            "warning: phase `{}`: no baseline for recovery (fewer than {} requests before the fault-on mark, and no previous phase with as many)",
            result.phase,
            recovery::MIN_BASELINE_REQUESTS
        );
    }
}

fn samples(phase: &PhaseResult) -> Vec<RecoverySample> {
    phase
        .request_timings
        .iter()
        .map(|r| RecoverySample {
            start_s: r.start_offset_ms / 1e3,
            ok: r.is_ok(),
            ttft_ms: r.ttft_ms,
        })
        .collect()
}
