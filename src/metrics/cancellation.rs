//! Cancellations and the server's recovery from them: how many requests the client dropped on
//! purpose, and whether the server finished requests as fast after the first cancellation as
//! before it (an engine that leaks an aborted request's slot does not).
//!
//! Throughput is requests *finished* (run to their end or cancelled) per second, each counted
//! when it finished: it stays level when the server frees what a cancellation leaves behind
//! (open loop: it follows the arrivals; closed loop: it rises, cancelled requests being
//! shorter) and falls when capacity is lost. The window before runs from the first finish to
//! the first cancellation (the ramp at the phase's start finishes nothing); the window after,
//! from the first cancellation to the last finish. The after-window is flagged lower when it
//! falls short of the before-window by more than [`CAPACITY_TOLERANCE`] and by more than two
//! standard errors of the difference, counting finishes as Poisson (conservative for a closed
//! loop, whose finishes are more regular).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::client::RequestRecord;

/// Relative drop in finished requests per second tolerated before capacity counts as lost.
pub const CAPACITY_TOLERANCE: f64 = 0.2;
/// Fewest finished requests a window needs to be compared.
pub const MIN_WINDOW_REQUESTS: u64 = 10;

/// A stretch of the phase and how fast requests finished in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FinishWindow {
    /// Seconds from the phase's measured start.
    pub start_s: f64,
    pub end_s: f64,
    /// Requests that finished (completed or cancelled) in it.
    pub finished: u64,
    /// `finished / (end_s − start_s)`.
    pub finished_per_s: f64,
}

/// A phase's cancellations and what the server's throughput did after them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Cancellations {
    /// Requests the client dropped on purpose.
    pub cancelled: u64,
    /// `cancelled / requests`.
    pub share: f64,
    /// Mean output tokens a cancelled request received before it was dropped.
    pub mean_tokens_before_cancel: f64,
    /// The first cancellation, seconds from the phase's measured start.
    pub first_cancel_s: f64,
    /// From the first finish to the first cancellation; absent when too few requests finished
    /// in it (cancellations from the phase's start leave no baseline: see `cancel.from`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<FinishWindow>,
    /// From the first cancellation to the last finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<FinishWindow>,
    /// `after.finished_per_s / before.finished_per_s − 1`, when both windows count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<f64>,
    /// The server finished requests more slowly after the cancellations began, beyond the
    /// tolerance and the noise: it did not recover its capacity.
    pub capacity_lost: bool,
    /// The server's own count of aborted requests over the phase (vLLM's
    /// `vllm:request_success_total{finished_reason="abort"}`), when its `/metrics` has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_aborted: Option<f64>,
}

/// The finding for a phase's records (`scale` = requests ÷ records held, for a sampled
/// phase), or `None` when none was cancelled.
pub fn cancellations(
    records: &[RequestRecord],
    scale: f64,
    server_aborted: Option<f64>,
) -> Option<Cancellations> {
    let cancelled: Vec<&RequestRecord> = records.iter().filter(|r| r.is_cancelled()).collect();
    let first_cancel_s = cancelled.iter().map(|r| end_s(r)).min_by(f64::total_cmp)?;
    let count = cancelled.len() as u64;
    let tokens: u64 = cancelled.iter().filter_map(|r| r.output_tokens).sum();
    let finishes: Vec<f64> = records
        .iter()
        .filter(|r| r.error.is_none())
        .map(end_s)
        .collect();
    let first_finish = finishes.iter().copied().min_by(f64::total_cmp)?;
    let last_finish = finishes.iter().copied().max_by(f64::total_cmp)?;
    let window = |from_s: f64, to_s: f64, closed_end: bool| {
        let n = finishes
            .iter()
            .filter(|&&t| t >= from_s && (t < to_s || (closed_end && t <= to_s)))
            .count() as u64;
        let length_s = to_s - from_s;
        let finished = (n as f64 * scale).round() as u64;
        (finished >= MIN_WINDOW_REQUESTS && length_s > 0.0).then(|| FinishWindow {
            start_s: from_s,
            end_s: to_s,
            finished,
            finished_per_s: finished as f64 / length_s,
        })
    };
    let before = window(first_finish, first_cancel_s, false);
    let after = window(first_cancel_s, last_finish, true);
    let (change, capacity_lost) = match (&before, &after) {
        (Some(b), Some(a)) if b.finished_per_s > 0.0 => {
            let drop = b.finished_per_s - a.finished_per_s;
            let noise = 2.0 * (b.finished_per_s / span(b) + a.finished_per_s / span(a)).sqrt();
            let lost = drop > CAPACITY_TOLERANCE * b.finished_per_s && drop > noise;
            (Some(a.finished_per_s / b.finished_per_s - 1.0), lost)
        }
        _ => (None, false),
    };
    Some(Cancellations {
        cancelled: (count as f64 * scale).round() as u64,
        share: count as f64 / records.len() as f64,
        mean_tokens_before_cancel: tokens as f64 / count as f64,
        first_cancel_s,
        before,
        after,
        change,
        capacity_lost,
        server_aborted,
    })
}

