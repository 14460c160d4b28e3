//! Open loop: requests start at scheduled arrival times, whatever the responses do.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::arrivals::ArrivalGaps;
use super::{Executor, InFlight, PromptFeed, WindowContext};
use crate::plan::Arrival;
use crate::workload::Prompt;

/// Arrival offsets from the window's origin: drawn gaps, or the prompts' own schedule.
pub(super) struct Arrivals {
    gaps: Option<ArrivalGaps>,
    next_offset_s: f64,
}

impl Arrivals {
    /// Seeded gaps drawn for the load model.
    pub(super) fn drawn(arrival: Arrival, rps: f64, burstiness: Option<f64>, seed: u64) -> Self {
        Arrivals {
            gaps: Some(ArrivalGaps::new(arrival, rps, burstiness, seed)),
            next_offset_s: 0.0,
        }
    }

    /// Each prompt's own `scheduled_at` (trace replay).
    pub(super) fn from_prompts() -> Self {
        Arrivals {
            gaps: None,
            next_offset_s: 0.0,
        }
    }

    /// The first request goes at offset zero; each later one a drawn gap after the previous.
    fn next_offset(&mut self, prompt: &Prompt) -> Duration {
        match &mut self.gaps {
            Some(gaps) => {
                let offset = self.next_offset_s;
                self.next_offset_s += gaps.next_gap_s();
                Duration::from_secs_f64(offset)
            }
            None => prompt
                .scheduled_at
                .unwrap_or(Duration::from_secs_f64(self.next_offset_s)),
        }
    }
}

pub(super) async fn start<E: Executor, F: PromptFeed>(
    ctx: &WindowContext<E, F>,
    mut arrivals: Arrivals,
    max_concurrency: Option<u32>,
    deadline: Option<Instant>,
    max_requests: Option<u64>,
    stop: &CancellationToken,
    precise: bool,
) -> InFlight {
    let slots = max_concurrency.map(|n| Arc::new(Semaphore::new(n as usize)));
    let mut tasks = tokio::task::JoinSet::new();
    let mut index = 0u64;
    loop {
        if max_requests.is_some_and(|max| index >= max) || ctx.abort.is_cancelled() {
            break;
        }
        // Build the prompt before waiting, so its cost never delays the send.
        let prompt = ctx.next_prompt();
        let offset = arrivals.next_offset(&prompt);
        let send_at = ctx.origin + offset;
        if deadline.is_some_and(|d| send_at >= d) {
            break;
        }
        tokio::select! {
            _ = pace_until(send_at, precise) => {}
            _ = stop.cancelled() => break,
        }
        // Waiting for a slot counts as send lag: client-side queueing stays visible.
        let permit = match &slots {
            Some(slots) => tokio::select! {
                permit = slots.clone().acquire_owned() => match permit {
                    Ok(permit) => Some(permit),
                    Err(_) => break,
                },
                _ = stop.cancelled() => break,
            },
            None => None,
        };
        while tasks.try_join_next().is_some() {}
        let task_ctx = ctx.clone_for_task();
        let scheduled_ms = offset.as_secs_f64() * 1e3;
        let request_index = index;
        tasks.spawn(async move {
            let mut record = task_ctx.send(request_index, prompt).await;
            drop(permit);
            record.scheduled_offset_ms = Some(scheduled_ms);
            record.send_lag_ms = Some(record.start_offset_ms - scheduled_ms);
            task_ctx.deliver(record);
        });
        index += 1;
    }
    ctx.bound_reached.cancel();
    InFlight { tasks }
}

/// Timer wheels fire on millisecond ticks, late by up to a tick; at 1,000+ req/s that is most of
/// a gap. So sleep to just short of the send time, then yield-spin to it.
async fn pace_until(send_at: Instant, precise: bool) {
    const SPIN_WINDOW: Duration = Duration::from_micros(1500);
    if !precise {
        tokio::time::sleep_until(send_at).await;
        return;
    }
    if let Some(coarse) = send_at.checked_sub(SPIN_WINDOW)
        && coarse > Instant::now()
    {
        tokio::time::sleep_until(coarse).await;
    }
    while Instant::now() < send_at {
        tokio::task::yield_now().await;
    }
}
