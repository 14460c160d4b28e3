//! Scheduler behaviour on tokio's paused clock with a fake executor: exact, no sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::*;
use crate::plan::Arrival;
use crate::workload::PromptInput;

/// Answers every request after a fixed latency and tracks how many were in flight at once.
struct FakeServer {
    latency: Duration,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
}

impl FakeServer {
    fn new(latency_ms: u64) -> Arc<Self> {
        Arc::new(FakeServer {
            latency: Duration::from_millis(latency_ms),
            in_flight: AtomicU64::new(0),
            max_in_flight: AtomicU64::new(0),
        })
    }
}

impl Executor for FakeServer {
    async fn execute(&self, index: u64, prompt: Prompt, origin: StdInstant) -> RequestRecord {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let start = Instant::now().into_std();
        tokio::time::sleep(self.latency).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        RequestRecord {
            request_index: index,
            start_offset_ms: start.saturating_duration_since(origin).as_secs_f64() * 1e3,
            e2e_ms: self.latency.as_secs_f64() * 1e3,
            planned_context_tokens: prompt.planned_prompt_tokens,
            ..RequestRecord::default()
        }
    }
}

struct FixedPrompts;

impl PromptFeed for FixedPrompts {
    async fn next_prompt(&self) -> Prompt {
        Prompt {
            input: PromptInput::Text("hello".into()),
            planned_prompt_tokens: Some(1),
            max_tokens: 4,
            expected: None,
            scheduled_at: None,
            archetype: None,
            model: None,
            session: None,
        }
    }
}

fn spec(load: Load, duration_ms: Option<u64>, requests: Option<u64>) -> WindowSpec {
    WindowSpec {
        load,
        duration: duration_ms.map(Duration::from_millis),
        requests,
        drain_timeout: Duration::from_secs(30),
        seed: 1,
        precise_pacing: false,
        on_down: crate::plan::DownPolicy::Fail,
    }
}

async fn run<E: Executor>(
    spec: &WindowSpec,
    server: Arc<E>,
    stops: &Stops,
) -> (WindowOutcome, Vec<RequestRecord>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let outcome = run_window(
        spec,
        server,
        Arc::new(FixedPrompts),
        tx,
        Arc::new(LiveCounters::default()),
        stops,
    )
    .await;
    let mut records = Vec::new();
    while let Ok(record) = rx.try_recv() {
        records.push(record);
    }
    records.sort_by_key(|r| r.request_index);
    (outcome, records)
}

#[tokio::test(start_paused = true)]
async fn closed_loop_holds_exactly_n_in_flight_and_stops_at_the_request_bound() {
    let server = FakeServer::new(10);
    let (outcome, records) = run(
        &spec(Load::Closed { concurrency: 4 }, None, Some(40)),
        server.clone(),
        &Stops::default(),
    )
    .await;
    assert_eq!(server.max_in_flight.load(Ordering::SeqCst), 4);
    assert_eq!(records.len(), 40);
    assert_eq!(outcome.started, 40);
    assert!(
        records
            .iter()
            .enumerate()
            .all(|(i, r)| r.request_index == i as u64)
    );
    assert!(!outcome.interrupted);
}

#[tokio::test(start_paused = true)]
async fn closed_loop_starts_nothing_after_the_duration() {
    let server = FakeServer::new(100);
    let (_, records) = run(
        &spec(Load::Closed { concurrency: 2 }, Some(1_000), None),
        server,
        &Stops::default(),
    )
    .await;
    // Two workers, 100 ms each, for 1 s: starts at 0, 100, …, 900 ms.
    assert_eq!(records.len(), 20);
    assert!(records.iter().all(|r| r.start_offset_ms < 1_000.0));
}

#[tokio::test(start_paused = true)]
async fn open_loop_sends_on_schedule_regardless_of_latency() {
    let server = FakeServer::new(250);
    let load = Load::Open {
        rps: 100.0,
        arrival: Arrival::Constant,
        burstiness: None,
        max_concurrency: None,
    };
    let (_, records) = run(
        &spec(load, Some(1_000), None),
        server.clone(),
        &Stops::default(),
    )
    .await;
    assert_eq!(records.len(), 100);
    for (i, record) in records.iter().enumerate() {
        assert_eq!(record.scheduled_offset_ms, Some(i as f64 * 10.0));
        assert!(
            record.send_lag_ms.unwrap().abs() < 1.5,
            "lag {:?}",
            record.send_lag_ms
        );
    }
    // 250 ms responses at 10 ms spacing: about 25 in flight, so load never waited for replies.
    assert!(server.max_in_flight.load(Ordering::SeqCst) >= 24);
}

