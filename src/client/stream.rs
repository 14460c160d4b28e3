//! Reading one streamed completion: typed borrowed chunk parsing and per-request timing state.
//!
//! Each SSE `data` payload is parsed once: by the scan's shortcut (a stream's template, the
//! thread's known shapes, or the hand-written scan), or, where it declines, by serde into
//! borrowed structs that yield everything the stream keeps (flags, usage, the server's
//! timing, the reply's text and tool calls) in that one pass. Only the first choice is read,
//! the rest are skipped without allocating.

mod chunk;
mod reply;
mod timings;

pub use chunk::{FunctionPiece, ParsedChunk, ToolCallPiece, parse_chunk};
use reply::append_tool_calls;
pub use timings::ServerTimings;

use super::record::ErrorKind;
use super::scan::{self, ChoiceFlags, ChunkSummary, UsageCounts};
use crate::workload::{ChatMessage, ToolCall};

/// A stream ended the request early.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamFailure {
    pub kind: ErrorKind,
    pub message: String,
    /// An error object's payload, for the record's `error.body`, code and type.
    pub body: Option<Vec<u8>>,
}

/// What the caller should do after an event.
#[derive(Debug, Clone, PartialEq)]
pub enum EventOutcome {
    Continue,
    /// `[DONE]` arrived.
    Done,
    Failed(StreamFailure),
}

impl EventOutcome {
    /// A payload that is not `what` (e.g. "a Responses API event"): `malformed_event`, with
    /// the parser's reason and the payload's start.
    pub(super) fn malformed(what: &str, err: &serde_json::Error, data: &[u8]) -> Self {
        EventOutcome::Failed(StreamFailure {
            kind: ErrorKind::MalformedEvent,
            message: format!("event is not {what} ({err}): {}", excerpt(data)),
            body: None,
        })
    }
}

/// Everything observed on one response stream, times in ms since the request start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamState {
    pub first_output_ms: Option<f64>,
    pub first_content_ms: Option<f64>,
    pub last_output_ms: Option<f64>,
    pub max_inter_chunk_ms: Option<f64>,
    pub content_chunks: u64,
    pub reasoning_chunks: u64,
    /// First delta carrying a tool call's name or an argument fragment.
    pub first_tool_call_ms: Option<f64>,
    /// Deltas carrying a tool call's name or an argument fragment.
    pub tool_call_chunks: u64,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
    /// The usage's reasoning count (`completion_tokens_details` or `output_tokens_details`).
    pub reasoning_tokens: Option<u64>,
    /// vLLM's per-request acceptance (`metrics.speculative_decoding`).
    pub spec_decoding: Option<super::SpecDecoding>,
    pub done: bool,
    pub events: u64,
    /// The server's own timing of this request, when it sent one.
    pub server: ServerTimings,
    /// The reply's text so far, kept only when asked (a session's next turn carries it).
    pub reply: Option<String>,
    /// The reply's tool calls so far, kept with `reply`.
    pub reply_tool_calls: Vec<ToolCall>,
    /// The wire format of the events.
    pub format: StreamFormat,
    /// What this stream's chunks repeat, so most are answered without a scan.
    pub chunk_memo: scan::StreamMemo,
    /// A planned cancellation: drop the stream once this many output deltas came.
    pub cancel_after_deltas: Option<u64>,
    /// The client dropped the stream on purpose (a planned cancellation).
    pub cancelled: bool,
    /// Why the reply ended (`length`: cut by `max_tokens`), read with a kept reply.
    pub finish_reason: Option<String>,
}

/// Which events a stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamFormat {
    /// Chat and completions chunks, ended by `[DONE]`.
    #[default]
    Chunks,
    /// Responses API events, ended by `response.completed` (or `response.incomplete`).
    Responses,
    /// Messages API events, ended by `message_stop`.
    Messages,
}

/// At most this many characters of a payload go into an error message.
const EXCERPT_CHARS: usize = 200;

/// The first `EXCERPT_CHARS` characters of some bytes, lossily decoded, whitespace-trimmed.
pub fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// A readable message from an error payload: `error.message`, `message`, or an excerpt.
pub fn error_message(payload: &[u8]) -> String {
    let value: Option<serde_json::Value> = serde_json::from_slice(payload).ok();
    let message = value.as_ref().and_then(|v| {
        v.get("error")
            .and_then(|e| e.get("message").and_then(|m| m.as_str()).or(e.as_str()))
            .or_else(|| v.get("message").and_then(|m| m.as_str()))
    });
    match message {
        Some(m) => excerpt(m.as_bytes()),
        None => excerpt(payload),
    }
}

impl StreamState {
    /// Count one payload of any format; `[DONE]` ends every stream.
    pub(super) fn count_event(&mut self, data: &[u8]) -> Option<EventOutcome> {
        self.events += 1;
        (data == b"[DONE]").then(|| {
            self.done = true;
            EventOutcome::Done
        })
    }