/// When a record finished, seconds from the phase's measured start.
fn end_s(r: &RequestRecord) -> f64 {
    (r.start_offset_ms + r.e2e_ms) / 1e3
}

fn span(w: &FinishWindow) -> f64 {
    w.end_s - w.start_s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record started at `start_ms` that finished `e2e_ms` later, cancelled or not.
    fn record(index: u64, start_ms: f64, e2e_ms: f64, cancelled: bool) -> RequestRecord {
        RequestRecord {
            request_index: index,
            start_offset_ms: start_ms,
            e2e_ms,
            output_tokens: Some(if cancelled { 8 } else { 64 }),
            cancelled_ms: cancelled.then_some(e2e_ms),
            ..RequestRecord::default()
        }
    }

    /// `per_s` finishes a second from 0 to `split_s`, then `after_per_s` to `end_s`; every
    /// fifth request after `split_s` cancelled.
    fn phase(per_s: f64, split_s: f64, after_per_s: f64, end_s: f64) -> Vec<RequestRecord> {
        let before = (split_s * per_s).round() as u64;
        let after = ((end_s - split_s) * after_per_s).round() as u64;
        let mut records: Vec<RequestRecord> = (0..before)
            .map(|k| record(k, k as f64 / per_s * 1e3, 100.0, false))
            .collect();
        records.extend((0..after).map(|k| {
            let start_s = split_s + k as f64 / after_per_s;
            record(before + k, start_s * 1e3, 100.0, k % 5 == 0)
        }));
        records
    }

    #[test]
    fn a_level_server_is_not_flagged() {
        let c = cancellations(&phase(50.0, 2.0, 50.0, 6.0), 1.0, None).expect("cancelled");
        assert_eq!(c.cancelled, 40);
        assert!((c.share - 40.0 / 300.0).abs() < 1e-9, "{}", c.share);
        assert_eq!(c.mean_tokens_before_cancel, 8.0);
        let (b, a) = (c.before.as_ref().unwrap(), c.after.as_ref().unwrap());
        assert!((b.finished_per_s - 50.0).abs() < 2.0, "{b:?}");
        assert!((a.finished_per_s - 50.0).abs() < 2.0, "{a:?}");
        assert!(c.change.unwrap().abs() < 0.05);
        assert!(!c.capacity_lost);
    }

    #[test]
    fn half_the_throughput_after_is_flagged() {
        let c = cancellations(&phase(50.0, 2.0, 25.0, 6.0), 1.0, Some(20.0)).expect("cancelled");
        let change = c.change.expect("both windows");
        assert!((change + 0.5).abs() < 0.05, "{change}");
        assert!(c.capacity_lost);
        assert_eq!(c.server_aborted, Some(20.0));
    }

    #[test]
    fn a_drop_within_noise_or_tolerance_is_not_flagged() {
        // 10% lower: within the tolerance.
        let c = cancellations(&phase(50.0, 2.0, 45.0, 6.0), 1.0, None).unwrap();
        assert!(!c.capacity_lost);
        // Half as fast, but from a dozen requests each side: within the noise.
        let c = cancellations(&phase(6.0, 2.0, 3.0, 6.0), 1.0, None).unwrap();
        assert!(c.change.is_some_and(|c| c < -0.3));
        assert!(!c.capacity_lost, "{c:?}");
    }

    #[test]
    fn no_cancellation_no_finding_and_no_baseline_no_verdict() {
        assert_eq!(cancellations(&phase(50.0, 6.0, 50.0, 6.0), 1.0, None), None);
        let c = cancellations(&phase(50.0, 0.0, 25.0, 4.0), 1.0, None).unwrap();
        assert_eq!(c.before, None);
        assert_eq!((c.change, c.capacity_lost), (None, false));
    }
}
