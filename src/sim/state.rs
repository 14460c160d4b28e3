//! The simulator's shared state: settings, counters, slots, the prefix cache and the send-time
//! log, read and written by the accept loop, every request handler and every generation.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;

use super::cache::PrefixCache;
use super::prometheus::Counters;
use super::settings::Settings;

/// Send timestamps kept at most for this many requests (about 100 bytes each).
pub const MAX_RECORDED_REQUESTS: usize = 100_000;

/// State shared by the accept loop, every connection and the handle.
pub(crate) struct Shared {
    pub settings: Settings,
    pub counters: Counters,
    pub slots: Arc<Semaphore>,
    pub started: Instant,
    pub next_seq: AtomicU64,
    /// When the single prefill lane is next free.
    pub prefill_busy_until: Mutex<Instant>,
    pub cache: Option<Mutex<PrefixCache>>,
    pub timestamps: Option<Mutex<Vec<SendTimes>>>,
    pub requests: Option<Mutex<Vec<SeenRequest>>>,
    /// `x-request-id`s of requests reset before headers: a client's resend of one is reset
    /// again (the request, not the connection, is what fails) without taking a new number.
    pub reset_ids: Mutex<std::collections::HashSet<String>>,
    pub stop: watch::Sender<bool>,
    /// Faults switched on over HTTP (`/sim/faults`).
    pub switched: super::faults::SwitchedFaults,
    /// LoRA adapters, when the settings serve any.
    pub adapters: Option<super::adapters::AdapterPool>,
    /// The power draw and energy account, when the settings ask for one.
    pub power: Option<super::power::PowerMeter>,
}

/// A request as the simulator read it, and the text it answered (`record_requests`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenRequest {
    /// Request number, counted from 1 per simulator.
    pub seq: u64,
    /// Every request header, names lower-case, in arrival order.
    pub headers: Vec<(String, String)>,
    /// Chat messages as `(role, text)`; empty for completions.
    pub messages: Vec<(String, String)>,
    /// The model the body named, if any.
    pub model: Option<String>,
    /// The content the simulator sent back, once the response ended.
    pub reply: Option<String>,
    /// Tools the request offered.
    pub tools: usize,
    /// Ids of the tool calls in the history's assistant messages, in order.
    pub history_tool_calls: Vec<String>,
    /// `tool_call_id`s of the history's tool messages, in order.
    pub tool_results: Vec<String>,
    /// The tool call the simulator answered with, once the response ended.
    pub reply_tool_call: Option<SimToolCall>,
}

/// A tool call the simulator made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimToolCall {
    pub id: String,
    pub name: String,
    /// The arguments' JSON text: `{"<first parameter>": "<words>"}`.
    pub arguments: String,
}

/// When the simulator wrote a request's response pieces (its own clock, `record_timestamps`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendTimes {
    /// The request's `x-request-id` header, if it had one.
    pub request_id: Option<String>,
    /// Request number, counted from 1 per simulator.
    pub seq: u64,
    /// When the handler started reading the request.
    pub received: std::time::Instant,
    /// First token event (reasoning or content) handed to the connection; streams only.
    pub first_output: Option<std::time::Instant>,
    /// First content event handed to the connection; streams only.
    pub first_content: Option<std::time::Instant>,
    /// The final bytes (`[DONE]` or the whole JSON body); `None` if the request was aborted.
    pub last_chunk: Option<std::time::Instant>,
}