    /// Take one SSE data payload of a chat or completions stream that arrived `now_ms` after
    /// the request start.
    pub fn on_event(&mut self, data: &[u8], now_ms: f64) -> EventOutcome {
        if let Some(done) = self.count_event(data) {
            return done;
        }
        // A kept reply needs the chunk's text, which only the full parse decodes.
        if self.reply.is_none()
            && let Some(summary) = scan::fast_with_memo(data, &mut self.chunk_memo)
        {
            return self.take_summary(summary, data, now_ms);
        }
        self.take_parsed(data, now_ms)
    }

    /// One chunk through the full parser alone, and what it says taken.
    fn take_parsed(&mut self, data: &[u8], now_ms: f64) -> EventOutcome {
        match parse_chunk(data) {
            Ok(chunk) => self.take_chunk(chunk, data, now_ms),
            Err(err) => EventOutcome::Failed(StreamFailure {
                kind: ErrorKind::MalformedEvent,
                message: format!("event is not a completion chunk ({err}): {}", excerpt(data)),
                body: None,
            }),
        }
    }

    /// [`StreamState::on_event`] without the scan's shortcut: the reference the shortcut
    /// must agree with.
    #[cfg(test)]
    pub(crate) fn on_event_parsed(&mut self, data: &[u8], now_ms: f64) -> EventOutcome {
        match self.count_event(data) {
            Some(done) => done,
            None => self.take_parsed(data, now_ms),
        }
    }

    /// What one chunk leaves in a fresh stream's state, taken from the shortcut's `answer`, or
    /// (`None`) parsed by the full parser: for tests that compare the two whole.
    #[cfg(test)]
    pub(crate) fn after_chunk(data: &[u8], answer: Option<ChunkSummary>) -> (Self, EventOutcome) {
        let mut state = StreamState::default();
        let outcome = match answer {
            Some(summary) => state.take_summary(summary, data, 1.0),
            None => state.take_parsed(data, 1.0),
        };
        (state.without_memo(), outcome)
    }

    /// The whole state but the scan's memo (which only says how the chunks were read): every
    /// other field, present or added later, is compared.
    #[cfg(test)]
    pub(crate) fn without_memo(&self) -> Self {
        StreamState {
            chunk_memo: scan::StreamMemo::default(),
            ..self.clone()
        }
    }

    /// The whole `data:` events at the start of `bytes` whose chunks are this stream's
    /// template around a plain text, taken without the SSE parser or the scan (what they would
    /// make of them is the same): how many bytes they were, `None` for none. Most of a
    /// stream's events are such, and come several to a read.
    pub fn whole_templated_events(&mut self, bytes: &[u8], now_ms: f64) -> Option<usize> {
        if self.done
            || self.format != StreamFormat::Chunks
            || self.reply.is_some()
            || !self.chunk_memo.has_event_template()
        {
            return None;
        }
        // Whatever run is taken here ends where the template misses: the event the parser
        // goes on with need not be tried against it again.
        self.chunk_memo.note_template_missed();
        let (if_empty, if_text) = self.chunk_memo.event_answers();
        let counted = |answer: Option<ChunkSummary>| {
            answer.filter(|answer| !answer.is_error && answer.usage.is_none())
        };
        if let (Some(if_empty), Some(if_text)) = (counted(if_empty), counted(if_text)) {
            // Such events change only counts and times, and a run of them shares one time.
            let (len, texts, empties) = self.chunk_memo.event_run(bytes);
            if len == 0 {
                return None;
            }
            self.events += texts + empties;
            self.take_repeated(if_text, texts, now_ms);
            self.take_repeated(if_empty, empties, now_ms);
            return Some(len);
        }
        let mut taken = 0;
        while let Some((len, chunk_len, Some(summary))) =
            self.chunk_memo.whole_event(&bytes[taken..])
        {
            if summary.is_error {
                break;
            }
            self.events += 1;
            let chunk = &bytes[taken + b"data: ".len()..][..chunk_len];
            self.take_summary(summary, chunk, now_ms);
            taken += len;
        }
        (taken > 0).then_some(taken)
    }

    /// `n` chunks that say `event` (no error or usage), all taken at `now_ms`:
    /// the first two set every time and gap that taking each would (from the third on, each
    /// finds the same times and a gap of zero again), the rest add only to the counts.
    fn take_repeated(&mut self, event: ChunkSummary, n: u64, now_ms: f64) {
        for _ in 0..n.min(2) {
            self.take_summary(event, &[], now_ms);
        }
        let more = n.saturating_sub(2);
        if let Some(choice) = event.choice {
            self.reasoning_chunks += if choice.reasoning { more } else { 0 };
            self.content_chunks += if choice.content { more } else { 0 };
            self.tool_call_chunks += if choice.tool_call { more } else { 0 };
        }
    }