#[tokio::test(start_paused = true)]
async fn open_loop_cap_turns_into_visible_send_lag() {
    let server = FakeServer::new(50);
    let load = Load::Open {
        rps: 100.0,
        arrival: Arrival::Constant,
        burstiness: None,
        max_concurrency: Some(1),
    };
    let (_, records) = run(
        &spec(load, None, Some(10)),
        server.clone(),
        &Stops::default(),
    )
    .await;
    assert_eq!(server.max_in_flight.load(Ordering::SeqCst), 1);
    let last_lag = records.last().and_then(|r| r.send_lag_ms).unwrap();
    // Each request holds the only slot for 50 ms while arrivals come every 10 ms.
    assert!(last_lag > 300.0, "lag {last_lag}");
    // All of it is the cap's: every arrival after the first waited for the slot (its own
    // or, queued behind it, an earlier one's) until just before it was sent.
    for record in &records {
        let (lag, wait) = (record.send_lag_ms.unwrap(), record.slot_wait_ms.unwrap());
        assert!(
            wait <= lag && lag - wait < 1.5,
            "{}: lag {lag}, slot wait {wait}",
            record.request_index
        );
    }
    assert_eq!(records[0].slot_wait_ms, Some(0.0));
    assert!(records[1].slot_wait_ms.unwrap() > 30.0, "{:?}", records[1]);
}

#[tokio::test(start_paused = true)]
async fn an_uncapped_open_loop_waits_for_no_slot_and_a_cap_with_room_adds_nothing() {
    let server = FakeServer::new(25);
    for (max_concurrency, slot_wait) in [(None, None), (Some(8), Some(0.0))] {
        let load = Load::Open {
            rps: 100.0,
            arrival: Arrival::Constant,
            burstiness: None,
            max_concurrency,
        };
        let (_, records) = run(
            &spec(load, None, Some(20)),
            server.clone(),
            &Stops::default(),
        )
        .await;
        assert_eq!(records.len(), 20);
        assert!(
            records.iter().all(|r| r.slot_wait_ms == slot_wait),
            "{records:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn stragglers_past_the_drain_timeout_are_recorded_as_cancelled() {
    let server = FakeServer::new(10_000);
    let mut window = spec(Load::Closed { concurrency: 3 }, Some(1_000), None);
    window.drain_timeout = Duration::from_secs(2);
    let (_, records) = run(&window, server, &Stops::default()).await;
    assert_eq!(records.len(), 3);
    for record in &records {
        assert_eq!(
            record.error.as_ref().map(|e| e.kind),
            Some(ErrorKind::Cancelled)
        );
        assert!(
            (record.e2e_ms - 3_000.0).abs() < 5.0,
            "e2e {}",
            record.e2e_ms
        );
    }
}

#[tokio::test(start_paused = true)]
async fn stop_starting_ends_the_window_early_and_keeps_finished_records() {
    let server = FakeServer::new(100);
    let stops = Stops::default();
    let stopper = stops.stop_starting.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(450)).await;
        stopper.cancel();
    });
    let (outcome, records) = run(
        &spec(Load::Closed { concurrency: 1 }, Some(10_000), None),
        server,
        &stops,
    )
    .await;
    assert!(outcome.interrupted);
    // Requests at 0..400 ms complete; the one in flight at 450 ms finishes too.
    assert_eq!(records.len(), 5);
    assert!(records.iter().all(|r| r.error.is_none()));
}

/// The precise pacer runs on a thread of its own against the real clock.
fn precise(load: Load, duration_ms: u64, requests: Option<u64>) -> WindowSpec {
    WindowSpec {
        precise_pacing: true,
        ..spec(load, Some(duration_ms), requests)
    }
}

