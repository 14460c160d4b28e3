//! Running phases: closed loop, open loop, warmup, bounds, cancellation, progress.
//!
//! A phase runs as one or two *windows* (its warmup, then its measured window). A window
//! starts requests under one load model until its bound, then lets the in-flight ones finish
//! within the drain timeout. Requests go through an [`Executor`] (the HTTP client in a run, a
//! fake in unit tests) and every finished request is sent to the caller as a record.

pub mod arrivals;
mod busy;
mod closed;
pub mod live;
mod open;
pub mod outage;
pub mod progress;
pub mod rolling;
mod session;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant as StdInstant};

use tokio::time::Instant;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use busy::BusyPoll;

use crate::client::{Client, ErrorKind, RequestError, RequestRecord};
pub use crate::schedule::Load;
use crate::workload::{ChatMessage, Prompt, PromptQueue};

/// Sends one request and measures it. Never fails: failures are data in the record.
pub trait Executor: Send + Sync + 'static {
    /// `origin` is the window's start; the record's offsets are taken from it.
    fn execute(
        &self,
        request_index: u64,
        prompt: Prompt,
        origin: std::time::Instant,
    ) -> impl Future<Output = RequestRecord> + Send;

    /// One turn of a session: the record and the reply as an assistant message (its text and
    /// tool calls; empty where the executor keeps none).
    fn execute_turn(
        &self,
        request_index: u64,
        prompt: Prompt,
        origin: std::time::Instant,
    ) -> impl Future<Output = (RequestRecord, ChatMessage)> + Send {
        async move {
            let record = self.execute(request_index, prompt, origin).await;
            (record, ChatMessage::new("assistant", ""))
        }
    }
}

impl Executor for Client {
    async fn execute(&self, index: u64, prompt: Prompt, origin: StdInstant) -> RequestRecord {
        self.send_owned(index, prompt, origin).await
    }

    async fn execute_turn(
        &self,
        index: u64,
        prompt: Prompt,
        origin: StdInstant,
    ) -> (RequestRecord, ChatMessage) {
        self.send_turn(index, prompt, origin).await
    }
}

/// Where a window's prompts come from, in order. Taking one must be cheap: prompts are built
/// ahead, off the runtime threads that time requests ([`PromptQueue`]).
pub trait PromptFeed: Send + Sync + 'static {
    fn next_prompt(&self) -> impl Future<Output = Prompt> + Send;
}

impl PromptFeed for PromptQueue {
    async fn next_prompt(&self) -> Prompt {
        self.next().await
    }
}

/// Prompts a phase's queue keeps ready for this load: every closed-loop worker's next one, or
/// a quarter second of open-loop arrivals (the byte budget caps both for long prompts).
pub fn prompt_depth(load: &Load) -> usize {
    let depth = match load {
        Load::Closed { concurrency } => 2 * *concurrency as usize,
        Load::Open { rps, .. } => (rps / 4.0).ceil() as usize,
        Load::Replay => 256,
    };
    depth.clamp(16, 8192)
}

/// One window: a load model, its bounds and how long stragglers may take.
#[derive(Debug, Clone)]
pub struct WindowSpec {
    pub load: Load,
    /// Stop starting requests after this long.
    pub duration: Option<Duration>,
    /// Stop starting requests after this many.
    pub requests: Option<u64>,
    /// After the bound, in-flight requests get this long before they are cancelled.
    pub drain_timeout: Duration,
    /// Seed for arrival times.
    pub seed: u64,
    /// Open loop: spin the last moment before each send for sub-millisecond pacing. Off only
    /// where the clock is virtual (tokio's paused test clock never advances while spinning).
    pub precise_pacing: bool,
    /// What the window does once its target is down.
    pub on_down: crate::plan::DownPolicy,
}

/// Live counts a progress display reads while a window runs.
#[derive(Debug, Default)]
pub struct LiveCounters {
    pub started: AtomicU64,
    pub finished: AtomicU64,
}

impl LiveCounters {
    pub fn in_flight(&self) -> u64 {
        self.started
            .load(Ordering::Relaxed)
            .saturating_sub(self.finished.load(Ordering::Relaxed))
    }
}

/// How the caller stops a window early.
#[derive(Debug, Clone, Default)]
pub struct Stops {
    /// Stop starting new requests (first Ctrl-C).
    pub stop_starting: CancellationToken,
    /// Cancel in-flight requests now (drain timeout, or the grace after Ctrl-C ran out).
    pub abort_in_flight: CancellationToken,
}

