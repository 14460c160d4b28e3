//! The measuring harness: the simulator on its own thread, the client on the calling one, and
//! one scheduler window between them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::{OUTPUT_TOKENS, probe};
use crate::client::Api;
use crate::client::{Client, ClientConfig, Endpoint, RequestRecord, ResolvedTimeouts, Sampling};
use crate::scheduler::{self, LiveCounters, Load, PromptFeed, Stops, WindowSpec};
use crate::sim::{self, SendTimes, SimConfig};
use crate::workload::{ChatMessage, Prompt, PromptInput};

/// A simulator on its own thread and current-thread runtime.
pub(super) struct SimThread {
    pub(super) addr: std::net::SocketAddr,
    pub(super) stop: tokio::sync::oneshot::Sender<()>,
    /// Returns the send timestamps.
    pub(super) thread: std::thread::JoinHandle<Vec<SendTimes>>,
    /// The thread's CPU-time clock, readable from any thread.
    pub(super) cpu_clock: Option<libc::clockid_t>,
}

impl SimThread {
    pub(super) fn start(
        record_timestamps: bool,
        decode_ms_per_token: f64,
    ) -> Result<SimThread, String> {
        let config = SimConfig {
            prefill_tok_s: Some(0.0),
            decode_ms_per_token: Some(decode_ms_per_token),
            decode_ms_per_running: Some(0.0),
            // With paced tokens, jitter keeps the streams from emitting in lockstep bursts.
            jitter: Some(if decode_ms_per_token > 0.0 { 0.5 } else { 0.0 }),
            max_running: Some(1 << 16),
            record_timestamps: Some(record_timestamps),
            ..SimConfig::default()
        };
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("selftest-sim".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = addr_tx.send(Err(format!("cannot start a runtime: {e}")));
                        return Vec::new();
                    }
                };
                runtime.block_on(async move {
                    let handle = match sim::serve(config).await {
                        Ok((addr, handle)) => {
                            let _ = addr_tx.send(Ok(addr));
                            handle
                        }
                        Err(e) => {
                            let _ = addr_tx.send(Err(format!("cannot start the simulator: {e}")));
                            return Vec::new();
                        }
                    };
                    let _ = stop_rx.await;
                    let timestamps = handle.timestamps();
                    handle.shutdown().await;
                    timestamps
                })
            })
            .map_err(|e| format!("cannot start the simulator thread: {e}"))?;
        let addr = addr_rx
            .recv()
            .map_err(|_| "the simulator thread ended early".to_string())??;
        let cpu_clock = probe::cpu_clock_of(&thread);
        Ok(SimThread {
            addr,
            stop,
            thread,
            cpu_clock,
        })
    }

    /// The simulator thread's CPU seconds so far.
    pub(super) fn cpu_s(&self) -> f64 {
        self.cpu_clock.map_or(0.0, probe::clock_s)
    }

    pub(super) fn stop(self) -> Vec<SendTimes> {
        let _ = self.stop.send(());
        self.thread.join().unwrap_or_default()
    }
}

pub(super) fn client_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))
}

pub(super) fn client_for(addr: std::net::SocketAddr, concurrency: u32) -> Result<Client, String> {
    let config = ClientConfig {
        endpoint: Endpoint {
            base_url: format!("http://{addr}/v1"),
            ..Endpoint::default()
        },
        api: Api::Chat,
        model: "sim".into(),
        timeouts: ResolvedTimeouts {
            connect: Some(Duration::from_secs(10)),
            first_byte: Some(Duration::from_secs(30)),
            idle: Some(Duration::from_secs(30)),
            total: Some(Duration::from_secs(60)),
        },
        sampling: Sampling {
            ignore_eos: Some(true),
            ..Sampling::default()
        },
        max_connections: concurrency as usize,
        ..ClientConfig::default()
    };
    Client::new(config).map_err(|e| e.to_string())
}

/// A chat prompt of `tokens` words (the simulator counts one token per word, plus template).
pub(super) fn prompt_of(tokens: u32) -> Prompt {
    let words: Vec<&str> = ["alpha", "beta", "gamma", "delta"]
        .iter()
        .cycle()
        .take(tokens as usize)
        .copied()
        .collect();
    Prompt {
        input: PromptInput::Messages(vec![ChatMessage::new("user", words.join(" "))]),
        planned_prompt_tokens: None,
        max_tokens: OUTPUT_TOKENS,
        expected: None,
        scheduled_at: None,
        archetype: None,
        model: None,
        session: None,
    }
}

/// The same prompt for every request.
pub(super) struct FixedFeed(pub(super) Prompt);

impl PromptFeed for FixedFeed {
    async fn next_prompt(&self) -> Prompt {
        self.0.clone()
    }
}

pub(super) struct Measured {
    pub(super) origin: Instant,
    pub(super) elapsed_s: f64,
    pub(super) records: Vec<RequestRecord>,
}

/// One scheduler window with the real client; records collected as the run does.
pub(super) async fn window_records(
    client: &Arc<Client>,
    prompt: &Prompt,
    load: Load,
    duration: Duration,
) -> Measured {
    window_with_feed(client, &Arc::new(FixedFeed(prompt.clone())), load, duration).await
}

/// [`window_records`] with prompts from `feed`.
pub(super) async fn window_with_feed<F: PromptFeed>(
    client: &Arc<Client>,
    feed: &Arc<F>,
    load: Load,
    duration: Duration,
) -> Measured {
    let spec = WindowSpec {
        load,
        duration: Some(duration),
        requests: None,
        drain_timeout: Duration::from_secs(30),
        seed: 7,
        precise_pacing: true,
        // The selftest's own server: every request is measured, none backed off from.
        on_down: crate::plan::DownPolicy::Continue,
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let collector = tokio::spawn(async move {
        let mut records = Vec::new();
        while let Some(record) = rx.recv().await {
            records.push(record);
        }
        records
    });
    let feed = feed.clone();
    let started = Instant::now();
    let outcome = scheduler::run_window(
        &spec,
        client.clone(),
        feed,
        tx,
        Arc::new(LiveCounters::default()),
        &Stops::default(),
    )
    .await;
    let elapsed_s = started.elapsed().as_secs_f64();
    let records = collector.await.unwrap_or_default();
    Measured {
        origin: outcome.origin,
        elapsed_s,
        records,
    }
}