fn open_load(rps: f64, max_concurrency: Option<u32>) -> Load {
    Load::Open {
        rps,
        arrival: Arrival::Constant,
        burstiness: None,
        max_concurrency,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pacer_thread_sends_every_request_in_schedule_order() {
    let server = FakeServer::new(1);
    let (outcome, records) = run(
        &precise(open_load(1000.0, Some(2)), 60_000, Some(50)),
        server.clone(),
        &Stops::default(),
    )
    .await;
    assert_eq!(outcome.started, 50);
    assert_eq!(records.len(), 50);
    assert!(server.max_in_flight.load(Ordering::SeqCst) <= 2);
    for (i, record) in records.iter().enumerate() {
        // 1 ms apart, and never before the schedule.
        assert_eq!(record.scheduled_offset_ms, Some(i as f64));
        let lag = record.send_lag_ms.expect("open loop records send lag");
        assert!(lag >= 0.0, "request {i} sent {lag} ms early");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pacer_thread_stops_within_a_gap_when_asked() {
    let stops = Stops::default();
    let stop = stops.stop_starting.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.cancel();
    });
    let began = std::time::Instant::now();
    // One request per 10 s: only the first goes before the stop.
    let (outcome, records) = run(
        &precise(open_load(0.1, None), 60_000, None),
        FakeServer::new(1),
        &stops,
    )
    .await;
    assert!(outcome.interrupted);
    assert_eq!(records.len(), 1);
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
}

/// Numbered prompts (the number in `planned_prompt_tokens`) that make the taker wait a turn.
#[derive(Default)]
struct NumberedPrompts {
    taken: AtomicU64,
}

impl PromptFeed for NumberedPrompts {
    async fn next_prompt(&self) -> Prompt {
        tokio::task::yield_now().await;
        let n = self.taken.fetch_add(1, Ordering::SeqCst);
        Prompt {
            input: PromptInput::Text("numbered".into()),
            planned_prompt_tokens: Some(n),
            max_tokens: 4,
            expected: None,
            scheduled_at: None,
            archetype: None,
            model: None,
            session: None,
        }
    }
}

#[tokio::test(start_paused = true)]
async fn closed_loop_request_i_gets_prompt_i_and_takes_no_more_than_it_sends() {
    let feed = Arc::new(NumberedPrompts::default());
    let (tx, mut rx) = mpsc::unbounded_channel();
    run_window(
        &spec(Load::Closed { concurrency: 8 }, None, Some(100)),
        FakeServer::new(3),
        feed.clone(),
        tx,
        Arc::new(LiveCounters::default()),
        &Stops::default(),
    )
    .await;
    let mut records = Vec::new();
    while let Ok(record) = rx.try_recv() {
        records.push(record);
    }
    assert_eq!(records.len(), 100);
    for r in &records {
        assert_eq!(r.planned_context_tokens, Some(r.request_index), "{r:?}");
    }
    // The next window (a warmup's measured window) starts at prompt 100.
    assert_eq!(feed.taken.load(Ordering::SeqCst), 100);
}

/// Refuses every connection (at once) until `up_after`, then answers after 10 ms; counts
/// the attempts made while down.
struct FlakyServer {
    origin: Instant,
    up_after: Option<Duration>,
    refused: AtomicU64,
}

impl FlakyServer {
    fn new(up_after: Option<Duration>) -> Arc<Self> {
        Arc::new(FlakyServer {
            origin: Instant::now(),
            up_after,
            refused: AtomicU64::new(0),
        })
    }
}

impl Executor for FlakyServer {
    async fn execute(&self, index: u64, _prompt: Prompt, origin: StdInstant) -> RequestRecord {
        let start = Instant::now().into_std();
        let up = self.up_after.is_some_and(|t| self.origin.elapsed() >= t);
        let error = if up {
            tokio::time::sleep(Duration::from_millis(10)).await;
            None
        } else {
            self.refused.fetch_add(1, Ordering::SeqCst);
            Some(RequestError {
                unreached: Some(crate::client::Unreached::Refused),
                ..RequestError::new(ErrorKind::Connect, None, "connection refused")
            })
        };
        RequestRecord {
            request_index: index,
            start_offset_ms: start.saturating_duration_since(origin).as_secs_f64() * 1e3,
            error,
            ..RequestRecord::default()
        }
    }
}

fn with_policy(spec: WindowSpec, on_down: crate::plan::DownPolicy) -> WindowSpec {
    WindowSpec { on_down, ..spec }
}

async fn run_flaky(
    spec: &WindowSpec,
    server: Arc<FlakyServer>,
) -> (WindowOutcome, Vec<RequestRecord>) {
    run(spec, server, &Stops::default()).await
}

#[tokio::test(start_paused = true)]
async fn a_dead_target_ends_a_closed_loop_after_two_seconds_with_few_attempts() {
    let server = FlakyServer::new(None);
    let spec = spec(Load::Closed { concurrency: 4 }, Some(8_000), None);
    let (outcome, records) = run_flaky(&spec, server.clone()).await;
    let down = outcome.target_down.expect("the target is down");
    assert_eq!(down.describe(), "target down at 0.0 s (connection refused)");
    // Four workers backing off 10 ms doubling to 1 s: a few dozen attempts, not thousands.
    let attempts = server.refused.load(Ordering::SeqCst);
    assert!((12..=60).contains(&attempts), "{attempts} attempts");
    assert_eq!(records.len() as u64, attempts);
    assert_eq!(outcome.started, attempts);
    let last = records
        .iter()
        .map(|r| r.start_offset_ms)
        .fold(0.0, f64::max);
    assert!(
        (2_000.0..3_200.0).contains(&last),
        "last attempt at {last} ms"
    );
    assert!(!outcome.interrupted);
}

#[tokio::test(start_paused = true)]
async fn continue_keeps_a_closed_loop_to_about_one_attempt_a_second_per_worker() {
    let server = FlakyServer::new(None);
    let spec = with_policy(
        spec(Load::Closed { concurrency: 2 }, Some(10_000), None),
        crate::plan::DownPolicy::Continue,
    );
    let (outcome, records) = run_flaky(&spec, server.clone()).await;
    assert!(outcome.target_down.is_none());
    assert_eq!(outcome.outages.len(), 1);
    assert_eq!(outcome.outages[0].until_s, None);
    // Per worker: 8 growing waits in the first ~1.3 s, then at most two a second.
    let attempts = records.len();
    assert!((16..=2 * 30).contains(&attempts), "{attempts} attempts");
}

#[tokio::test(start_paused = true)]
async fn wait_resumes_when_the_target_answers_and_records_the_outage() {
    let server = FlakyServer::new(Some(Duration::from_secs(4)));
    let spec = with_policy(
        spec(Load::Closed { concurrency: 4 }, Some(6_000), None),
        crate::plan::DownPolicy::Wait(Duration::from_secs(10)),
    );
    let (outcome, records) = run_flaky(&spec, server.clone()).await;
    assert!(outcome.target_down.is_none());
    let spell = &outcome.outages[0];
    let until = spell.until_s.expect("it answered again");
    assert!((4.0..5.2).contains(&until), "answered at {until} s");
    assert!(spell.down_at_s >= 2.0);
    // After the answer all four workers send again: 10 ms requests for about a second.
    let after = records.iter().filter(|r| r.is_ok()).count();
    assert!(after > 200, "{after} requests after the outage");
}

#[tokio::test(start_paused = true)]
async fn wait_fails_once_wait_up_to_passes() {
    let server = FlakyServer::new(None);
    let spec = with_policy(
        spec(Load::Closed { concurrency: 4 }, Some(30_000), None),
        crate::plan::DownPolicy::Wait(Duration::from_secs(3)),
    );
    let (outcome, _) = run_flaky(&spec, server).await;
    let down = outcome.target_down.expect("gave up");
    assert!(
        down.describe()
            .ends_with("(connection refused, no answer within 3s)")
    );
}

#[tokio::test(start_paused = true)]
async fn an_open_loop_withholds_arrivals_while_every_lane_backs_off() {
    let server = FlakyServer::new(None);
    let load = Load::Open {
        rps: 100.0,
        arrival: Arrival::Constant,
        burstiness: None,
        max_concurrency: Some(2),
    };
    let spec = with_policy(
        spec(load, Some(5_000), None),
        crate::plan::DownPolicy::Continue,
    );
    let (outcome, records) = run_flaky(&spec, server.clone()).await;
    // Sent = records; the rest of the 500 arrivals were withheld, not sent.
    assert_eq!(outcome.started, records.len() as u64);
    assert_eq!(outcome.started + outcome.withheld, 500);
    assert!(outcome.withheld > 400, "{} withheld", outcome.withheld);
}
