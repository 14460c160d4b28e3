//! One generation as a poll-driven state machine: queue slot, prefill, timed token events, the
//! finish/usage/`[DONE]` tail, mid-stream faults; it is also the streaming response body.

mod body;
mod guards;
pub(crate) mod structured;
mod vocab;
mod wire;

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::{AcquireError, OwnedSemaphorePermit};
use tokio::time::{Instant, Sleep};

use super::RoleChunk;
use super::api::Api;
use super::cache::block_hashes;
use super::rng::{STREAM_TIMING, STREAM_WORDS, SimRng};
use super::state::{SendTimes, Shared};

pub(crate) use body::SimBody;
use guards::{InFlight, Running, Waiting};
use vocab::next_word;
pub(crate) use vocab::seconds;
use wire::Templates;

/// Batched events are handed to hyper once this many bytes are ready.
const FLUSH_BYTES: usize = 16 * 1024;

/// A fault that strikes after some output tokens.
#[derive(Debug, Clone, Copy)]
pub(crate) enum MidFault {
    Disconnect,
    Stall(Duration),
    Malformed,
}

/// Everything fixed about a generation before it starts.
#[derive(Debug)]
pub(crate) struct GenSpec {
    pub api: Api,
    pub stream: bool,
    pub include_usage: bool,
    pub seq: u64,
    pub request_id: Option<String>,
    /// The adapter the request named: its reply names it, as vLLM's does (any other reply
    /// names the served model).
    pub adapter: Option<String>,
    pub received: Instant,
    pub created_unix_s: u64,
    /// Prompt token ids, kept only when the prefix cache needs them.
    pub prompt_ids: Vec<u32>,
    /// The request's `cache_salt`, mixed into its prefix-cache hashes.
    pub cache_salt: Option<String>,
    pub prompt_tokens: u64,
    pub reasoning_tokens: u64,
    pub content_tokens: u64,
    pub finish_reason: &'static str,
    /// Chat: the reply is this tool call, its content tokens the arguments' words.
    pub tool_call: Option<ToolPlan>,
    /// The fault and the output-token count after which it strikes.
    pub fault: Option<(MidFault, u64)>,
    pub missing_done: bool,
    /// Structured output: the reply's text in pieces, one per token, sent in place of
    /// words (each token also costs the grammar's `grammar_ms_per_token`).
    pub structured: Option<Vec<String>>,
    /// The request carries a `response_format`: each token costs `grammar_ms_per_token`.
    pub grammar: bool,
}

/// The tool call a reply makes.
#[derive(Debug, Clone)]
pub(crate) struct ToolPlan {
    pub id: String,
    pub name: String,
    /// The parameter the generated words go in: arguments `{"<key>": "<words>"}`.
    pub key: String,
}

impl ToolPlan {
    /// The arguments' text before and after the words.
    fn arguments_around(&self) -> (String, &'static str) {
        let key = serde_json::Value::String(self.key.clone()).to_string();
        (format!("{{{key}: \""), "\"}")
    }
}

