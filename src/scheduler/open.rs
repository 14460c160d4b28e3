//! Open loop: requests start at scheduled arrival times, whatever the responses do.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::arrivals::{ArrivalGaps, Scheduled};
use super::outage::{Admit, Lanes};
use super::session::run_session;
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
    (arrivals, lanes): (Arrivals, Lanes),
    max_concurrency: Option<u32>,
    deadline: Option<Instant>,
    max_requests: Option<u64>,
    stop: &CancellationToken,
    precise: bool,
) -> InFlight {
    let pacer = Pacer {
        ctx: ctx.clone_for_task(),
        lanes: Arc::new(lanes),
        arrivals,
        slots: max_concurrency.map(|n| Arc::new(Semaphore::new(n as usize))),
        released_ms: None,
        deadline,
        max_requests,
        stop: stop.clone(),
    };
    if !precise {
        return pacer.run_on_timers().await;
    }
    // Timer wheels fire on millisecond ticks, and a runtime worker that spins instead takes a
    // core from the requests it paces. A thread of its own sleeps on the OS's fine timer and
    // spins only the last moment, so sends land within microseconds of their schedule.
    let handle = tokio::runtime::Handle::current();
    match tokio::task::spawn_blocking(move || pacer.run_on_thread(&handle)).await {
        Ok(in_flight) => in_flight,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Spin (rather than sleep) this close to a send: with 1 ns timer slack, a sleeping thread
/// usually wakes within this much of its deadline.
const SPIN_WINDOW: Duration = Duration::from_micros(50);
/// The longest sleep between checks for an interrupt.
const STOP_CHECK: Duration = Duration::from_millis(10);

/// The calling thread's timer slack at 1 ns (Linux adds 50 µs to every sleep by default), for
/// as long as this lives; a pool thread gets its default back.
struct FineTimerSlack;

const FINE_SLACK_NS: libc::c_ulong = 1;
/// PR_SET_TIMERSLACK's value for "the thread's default".
const DEFAULT_SLACK: libc::c_ulong = 0;

impl FineTimerSlack {
    fn set() -> FineTimerSlack {
        // SAFETY: PR_SET_TIMERSLACK takes an integer and touches only this thread's slack.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, FINE_SLACK_NS) };
        FineTimerSlack
    }
}

impl Drop for FineTimerSlack {
    fn drop(&mut self) {
        // SAFETY: as above; 0 restores the thread's default slack.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, DEFAULT_SLACK) };
    }
}

/// One open-loop window's sending side.
struct Pacer<E, F> {
    ctx: WindowContext<E, F>,
    /// The senders that back off from an unreachable target.
    lanes: Arc<Lanes>,
    arrivals: Arrivals,
    slots: Option<Arc<Semaphore>>,
    /// When the cap last released the pacer after a wait, milliseconds after the origin.
    released_ms: Option<f64>,
    deadline: Option<Instant>,
    max_requests: Option<u64>,
    stop: CancellationToken,
}

impl<E: Executor, F: PromptFeed> Pacer<E, F> {
    /// The next arrival's prompts (one request, or a session's turns from `index` on) and
    /// its offset, or `None` once the window's bound is reached.
    async fn next(&mut self, index: u64) -> Option<(Vec<(u64, Prompt)>, Duration)> {
        if self.max_requests.is_some_and(|max| index >= max) || self.ctx.abort.is_cancelled() {
            return None;
        }
        // Take the prompts before waiting, so a late one shows as send lag, not as a gap.
        let first = self.ctx.next_prompt().await;
        let offset = self.arrivals.next_offset(&first);
        let count = first
            .session
            .map_or(1, |s| s.turns.saturating_sub(s.turn).max(1) as u64);
        let mut prompts = vec![(index, first)];
        while (prompts.len() as u64) < count
            && self
                .max_requests
                .is_none_or(|max| index + (prompts.len() as u64) < max)
        {
            let next = index + prompts.len() as u64;
            prompts.push((next, self.ctx.next_prompt().await));
        }
        if self.deadline.is_some_and(|d| self.ctx.origin + offset >= d) {
            return None;
        }
        Some((prompts, offset))
    }

    /// Pacing on the runtime's timers (whole milliseconds; also tokio's paused test clock).
    async fn run_on_timers(mut self) -> InFlight {
        let mut tasks = JoinSet::new();
        let mut index = 0u64;
        while let Some((prompts, offset)) = self.next(index).await {
            tokio::select! {
                _ = tokio::time::sleep_until(self.ctx.origin + offset) => {}
                _ = self.stop.cancelled() => break,
            }
            let Some(lane) = self.lane() else {
                continue;
            };
            let Some((permit, waited)) = self.slot().await else {
                break;
            };
            if waited {
                self.released_ms = Some(self.ctx.origin.elapsed().as_secs_f64() * 1e3);
            }
            let arrival = self.arrival(offset);
            index += prompts.len() as u64;
            self.spawn(&mut tasks, prompts, (arrival, lane), permit, None);
        }
        self.ctx.bound_reached.cancel();
        InFlight { tasks }
    }

    /// Pacing on this (blocking) thread; requests run on `handle`'s runtime.
    fn run_on_thread(mut self, handle: &tokio::runtime::Handle) -> InFlight {
        let mut tasks = JoinSet::new();
        let mut index = 0u64;
        let origin = self.ctx.origin.into_std();
        let _slack = FineTimerSlack::set();
        while let Some((prompts, offset)) = handle.block_on(self.next(index)) {
            if !self.wait_until(origin + offset) {
                break;
            }
            let Some(lane) = self.lane() else {
                continue;
            };
            let Some((permit, waited)) = handle.block_on(self.slot()) else {
                break;
            };
            if waited {
                self.released_ms = Some(origin.elapsed().as_secs_f64() * 1e3);
            }
            let arrival = self.arrival(offset);
            index += prompts.len() as u64;
            self.spawn(&mut tasks, prompts, (arrival, lane), permit, Some(handle));
        }
        self.ctx.bound_reached.cancel();
        InFlight { tasks }
    }

    /// Block until `send_at`: sleep to just short of it, then spin. False when stopped first.
    fn wait_until(&self, send_at: std::time::Instant) -> bool {
        loop {
            if self.stop.is_cancelled() || self.ctx.abort.is_cancelled() {
                return false;
            }
            let now = std::time::Instant::now();
            let Some(left) = send_at.checked_duration_since(now).filter(|d| !d.is_zero()) else {
                return true;
            };
            if left > SPIN_WINDOW {
                std::thread::sleep((left - SPIN_WINDOW).min(STOP_CHECK));
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// The lane an arrival due now goes out on; `None` withholds it (not sent, not
    /// recorded) while every lane backs off from an unreachable target, or while a down
    /// target's one probe is out (`then: wait`).
    fn lane(&self) -> Option<usize> {
        let lane = match self.ctx.outage.admit() {
            Admit::Go => self.lanes.take(),
            // The probe goes whatever the lanes say; its answer settles no lane.
            Admit::Probe => Some(usize::MAX),
            Admit::Hold(_) => None,
        };
        if lane.is_none() {
            self.ctx.outage.withhold();
        }
        lane
    }

    /// A concurrency slot when the window caps concurrency, and whether the pacer had to
    /// wait for it. Waiting counts as send lag, so client-side queueing stays visible. `None`
    /// when stopped first.
    async fn slot(&self) -> Option<(Option<OwnedSemaphorePermit>, bool)> {
        let Some(slots) = &self.slots else {
            return Some((None, false));
        };
        if let Ok(permit) = slots.clone().try_acquire_owned() {
            return Some((Some(permit), false));
        }
        tokio::select! {
            permit = slots.clone().acquire_owned() => permit.ok().map(|p| (Some(p), true)),
            _ = self.stop.cancelled() => None,
        }
    }

    /// The arrival due at `offset`. Under a cap, the part of its lag the cap caused: the
    /// pacer sends in order, so an arrival due before the cap last released the pacer (for it
    /// or an earlier one) waited for the cap until then.
    fn arrival(&self, offset: Duration) -> Scheduled {
        let scheduled_ms = offset.as_secs_f64() * 1e3;
        Scheduled {
            scheduled_ms,
            slot_wait_ms: self.slots.is_some().then(|| {
                self.released_ms
                    .map_or(0.0, |released| (released - scheduled_ms).max(0.0))
            }),
        }
    }

    /// One arrival: a request, or a whole session that holds its concurrency slot until its
    /// last turn ends.
    fn spawn(
        &self,
        tasks: &mut JoinSet<()>,
        mut prompts: Vec<(u64, Prompt)>,
        (arrival, lane): (Scheduled, usize),
        permit: Option<OwnedSemaphorePermit>,
        handle: Option<&tokio::runtime::Handle>,
    ) {
        while tasks.try_join_next().is_some() {}
        let task_ctx = self.ctx.clone_for_task();
        let lanes = self.lanes.clone();
        let (stop, deadline) = (self.stop.clone(), self.deadline);
        let request = async move {
            if prompts[0].1.session.is_some() {
                let stopped = || {
                    stop.is_cancelled()
                        || task_ctx.abort.is_cancelled()
                        || deadline.is_some_and(|d| Instant::now() >= d)
                };
                let unreached =
                    run_session(&task_ctx, prompts, Some(arrival), &stopped, &stop).await;
                lanes.settle(lane, unreached);
                drop(permit);
                return;
            }
            let (request_index, prompt) = prompts.swap_remove(0);
            let mut record = task_ctx.send(request_index, prompt).await;
            drop(permit);
            lanes.settle(lane, record.unreached().is_some());
            arrival.stamp(&mut record);
            task_ctx.deliver(record);
        };
        match handle {
            Some(handle) => tasks.spawn_on(request, handle),
            None => tasks.spawn(request),
        };
    }
}