    /// What the full parser read from a chunk: its summary, then the server's timing (from a
    /// chunk without text: the last chunk, or the usage chunk) and the kept reply's pieces.
    fn take_chunk(&mut self, chunk: ParsedChunk<'_>, data: &[u8], now_ms: f64) -> EventOutcome {
        let outcome = self.take_summary(chunk.summary, data, now_ms);
        if outcome != EventOutcome::Continue {
            return outcome;
        }
        if let Some(timings) = chunk.timings.filter(|_| !chunk.summary.carries_text()) {
            self.server = timings;
        }
        if chunk.spec_decoding.is_some() {
            self.spec_decoding = chunk.spec_decoding;
        }
        let choice = chunk.summary.choice.unwrap_or_default();
        if let Some(reply) = self
            .reply
            .as_mut()
            .filter(|_| choice.content || choice.tool_call)
        {
            reply.push_str(chunk.content.as_deref().unwrap_or_default());
            append_tool_calls(&mut self.reply_tool_calls, chunk.tool_calls);
        }
        if let Some(reason) = chunk.finish_reason.filter(|_| self.reply.is_some()) {
            self.finish_reason = Some(reason.into_owned());
        }
        outcome
    }

    /// What a chunk's summary says, taken into the stream's figures; `data` is the chunk, for
    /// an error object's message and body.
    fn take_summary(&mut self, event: ChunkSummary, data: &[u8], now_ms: f64) -> EventOutcome {
        if event.is_error {
            return EventOutcome::Failed(StreamFailure {
                kind: ErrorKind::ErrorObject,
                message: error_message(data),
                body: Some(data.to_vec()),
            });
        }
        if let Some(usage) = event.usage {
            self.take_usage(usage);
        }
        if let Some(ChoiceFlags {
            reasoning,
            content,
            tool_call,
        }) = event.choice
        {
            if reasoning {
                self.reasoning_chunks += 1;
            }
            if content {
                self.content_chunks += 1;
                self.first_content_ms.get_or_insert(now_ms);
            }
            if tool_call {
                self.tool_call_chunks += 1;
                self.first_tool_call_ms.get_or_insert(now_ms);
            }
            if reasoning || content || tool_call {
                self.output_at(now_ms);
            }
        }
        EventOutcome::Continue
    }

    /// A usage object's counts, in any API's stream: a count it omits keeps what an earlier
    /// event reported.
    pub(super) fn take_usage(&mut self, usage: UsageCounts) {
        self.prompt_tokens = usage.prompt_tokens.or(self.prompt_tokens);
        self.completion_tokens = usage.completion_tokens.or(self.completion_tokens);
        self.cached_tokens = usage.cached_tokens.or(self.cached_tokens);
        self.reasoning_tokens = usage.reasoning_tokens.or(self.reasoning_tokens);
    }

    /// An output event (reasoning, content or a tool-call fragment) at `now_ms`.
    pub(super) fn output_at(&mut self, now_ms: f64) {
        self.first_output_ms.get_or_insert(now_ms);
        if let Some(last_ms) = self.last_output_ms {
            let gap_ms = now_ms - last_ms;
            if self.max_inter_chunk_ms.is_none_or(|max| gap_ms > max) {
                self.max_inter_chunk_ms = Some(gap_ms);
            }
        }
        self.last_output_ms = Some(now_ms);
    }

    /// What ends a successful stream, for the message when it never came.
    pub fn end_marker(&self) -> &'static str {
        match self.format {
            StreamFormat::Chunks => "[DONE]",
            StreamFormat::Responses => "response.completed",
            StreamFormat::Messages => "message_stop",
        }
    }

    /// The reply as the assistant message a session's next turn carries: its text and tool
    /// calls; `None` unless the reply was kept.
    pub fn take_reply(&mut self) -> Option<ChatMessage> {
        let content = self.reply.take()?;
        Some(ChatMessage {
            role: "assistant".into(),
            content,
            tool_calls: std::mem::take(&mut self.reply_tool_calls),
            ..ChatMessage::default()
        })
    }

    /// Reasoning tokens: the usage's count when it is positive; else, when reasoning text
    /// streamed (a server that reports 0 or nothing while it streams reasoning), counted from
    /// the stream: the reasoning deltas' share of the usage's output tokens when those were
    /// sent (deltas may carry several tokens), else the reasoning deltas. `None` when neither
    /// the usage nor the stream says anything of reasoning.
    pub fn reasoning_tokens(&self) -> Option<(u64, super::OutputTokenSource)> {
        use super::OutputTokenSource::{Counted, Usage};
        match (self.reasoning_tokens, self.reasoning_chunks) {
            (Some(n), _) if n > 0 => Some((n, Usage)),
            (reported, 0) => reported.map(|n| (n, Usage)),
            (_, chunks) => {
                let deltas = self.content_chunks + chunks + self.tool_call_chunks;
                let counted = match self.completion_tokens {
                    Some(total) => (total as f64 * chunks as f64 / deltas as f64).round() as u64,
                    None => chunks,
                };
                Some((counted, Counted))
            }
        }
    }

    /// Output tokens: from usage when sent, else the number of text-carrying deltas (a lower
    /// bound when a server packs several tokens into one delta).
    pub fn output_tokens(&self) -> (u64, super::OutputTokenSource) {
        match self.completion_tokens {
            Some(n) => (n, super::OutputTokenSource::Usage),
            None => (
                self.content_chunks + self.reasoning_chunks + self.tool_call_chunks,
                super::OutputTokenSource::Counted,
            ),
        }
    }
}

#[cfg(test)]
mod tests;