/// `text` as the inside of a JSON string (escaped, no quotes).
fn json_inner(text: &str) -> String {
    let quoted = serde_json::Value::String(text.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

type Acquire = Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send>>;

enum State {
    Start,
    Queued(Acquire),
    Tokens,
    Finish,
    Done,
}

pub(crate) struct Generation {
    shared: Arc<Shared>,
    spec: GenSpec,
    state: State,
    templates: Templates,
    buf: BytesMut,
    words: SimRng,
    timing: SimRng,
    timer: Option<Pin<Box<Sleep>>>,
    deadline: Instant,
    now: Instant,
    emitted_reasoning: u64,
    emitted_content: u64,
    cached_tokens: u64,
    prefill_start: Instant,
    prefill_end: Instant,
    first_output: Option<Instant>,
    first_content: Option<Instant>,
    last_chunk: Option<Instant>,
    fault_fired: bool,
    disconnect_yielded: bool,
    reasoning_text: String,
    content_text: String,
    in_flight: Option<InFlight>,
    waiting: Option<Waiting>,
    running: Option<Running>,
    finished: bool,
    /// The draft model, when the simulator decodes speculatively.
    draft: Option<crate::sim::speculative::Draft>,
}

impl Generation {
    pub fn new(shared: Arc<Shared>, spec: GenSpec) -> Self {
        let templates = Templates::new(&spec, &shared);
        let now = Instant::now();
        let draft = shared
            .settings
            .speculative
            .map(|d| crate::sim::speculative::Draft::new(d, shared.settings.seed, spec.seq));
        Generation {
            draft,
            words: SimRng::new(shared.settings.seed, spec.seq, STREAM_WORDS),
            timing: SimRng::new(shared.settings.seed, spec.seq, STREAM_TIMING),
            in_flight: Some(InFlight::enter(shared.clone())),
            shared,
            spec,
            state: State::Start,
            templates,
            buf: BytesMut::new(),
            timer: None,
            deadline: now,
            now,
            emitted_reasoning: 0,
            emitted_content: 0,
            cached_tokens: 0,
            prefill_start: now,
            prefill_end: now,
            first_output: None,
            first_content: None,
            last_chunk: None,
            fault_fired: false,
            disconnect_yielded: false,
            reasoning_text: String::new(),
            content_text: String::new(),
            waiting: None,
            running: None,
            finished: false,
        }
    }

    fn total_tokens(&self) -> u64 {
        self.spec.reasoning_tokens + self.spec.content_tokens
    }

    fn emitted(&self) -> u64 {
        self.emitted_reasoning + self.emitted_content
    }

    /// Tokens in the next event (0 when all are out); events never mix reasoning and content.
    /// With a draft model, a verify step's accepted tokens and its bonus token.
    fn next_event_tokens(&mut self) -> u64 {
        let chunk = u64::from(self.shared.settings.chunk_tokens);
        let remaining = if self.emitted_reasoning < self.spec.reasoning_tokens {
            self.spec.reasoning_tokens - self.emitted_reasoning
        } else {
            self.spec.content_tokens - self.emitted_content
        };
        match self.draft.as_mut() {
            Some(draft) => draft.next_tokens(remaining),
            None => chunk.min(remaining),
        }
    }

    /// The event just sent was a verify step: count it on `/metrics`.
    fn count_draft_step(&mut self) {
        let Some((drafted, accepted)) = self.draft.as_mut().and_then(|d| d.take()) else {
            return;
        };
        let counters = &self.shared.counters;
        counters.spec_drafts.fetch_add(1, Relaxed);
        counters.spec_draft_tokens.fetch_add(drafted, Relaxed);
        counters.spec_accepted_tokens.fetch_add(accepted, Relaxed);
    }

    /// Decode time for `tokens` tokens at the current batch size, jittered.
    fn decode_delay(&mut self, tokens: u64) -> Duration {
        let settings = &self.shared.settings;
        if tokens == 0
            || (settings.decode_ms_per_token == 0.0
                && settings.decode_ms_per_running == 0.0
                && (settings.grammar_ms_per_token == 0.0 || !self.spec.grammar))
        {
            return Duration::ZERO;
        }
        let running = self.shared.counters.running.load(Relaxed).max(1) as f64;
        let grammar = if self.spec.grammar {
            settings.grammar_ms_per_token
        } else {
            0.0
        };
        let ms_per_token = settings.decode_ms_per_token
            + settings.decode_ms_per_running * (running - 1.0)
            + grammar;
        let factor = self.timing.jitter_factor(settings.jitter);
        seconds(ms_per_token * tokens as f64 * factor / 1000.0)
    }

    fn take_buf(&mut self) -> Bytes {
        self.buf.split().freeze()
    }

    /// Take a slot: count prompt tokens, consult the prefix cache, schedule prefill (one
    /// prefill runs at a time, like an engine's forward pass) and the first token event.
    fn admit(&mut self, permit: OwnedSemaphorePermit) {
        self.waiting = None;
        let counters = &self.shared.counters;
        let running = counters.running.fetch_add(1, Relaxed) + 1;
        counters.max_running.fetch_max(running, Relaxed);
        if let Some(power) = &self.shared.power {
            power.started();
        }
        self.running = Some(Running {
            shared: self.shared.clone(),
            permit: Some(permit),
        });
        counters
            .prompt_tokens
            .fetch_add(self.spec.prompt_tokens, Relaxed);
        if let (Some(cache), Some(cache_settings)) =
            (&self.shared.cache, &self.shared.settings.prefix_cache)
        {
            let hashes = block_hashes(
                &self.spec.prompt_ids,
                cache_settings.block_tokens,
                self.spec.cache_salt.as_deref(),
            );
            let mut cache = cache.lock().unwrap_or_else(|poison| poison.into_inner());
            self.cached_tokens = cache.admit(&hashes, self.spec.prompt_tokens);
            counters.evicted_blocks.store(cache.evicted_blocks, Relaxed);
            drop(cache);
            counters
                .prefix_queries
                .fetch_add(self.spec.prompt_tokens, Relaxed);
            counters.prefix_hits.fetch_add(self.cached_tokens, Relaxed);
        }
        let now = Instant::now();
        let uncached = self.spec.prompt_tokens - self.cached_tokens;
        let prefill_s = uncached as f64
            * self.shared.settings.prefill_s_per_token
            * self.timing.jitter_factor(self.shared.settings.jitter);
        let (start, end) = if prefill_s > 0.0 {
            let duration = seconds(prefill_s);
            let mut busy_until = self
                .shared
                .prefill_busy_until
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            let start = (*busy_until).max(now);
            *busy_until = start + duration;
            (start, start + duration)
        } else {
            (now, now)
        };
        self.prefill_start = start;
        self.prefill_end = end;
        self.now = now;
        // The prefill produces the first token; the rest of the first event is decoded.
        let first = self.next_event_tokens();
        self.deadline = end + self.decode_delay(first.saturating_sub(1));
    }

    /// Write the next token event (and the role chunk before the first one).
    fn emit_event(&mut self) {
        let tokens = self.next_event_tokens();
        let reasoning = self.emitted_reasoning < self.spec.reasoning_tokens;
        let stamp = if self.spec.stream {
            Some(Instant::now())
        } else {
            None
        };
        if self.emitted() == 0 {
            let counters = &self.shared.counters;
            counters
                .ttft
                .observe(Instant::now().saturating_duration_since(self.spec.received));
            self.first_output = stamp;
            if self.spec.stream {
                self.put_opening_events();
            }
        }
        if !reasoning && self.emitted_content == 0 {
            self.first_content = stamp;
        }
        if self.spec.stream {
            self.put_token_event(tokens, reasoning);
        } else {
            self.push_words(tokens, reasoning);
        }
        if reasoning {
            self.emitted_reasoning += tokens;
        } else {
            self.emitted_content += tokens;
        }
        self.shared
            .counters
            .generation_tokens
            .fetch_add(tokens, Relaxed);
        self.count_draft_step();
        let next = self.next_event_tokens();
        if next > 0 {
            let delay = self.decode_delay(next);
            self.deadline += delay;
        }
    }

    /// A stream's events before its first token: the Responses API's `response.created`,
    /// the Messages API's `message_start`, or chat's role chunk.
    fn put_opening_events(&mut self) {
        if self.spec.api == Api::Responses {
            let created = self.response_object("in_progress", serde_json::Value::Null);
            let event = serde_json::json!({"type": "response.created", "response": created});
            self.buf.put_slice(b"event: response.created\ndata: ");
            self.buf.put_slice(event.to_string().as_bytes());
            self.buf.put_slice(b"\n\n");
        }
        if self.spec.api == Api::Messages {
            self.put_message_start();
        }
        if self.spec.api == Api::Chat {
            let role = match self.shared.settings.role_chunk {
                RoleChunk::Empty => Some("\"\""),
                RoleChunk::Null => Some("null"),
                RoleChunk::None => None,
            };
            if let Some(content) = role {
                let head = &self.templates.head;
                let chunk = format!(
                    "data: {head}[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":{content}}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
                );
                self.buf.put_slice(chunk.as_bytes());
            }
        }
    }

    /// One streamed event of `tokens` words: the tool call's first and last events carry its
    /// opening and closing.
    fn put_token_event(&mut self, tokens: u64, reasoning: bool) {
        let first_of_call = self.emitted_content == 0;
        let last_of_call = self.emitted_content + tokens == self.spec.content_tokens;
        let prefix = match (&self.templates.first_content_prefix, reasoning) {
            (_, true) => &self.templates.reasoning_prefix,
            (Some(first), false) if first_of_call => first,
            (_, false) => &self.templates.content_prefix,
        };
        self.buf
            .reserve(prefix.len() + self.templates.suffix.len() + 12 * tokens as usize);
        self.buf.put_slice(prefix);
        // The reply's text is kept only for `record_requests` (and a Responses API
        // reply's last event).
        let keep =
            !reasoning && (self.shared.requests.is_some() || self.spec.api == Api::Responses);
        if !reasoning && let Some(pieces) = &self.spec.structured {
            let from = self.emitted_content as usize;
            for piece in pieces.iter().skip(from).take(tokens as usize) {
                let quoted = serde_json::Value::String(piece.clone()).to_string();
                self.buf.put_slice(&quoted.as_bytes()[1..quoted.len() - 1]);
                self.content_text.push_str(piece);
            }
            let suffix = match self.templates.last_suffix {
                Some(last) if last_of_call => last,
                _ => self.templates.suffix,
            };
            self.buf.put_slice(suffix);
            return;
        }
        for _ in 0..tokens {
            let word = next_word(&mut self.words);
            self.buf.put_u8(b' ');
            self.buf.put_slice(word.as_bytes());
            if keep {
                self.content_text.push(' ');
                self.content_text.push_str(word);
            }
        }
        let suffix = match self.templates.last_suffix {
            Some(last) if !reasoning && last_of_call => last,
            _ => self.templates.suffix,
        };
        self.buf.put_slice(suffix);
    }

    /// A whole-body reply: `tokens` words onto its reasoning or content text.
    fn push_words(&mut self, tokens: u64, reasoning: bool) {
        if !reasoning && let Some(pieces) = &self.spec.structured {
            let from = self.emitted_content as usize;
            for piece in pieces.iter().skip(from).take(tokens as usize) {
                self.content_text.push_str(piece);
            }
            return;
        }
        let text = if reasoning {
            &mut self.reasoning_text
        } else {
            &mut self.content_text
        };
        for _ in 0..tokens {
            let word = next_word(&mut self.words);
            text.push(' ');
            text.push_str(word);
        }
    }

    /// Wait for `deadline`; flushes batched events before sleeping.
    fn wait_deadline(&mut self, cx: &mut Context<'_>) -> Option<Poll<Option<io::Result<Bytes>>>> {
        if self.deadline <= self.now {
            return None;
        }
        self.now = Instant::now();
        if self.deadline <= self.now {
            return None;
        }
        if !self.buf.is_empty() {
            return Some(Poll::Ready(Some(Ok(self.take_buf()))));
        }
        let deadline = self.deadline;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.deadline() != deadline {
            timer.as_mut().reset(deadline);
        }
        if timer.as_mut().poll(cx).is_pending() {
            return Some(Poll::Pending);
        }
        self.now = Instant::now();
        None
    }

    /// The mid-stream fault, once its token count is reached.
    fn due_fault(&mut self) -> Option<MidFault> {
        let (fault, after_tokens) = self.spec.fault?;
        if self.fault_fired || self.emitted() < after_tokens.min(self.total_tokens()) {
            return None;
        }
        self.fault_fired = true;
        Some(fault)
    }

    /// Apply a due fault; `Some` is what to return from `poll_frame`.
    fn apply_fault(&mut self, fault: MidFault) -> Option<Poll<Option<io::Result<Bytes>>>> {
        self.shared.counters.faults_injected.fetch_add(1, Relaxed);
        match fault {
            MidFault::Disconnect => {
                self.running = None;
                self.state = State::Done;
                Some(Poll::Ready(Some(Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "simulated disconnect mid-stream",
                )))))
            }
            MidFault::Stall(duration) => {
                self.deadline = self.deadline.max(Instant::now()) + duration;
                None
            }
            MidFault::Malformed => {
                if self.spec.stream {
                    // Cut a chunk mid-JSON: a well-framed SSE event whose data does not parse.
                    self.buf.put_slice(b"data: ");
                    self.buf.put_slice(self.templates.head.as_bytes());
                    self.buf
                        .put_slice(b"[{\"index\":0,\"delta\":{\"content\":\n\n");
                }
                None
            }
        }
    }

    /// Release the slot and in-flight count, and keep the send timestamps.
    fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.running = None;
        self.waiting = None;
        self.in_flight = None;
        if let Some(log) = &self.shared.timestamps {
            let mut log = log.lock().unwrap_or_else(|poison| poison.into_inner());
            if log.len() < super::state::MAX_RECORDED_REQUESTS {
                log.push(SendTimes {
                    request_id: self.spec.request_id.take(),
                    seq: self.spec.seq,
                    received: self.spec.received.into_std(),
                    first_output: self.first_output.map(Instant::into_std),
                    first_content: self.first_content.map(Instant::into_std),
                    last_chunk: self.last_chunk.map(Instant::into_std),
                });
            }
        }
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        loop {
            match &mut self.state {
                State::Start => {
                    let counters = &self.shared.counters;
                    counters.waiting.fetch_add(1, Relaxed);
                    self.waiting = Some(Waiting(self.shared.clone()));
                    self.state = State::Queued(Box::pin(self.shared.slots.clone().acquire_owned()));
                }
                State::Queued(acquire) => {
                    let permit = match acquire.as_mut().poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Ok(permit)) => permit,
                        Poll::Ready(Err(_)) => {
                            self.state = State::Done;
                            return Poll::Ready(Some(Err(io::Error::other(
                                "simulator shutting down",
                            ))));
                        }
                    };
                    self.admit(permit);
                    self.state = State::Tokens;
                }
                State::Tokens => {
                    if let Some(fault) = self.due_fault() {
                        if matches!(fault, MidFault::Disconnect) && self.spec.stream {
                            // Deliver what was generated before cutting the connection: hand
                            // over the batch, then yield once so hyper flushes it to the socket.
                            if !self.buf.is_empty() {
                                self.fault_fired = false;
                                return Poll::Ready(Some(Ok(self.take_buf())));
                            }
                            if !self.disconnect_yielded {
                                self.disconnect_yielded = true;
                                self.fault_fired = false;
                                cx.waker().wake_by_ref();
                                return Poll::Pending;
                            }
                        }
                        if let Some(poll) = self.apply_fault(fault) {
                            return poll;
                        }
                    }
                    if self.emitted() == self.total_tokens() {
                        self.state = State::Finish;
                        continue;
                    }
                    if let Some(poll) = self.wait_deadline(cx) {
                        return poll;
                    }
                    self.emit_event();
                    if self.buf.len() >= FLUSH_BYTES {
                        return Poll::Ready(Some(Ok(self.take_buf())));
                    }
                }
                State::Finish => {
                    if let Some(poll) = self.wait_deadline(cx) {
                        return poll;
                    }
                    self.write_tail();
                    self.state = State::Done;
                    return Poll::Ready(Some(Ok(self.take_buf())));
                }
                State::Done => {
                    self.finish();
                    return Poll::Ready(None);
                }
            }
        }
    }
}

impl Drop for Generation {
    fn drop(&mut self) {
        if !self.finished {
            let counters = &self.shared.counters;
            counters.finished_abort.fetch_add(1, Relaxed);
            // `leak_aborted_slots`: the first so many aborted requests keep their slots.
            let limit = u64::from(self.shared.settings.leak_aborted_slots);
            if let Some(running) = self.running.take()
                && counters
                    .leaked_slots
                    .fetch_update(Relaxed, Relaxed, |n| (n < limit).then_some(n + 1))
                    .is_ok()
            {
                running.leak();
            }
            self.last_chunk = None;
            self.finish();
        }
    }
}