/// What a window did.
#[derive(Debug)]
pub struct WindowOutcome {
    /// The instant every record's offsets are relative to.
    pub origin: std::time::Instant,
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// True when the window stopped before its bound (interrupted).
    pub interrupted: bool,
    /// Requests started.
    pub started: u64,
    /// Set when the window ended early because its target went down.
    pub target_down: Option<outage::TargetDown>,
    /// Every spell the target was down, recovered or not.
    pub outages: Vec<outage::OutageSpell>,
    /// Open-loop arrivals not sent while every sender backed off from an unreachable target.
    pub withheld: u64,
}

/// Run one window; records go to `records` as requests finish (in completion order).
pub async fn run_window<E: Executor, F: PromptFeed>(
    spec: &WindowSpec,
    executor: Arc<E>,
    feed: Arc<F>,
    records: mpsc::UnboundedSender<RequestRecord>,
    counters: Arc<LiveCounters>,
    stops: &Stops,
) -> WindowOutcome {
    let origin = Instant::now();
    let started_at = chrono::Utc::now();
    let drain_stop = stops.abort_in_flight.child_token();
    let outage = Arc::new(outage::Outage::new(spec.on_down, origin));
    let ctx = WindowContext {
        origin,
        executor,
        feed,
        records,
        counters: counters.clone(),
        abort: drain_stop.clone(),
        bound_reached: CancellationToken::new(),
        outage: outage.clone(),
    };
    let deadline = spec.duration.map(|d| origin + d);
    // The load models stop starting on an interrupt or once the target is down; only the
    // first marks the window interrupted.
    let load_stops = Stops {
        stop_starting: stops.stop_starting.child_token(),
        abort_in_flight: stops.abort_in_flight.clone(),
    };

    let started_before = counters.started.load(Ordering::Relaxed);
    let in_flight = start_load(spec, &ctx, deadline, &load_stops).await;
    let deadline_passed = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = ctx.bound_reached.cancelled() => {}
        _ = deadline_passed => {}
        _ = stops.stop_starting.cancelled() => {}
        _ = outage.watch() => {}
    }
    // A target that is down stops what has started too (a session's later turns); a bound
    // reached lets them finish.
    if outage.ended().is_cancelled() {
        load_stops.stop_starting.cancel();
    }
    // No more requests start: stragglers get the drain timeout.
    let drain_timer = {
        let abort = drain_stop.clone();
        let grace = spec.drain_timeout;
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            abort.cancel();
        })
    };
    in_flight.wait().await;
    drain_timer.abort();
    let (target_down, outages, withheld) = outage.finish();
    WindowOutcome {
        origin: origin.into_std(),
        started_at,
        interrupted: stops.stop_starting.is_cancelled(),
        started: counters.started.load(Ordering::Relaxed) - started_before,
        target_down,
        outages,
        withheld,
    }
}

/// Start the window's load model (closed, open or replay); its requests are the returned tasks.
async fn start_load<E: Executor, F: PromptFeed>(
    spec: &WindowSpec,
    ctx: &WindowContext<E, F>,
    deadline: Option<Instant>,
    stops: &Stops,
) -> InFlight {
    match &spec.load {
        Load::Closed { concurrency } => closed::start(
            ctx,
            *concurrency,
            deadline,
            spec.requests,
            &stops.stop_starting,
        ),
        Load::Open {
            rps,
            arrival,
            burstiness,
            max_concurrency,
        } => {
            let arrivals = open::Arrivals::drawn(*arrival, *rps, *burstiness, spec.seed);
            let lanes = outage::Lanes::for_rate(*rps, *max_concurrency);
            open::start(
                ctx,
                (arrivals, lanes),
                *max_concurrency,
                deadline,
                spec.requests,
                &stops.stop_starting,
                spec.precise_pacing,
            )
            .await
        }
        Load::Replay => {
            open::start(
                ctx,
                (open::Arrivals::from_prompts(), outage::Lanes::new(256)),
                None,
                deadline,
                spec.requests,
                &stops.stop_starting,
                spec.precise_pacing,
            )
            .await
        }
    }
}

/// Shared by the load models.
struct WindowContext<E, F> {
    origin: Instant,
    executor: Arc<E>,
    feed: Arc<F>,
    records: mpsc::UnboundedSender<RequestRecord>,
    counters: Arc<LiveCounters>,
    abort: CancellationToken,
    /// Cancelled by a load model once it stops starting requests.
    bound_reached: CancellationToken,
    /// The target's reachability, which every finished request updates.
    outage: Arc<outage::Outage>,
}

