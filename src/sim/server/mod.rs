//! The simulator's HTTP server: the live handle and starting it; connections, routing and
//! generation requests each have a submodule.

mod connection;
mod encode;
mod generation;
mod response;
mod routes;
mod transports;
pub use transports::{UnixSim, serve_unix};

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::SimConfig;
use super::cache::PrefixCache;
use super::prometheus::Counters;
use super::settings::Settings;
use super::state::{SendTimes, Shared};
use connection::accept_loop;

/// A snapshot of the simulator's live counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SimStats {
    pub running: u64,
    pub waiting: u64,
    /// Generation requests received and not yet finished (waiting + running + tail).
    pub in_flight: u64,
    pub max_running_observed: u64,
    pub max_in_flight_observed: u64,
    /// Requests received (chat, completions, embeddings, rerank), faulted ones included.
    pub requests_total: u64,
    pub requests_finished: u64,
    pub requests_aborted: u64,
    /// Slots aborted requests kept for good (`leak_aborted_slots`).
    pub slots_leaked: u64,
    pub prompt_tokens_total: u64,
    pub generation_tokens_total: u64,
    pub prefix_cache_queries_tokens: u64,
    pub prefix_cache_hits_tokens: u64,
    pub prefix_cache_evicted_blocks: u64,
    pub preemptions: u64,
    pub faults_injected: u64,
}

/// A running simulator; dropping the handle does not stop it, `shutdown` does.
pub struct SimHandle {
    shared: Arc<Shared>,
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl SimHandle {
    /// Stop accepting, close connections, and wait for the server task to end.
    pub async fn shutdown(self) {
        let _ = self.shared.stop.send(true);
        let _ = self.task.await;
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The instant the simulator started; offsets of [`SendTimes`] are taken from it.
    pub fn started(&self) -> std::time::Instant {
        self.shared.started.into_std()
    }

    pub fn stats(&self) -> SimStats {
        let c = &self.shared.counters;
        SimStats {
            running: c.running.load(Relaxed),
            waiting: c.waiting.load(Relaxed),
            in_flight: c.in_flight.load(Relaxed),
            max_running_observed: c.max_running.load(Relaxed),
            max_in_flight_observed: c.max_in_flight.load(Relaxed),
            requests_total: c.requests_total.load(Relaxed),
            requests_finished: c.finished_stop.load(Relaxed) + c.finished_length.load(Relaxed),
            requests_aborted: c.finished_abort.load(Relaxed),
            slots_leaked: c.leaked_slots.load(Relaxed),
            prompt_tokens_total: c.prompt_tokens.load(Relaxed),
            generation_tokens_total: c.generation_tokens.load(Relaxed),
            prefix_cache_queries_tokens: c.prefix_queries.load(Relaxed),
            prefix_cache_hits_tokens: c.prefix_hits.load(Relaxed),
            prefix_cache_evicted_blocks: c.evicted_blocks.load(Relaxed),
            preemptions: c.preemptions.load(Relaxed),
            faults_injected: c.faults_injected.load(Relaxed),
        }
    }

    /// Restart the `max_*_observed` peaks from the current values (e.g. between phases).
    pub fn reset_peaks(&self) {
        let c = &self.shared.counters;
        c.max_running.store(c.running.load(Relaxed), Relaxed);
        c.max_in_flight.store(c.in_flight.load(Relaxed), Relaxed);
    }

    /// Send timestamps of every finished request so far (empty unless `record_timestamps`).
    pub fn timestamps(&self) -> Vec<SendTimes> {
        match &self.shared.timestamps {
            Some(log) => log
                .lock()
                .unwrap_or_else(|poison| poison.into_inner())
                .clone(),
            None => Vec::new(),
        }
    }

    /// Every request read so far with the reply it got (empty unless `record_requests`).
    pub fn requests(&self) -> Vec<crate::sim::SeenRequest> {
        match &self.shared.requests {
            Some(log) => log
                .lock()
                .unwrap_or_else(|poison| poison.into_inner())
                .clone(),
            None => Vec::new(),
        }
    }

    /// Send timestamps of the request with this `x-request-id`.
    pub fn timestamps_for(&self, request_id: &str) -> Option<SendTimes> {
        let log = self.shared.timestamps.as_ref()?;
        let log = log.lock().unwrap_or_else(|poison| poison.into_inner());
        log.iter()
            .rev()
            .find(|t| t.request_id.as_deref() == Some(request_id))
            .cloned()
    }
}

/// Start a simulator on `127.0.0.1:0`.
pub async fn serve(config: SimConfig) -> io::Result<(SocketAddr, SimHandle)> {
    serve_on(config, SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await
}

/// Start a simulator on `addr`, serving in the background on the current tokio runtime.
pub async fn serve_on(config: SimConfig, addr: SocketAddr) -> io::Result<(SocketAddr, SimHandle)> {
    let settings = Settings::resolve(&config)
        .map_err(|err| io::Error::new(io::ErrorKind::InvalidInput, err.to_string()))?;
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let now = Instant::now();
    let (stop, stop_rx) = watch::channel(false);
    let adapters = settings
        .adapters
        .clone()
        .map(crate::sim::adapters::AdapterPool::new);
    let settings_power = settings.power.as_ref().map(super::power::PowerMeter::new);
    let shared = Arc::new(Shared {
        slots: Arc::new(Semaphore::new(settings.max_running as usize)),
        cache: settings
            .prefix_cache
            .as_ref()
            .map(|c| Mutex::new(PrefixCache::new(c.capacity_tokens, c.block_tokens))),
        timestamps: settings.record_timestamps.then(|| Mutex::new(Vec::new())),
        requests: settings.record_requests.then(|| Mutex::new(Vec::new())),
        settings,
        counters: Counters::new(),
        started: now,
        next_seq: AtomicU64::new(0),
        prefill_busy_until: Mutex::new(now),
        reset_ids: Mutex::new(Default::default()),
        stop,
        switched: Default::default(),
        adapters,
        power: settings_power,
    });
    shared.counters.speculative.store(
        shared.settings.speculative.is_some(),
        std::sync::atomic::Ordering::Relaxed,
    );
    let task = tokio::spawn(accept_loop(listener, shared.clone(), stop_rx));
    Ok((
        local,
        SimHandle {
            shared,
            addr: local,
            task,
        },
    ))
}