impl<E: Executor, F: PromptFeed> WindowContext<E, F> {
    fn clone_for_task(&self) -> Self {
        WindowContext {
            origin: self.origin,
            executor: self.executor.clone(),
            feed: self.feed.clone(),
            records: self.records.clone(),
            counters: self.counters.clone(),
            abort: self.abort.clone(),
            bound_reached: self.bound_reached.clone(),
            outage: self.outage.clone(),
        }
    }

    async fn next_prompt(&self) -> Prompt {
        self.feed.next_prompt().await
    }

    /// Send one request now; cancelled requests still produce a record.
    async fn send(&self, request_index: u64, prompt: Prompt) -> RequestRecord {
        self.counters.started.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        let planned = prompt.planned_prompt_tokens;
        let model = prompt.model.as_deref().map(str::to_string);
        let archetype = prompt.archetype.as_deref().map(str::to_string);
        let images = u64::from(prompt.images());
        let mut record = tokio::select! {
            record = self.executor.execute(request_index, prompt, self.origin.into_std()) => record,
            _ = self.abort.cancelled() => cancelled_record(request_index, planned, self.origin, start),
        };
        record.model = model;
        record.archetype = archetype;
        record.images = images;
        self.counters.finished.fetch_add(1, Ordering::Relaxed);
        record
    }

    /// One turn of a session; its reply comes back for the next turn.
    async fn send_turn(&self, request_index: u64, prompt: Prompt) -> (RequestRecord, ChatMessage) {
        self.counters.started.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        let planned = prompt.planned_prompt_tokens;
        let model = prompt.model.as_deref().map(str::to_string);
        let origin = self.origin.into_std();
        let mut sent = tokio::select! {
            sent = self.executor.execute_turn(request_index, prompt, origin) => sent,
            _ = self.abort.cancelled() => {
                let record = cancelled_record(request_index, planned, self.origin, start);
                (record, ChatMessage::new("assistant", ""))
            }
        };
        sent.0.model = model;
        self.counters.finished.fetch_add(1, Ordering::Relaxed);
        sent
    }

    fn deliver(&self, record: RequestRecord) {
        self.outage.note(&record);
        // The receiver lives as long as the run; if it is gone, the run is over anyway.
        let _ = self.records.send(record);
    }

    /// Wait until this sender may send (only a down target under `then: wait` holds one
    /// back, for its one probe at a time); false once the window starts no more.
    async fn admitted(&self, stop: &CancellationToken, deadline: Option<Instant>) -> bool {
        loop {
            match self.outage.admit() {
                outage::Admit::Go | outage::Admit::Probe => return true,
                outage::Admit::Hold(until) => {
                    tokio::select! {
                        () = self.outage.held(until) => {}
                        () = self.starts_no_more(stop, deadline) => return false,
                    }
                }
            }
        }
    }

    /// A closed-loop worker's pause after its request: a backoff when it reached no server.
    /// False when the window starts no more during it.
    async fn back_off(
        &self,
        unreached: bool,
        backoff: &mut outage::Backoff,
        (stop, deadline): (&CancellationToken, Option<Instant>),
    ) -> bool {
        if !unreached {
            backoff.reset();
            return true;
        }
        tokio::select! {
            () = tokio::time::sleep(backoff.next_delay()) => true,
            () = self.starts_no_more(stop, deadline) => false,
        }
    }

    /// Done once the window starts no more requests: stopped, aborted, its bound reached or
    /// its deadline passed.
    async fn starts_no_more(&self, stop: &CancellationToken, deadline: Option<Instant>) {
        let deadline_passed = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = stop.cancelled() => {}
            () = self.abort.cancelled() => {}
            () = self.bound_reached.cancelled() => {}
            () = deadline_passed => {}
        }
    }
}

fn cancelled_record(
    request_index: u64,
    planned: Option<u64>,
    origin: Instant,
    start: Instant,
) -> RequestRecord {
    RequestRecord {
        request_index,
        start_offset_ms: ms_between(origin, start),
        e2e_ms: start.elapsed().as_secs_f64() * 1e3,
        planned_context_tokens: planned,
        error: Some(RequestError::new(
            ErrorKind::Cancelled,
            None,
            "cancelled while in flight (drain timeout or interrupt)".to_string(),
        )),
        ..RequestRecord::default()
    }
}

fn ms_between(earlier: Instant, later: Instant) -> f64 {
    later.saturating_duration_since(earlier).as_secs_f64() * 1e3
}

/// Tasks still running after a load model stopped starting requests.
struct InFlight {
    tasks: tokio::task::JoinSet<()>,
}

impl InFlight {
    async fn wait(mut self) {
        while self.tasks.join_next().await.is_some() {}
    }
}

#[cfg(test)]
mod tests;
