//! Reading one streamed completion: typed borrowed chunk parsing and per-request timing state.
//!
//! Each SSE `data` payload goes through the hand-written scan in `scan.rs`; what it declines
//! is parsed by serde into borrowed structs that only note whether a text field
//! is non-empty (no string is copied, no `serde_json::Value` is built); only the first choice
//! is read, the rest are skipped without allocating.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};

use super::record::ErrorKind;
use super::scan::{self, ChoiceFlags, ChunkSummary, UsageCounts};
use crate::workload::{ChatMessage, ToolCall};

/// Whether a JSON string is non-empty; `null` deserializes through `Option` as `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct NonEmpty(pub(super) bool);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = NonEmpty;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<NonEmpty, E> {
                Ok(NonEmpty(!s.is_empty()))
            }
        }
        d.deserialize_str(V)
    }
}

pub(super) fn non_empty(field: Option<NonEmpty>) -> bool {
    matches!(field, Some(NonEmpty(true)))
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<NonEmpty>,
    #[serde(default)]
    reasoning_content: Option<NonEmpty>,
    #[serde(default)]
    reasoning: Option<NonEmpty>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

/// One element of `delta.tool_calls`: a call's id, name or an argument fragment.
#[derive(Debug, Default, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<NonEmpty>,
    #[serde(default)]
    arguments: Option<NonEmpty>,
}

/// Whether any tool call in a delta carries a name or an argument fragment.
fn tool_call_output(calls: Option<Vec<ToolCallDelta>>) -> bool {
    calls.into_iter().flatten().any(|call| {
        call.function
            .is_some_and(|f| non_empty(f.name) || non_empty(f.arguments))
    })
}

#[derive(Debug, Default, Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    /// Completions API text.
    #[serde(default)]
    text: Option<NonEmpty>,
}

/// The first element of `choices`, the others skipped.
#[derive(Debug, Default)]
struct FirstChoice(Option<Choice>);

impl<'de> Deserialize<'de> for FirstChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FirstChoice;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FirstChoice, A::Error> {
                let first = seq.next_element::<Choice>()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
            fn visit_unit<E: de::Error>(self) -> Result<FirstChoice, E> {
                Ok(FirstChoice(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
}

/// One streamed chunk, as much of it as the measurement needs.
#[derive(Debug, Default, Deserialize)]
struct ChunkEvent<'a> {
    #[serde(default)]
    choices: FirstChoice,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<IgnoredAny>,
    /// vLLM and others mark some error payloads with `"object": "error"`.
    #[serde(default, borrow)]
    object: Option<std::borrow::Cow<'a, str>>,
}

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

/// What a server says it spent on one request.
///
/// llama.cpp's server sends `timings` (`prompt_ms`, `predicted_ms`, `prompt_n`,
/// `predicted_n`, …) on its last streamed chunk. vLLM started with
/// `--enable-per-request-metrics` sends `metrics` (`queue_time_ms`, `time_to_first_token_ms`
/// from scheduling, `generation_time_ms`) on its usage chunk. SGLang reports `queue_time` only
/// in its native `/generate` API's `meta_info`, not in its OpenAI-compatible stream. TGI's
/// timing headers (`x-queue-time`, …) come only with non-streamed responses: a stream's headers
/// leave before the work is done. So for those servers this stays empty.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ServerTimings {
    /// Waiting in the engine's scheduler queue (vLLM).
    pub queue_ms: Option<f64>,
    pub prompt_ms: Option<f64>,
    pub predicted_ms: Option<f64>,
}

impl ServerTimings {
    /// Queue (when reported), prompt and generation time, when the last two are known.
    pub fn total_ms(&self) -> Option<f64> {
        Some(self.queue_ms.unwrap_or(0.0) + self.prompt_ms? + self.predicted_ms?)
    }
}

#[derive(Debug, Default, Deserialize)]
struct TimingsEvent {
    #[serde(default)]
    timings: Option<Timings>,
    #[serde(default)]
    metrics: Option<VllmMetrics>,
}

/// vLLM's per-request `metrics`; any field may be `null`.
#[derive(Debug, Default, Deserialize)]
struct VllmMetrics {
    #[serde(default)]
    queue_time_ms: Option<f64>,
    #[serde(default)]
    time_to_first_token_ms: Option<f64>,
    #[serde(default)]
    generation_time_ms: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
struct Timings {
    #[serde(default)]
    prompt_ms: Option<f64>,
    #[serde(default)]
    predicted_ms: Option<f64>,
}

/// llama.cpp's `timings` or vLLM's `metrics`, read only from chunks that carry no text (the
/// last chunk, or the usage chunk), so the per-token path pays nothing.
fn server_timings(data: &[u8]) -> Option<ServerTimings> {
    // Built once: making a searcher costs more than searching a chunk with it.
    static KEYS: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 2]> =
        std::sync::LazyLock::new(|| {
            [
                memchr::memmem::Finder::new(b"\"timings\""),
                memchr::memmem::Finder::new(b"\"metrics\""),
            ]
        });
    KEYS.iter().find_map(|key| key.find(data))?;
    let event: TimingsEvent = serde_json::from_slice(data).ok()?;
    let finite = |v: Option<f64>| v.filter(|x| x.is_finite() && *x >= 0.0);
    if let Some(timings) = event.timings {
        return Some(ServerTimings {
            queue_ms: None,
            prompt_ms: finite(timings.prompt_ms),
            predicted_ms: finite(timings.predicted_ms),
        });
    }
    let metrics = event.metrics?;
    Some(ServerTimings {
        queue_ms: finite(metrics.queue_time_ms),
        prompt_ms: finite(metrics.time_to_first_token_ms),
        predicted_ms: finite(metrics.generation_time_ms),
    })
}

/// A chunk's reply pieces added to the reply so far: its content text (`delta.content`, or a
/// completion's `text`) to `reply`, and its tool-call pieces (id, name, argument fragments) to
/// `calls` by the calls' `index`. Only sessions pay this second, decoding parse.
fn append_reply(reply: &mut String, calls: &mut Vec<ToolCall>, data: &[u8]) {
    #[derive(Deserialize)]
    struct Chunk {
        #[serde(default)]
        choices: Vec<Choice>,
    }
    #[derive(Deserialize)]
    struct Choice {
        #[serde(default)]
        delta: Option<Delta>,
        #[serde(default)]
        text: Option<String>,
    }
    #[derive(Deserialize)]
    struct Delta {
        #[serde(default)]
        content: Option<String>,
        #[serde(default)]
        tool_calls: Option<Vec<Piece>>,
    }
    #[derive(Deserialize)]
    struct Piece {
        #[serde(default)]
        index: Option<usize>,
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        function: Option<Function>,
    }
    #[derive(Deserialize)]
    struct Function {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        arguments: Option<String>,
    }
    let Ok(chunk) = serde_json::from_slice::<Chunk>(data) else {
        return;
    };
    let mut pieces = None;
    for (i, choice) in chunk.choices.into_iter().enumerate() {
        let (content, tool_calls) = match choice.delta {
            Some(delta) => (delta.content, delta.tool_calls),
            None => (None, None),
        };
        if let Some(text) = content.or(choice.text) {
            reply.push_str(&text);
        }
        if i == 0 {
            pieces = tool_calls;
        }
    }
    for (k, piece) in pieces.into_iter().flatten().enumerate() {
        // Indices come in order from 0; one past the end (or a gap, a server's slip) opens
        // the next call.
        let at = piece.index.unwrap_or(k).min(calls.len());
        if at == calls.len() {
            calls.push(ToolCall::default());
        }
        let call = &mut calls[at];
        if let Some(id) = piece.id.filter(|id| !id.is_empty()) {
            call.id = id;
        }
        if let Some(f) = piece.function {
            call.name.push_str(&f.name.unwrap_or_default());
            call.arguments.push_str(&f.arguments.unwrap_or_default());
        }
    }
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

/// One chunk's measured fields: the hand-written scan, or serde when the scan declines.
pub fn parse_chunk(
    data: &[u8],
    memo: &mut scan::StreamMemo,
) -> Result<(ChunkSummary, bool), serde_json::Error> {
    match scan::fast_with_memo(data, memo) {
        Some(answer) => Ok(answer),
        None => parse_chunk_serde(data).map(|summary| (summary, true)),
    }
}

/// One chunk's measured fields through serde alone: the reference the scan must agree with.
pub fn parse_chunk_serde(data: &[u8]) -> Result<ChunkSummary, serde_json::Error> {
    let event: ChunkEvent<'_> = serde_json::from_slice(data)?;
    let choice = event.choices.0.map(|choice| {
        let (reasoning, content, tool_call) = match choice.delta {
            Some(delta) => (
                non_empty(delta.reasoning_content) || non_empty(delta.reasoning),
                non_empty(delta.content) || non_empty(choice.text),
                tool_call_output(delta.tool_calls),
            ),
            None => (false, non_empty(choice.text), false),
        };
        ChoiceFlags {
            reasoning,
            content,
            tool_call,
        }
    });
    let usage = event.usage.map(|usage| UsageCounts {
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cached_tokens: usage.prompt_tokens_details.and_then(|d| d.cached_tokens),
    });
    Ok(ChunkSummary {
        choice,
        usage,
        is_error: event.error.is_some() || event.object.as_deref() == Some("error"),
    })
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
        match parse_chunk(data, &mut self.chunk_memo) {
            Ok((event, may_carry_timings)) => {
                self.take_chunk(event, may_carry_timings, data, now_ms)
            }
            Err(err) => EventOutcome::Failed(StreamFailure {
                kind: ErrorKind::MalformedEvent,
                message: format!("event is not a completion chunk ({err}): {}", excerpt(data)),
                body: None,
            }),
        }
    }

    /// The whole `data:` events at the start of `bytes` whose chunks are this stream's
    /// template around a plain text, taken without the SSE parser or the scan (what they would
    /// make of them is the same): how many bytes they were, `None` for none. Most of a
    /// stream's events are such, and come several to a read.
    pub fn whole_templated_events(&mut self, bytes: &[u8], now_ms: f64) -> Option<usize> {
        if self.done || self.format != StreamFormat::Chunks || !self.chunk_memo.has_event_template()
        {
            return None;
        }
        // Whatever run is taken here ends where the template misses: the event the parser
        // goes on with need not be tried against it again.
        self.chunk_memo.note_template_missed();
        let (if_empty, if_text, names_timings) = self.chunk_memo.event_answers();
        let counted = |answer: &ChunkSummary| !answer.is_error && answer.usage.is_none();
        if self.reply.is_none() && !names_timings && counted(&if_empty) && counted(&if_text) {
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
        while let Some((len, chunk_len, (event, may_carry_timings))) =
            self.chunk_memo.whole_event(&bytes[taken..])
        {
            if event.is_error {
                break;
            }
            self.events += 1;
            let chunk = &bytes[taken + b"data: ".len()..][..chunk_len];
            self.take_chunk(event, may_carry_timings, chunk, now_ms);
            taken += len;
        }
        (taken > 0).then_some(taken)
    }

    /// `n` chunks that say `event` (no error, usage or server timing), all taken at `now_ms`:
    /// the first two set every time and gap that taking each would (from the third on, each
    /// finds the same times and a gap of zero again), the rest add only to the counts.
    fn take_repeated(&mut self, event: ChunkSummary, n: u64, now_ms: f64) {
        for _ in 0..n.min(2) {
            self.take_chunk(event, false, &[], now_ms);
        }
        let more = n.saturating_sub(2);
        if let Some(choice) = event.choice {
            self.reasoning_chunks += if choice.reasoning { more } else { 0 };
            self.content_chunks += if choice.content { more } else { 0 };
            self.tool_call_chunks += if choice.tool_call { more } else { 0 };
        }
    }

    /// What a parsed chunk says, taken into the stream's figures.
    fn take_chunk(
        &mut self,
        event: ChunkSummary,
        may_carry_timings: bool,
        data: &[u8],
        now_ms: f64,
    ) -> EventOutcome {
        if event.is_error {
            return EventOutcome::Failed(StreamFailure {
                kind: ErrorKind::ErrorObject,
                message: error_message(data),
                body: Some(data.to_vec()),
            });
        }
        if let Some(usage) = event.usage {
            // Keep what an earlier chunk reported if a later one omits a field.
            self.prompt_tokens = usage.prompt_tokens.or(self.prompt_tokens);
            self.completion_tokens = usage.completion_tokens.or(self.completion_tokens);
            if let Some(cached) = usage.cached_tokens {
                self.cached_tokens = Some(cached);
            }
        }
        let carries_text = event.choice.is_some_and(|c| c.reasoning || c.content);
        if !carries_text
            && may_carry_timings
            && let Some(timings) = server_timings(data)
        {
            self.server = timings;
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
            if let Some(reply) = self.reply.as_mut().filter(|_| content || tool_call) {
                append_reply(reply, &mut self.reply_tool_calls, data);
            }
            if reasoning || content || tool_call {
                self.output_at(now_ms);
            }
        }
        EventOutcome::Continue
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
            tool_call_id: None,
        })
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
mod tests {
    use super::*;
    use crate::client::sse::{EventKind, Events, SseParser};
    use std::ops::ControlFlow;

    /// A stream's events as the client takes them: whole templated events first, the rest
    /// through the SSE parser and `on_event`.
    struct Shortcut<'s>(&'s mut StreamState, f64);

    impl Events for Shortcut<'_> {
        fn whole_events(&mut self, bytes: &[u8]) -> Option<usize> {
            self.0.whole_templated_events(bytes, self.1)
        }

        fn event(&mut self, _: EventKind, data: &[u8]) -> ControlFlow<()> {
            match self.0.on_event(data, self.1) {
                EventOutcome::Continue => ControlFlow::Continue(()),
                _ => ControlFlow::Break(()),
            }
        }
    }

    /// What a stream's state says, for comparing two ways of reading one stream.
    fn figures(s: &StreamState) -> String {
        format!(
            "{:?}",
            (
                (s.events, s.done, s.content_chunks, s.reasoning_chunks),
                (s.first_output_ms, s.first_content_ms, s.last_output_ms),
                s.max_inter_chunk_ms,
                (s.prompt_tokens, s.completion_tokens, s.cached_tokens),
                (s.server.prompt_ms, s.server.total_ms()),
                &s.reply,
            )
        )
    }

    #[test]
    fn whole_templated_events_make_the_same_figures_as_the_parser_and_scan() {
        let head = r#"{"id":"c","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"#;
        let mut bytes = format!("data: {head}\"role\":\"assistant\",\"content\":\"\"}}}}]}}\n\n");
        for (i, text) in [" a", " b", " b2", " b3", "", "c\\\"d", " é", " e", "\\n"]
            .iter()
            .enumerate()
        {
            let field = if i == 7 {
                "reasoning_content"
            } else {
                "content"
            };
            bytes.push_str(&format!("data: {head}\"{field}\":\"{text}\"}}}}]}}\n\n"));
        }
        bytes.push_str(&format!("data: {head}\"content\":\" f\"}}}}]}}\r\n\r\n"));
        // A chunk over two `data:` lines (a line break between its tokens), then one line again.
        bytes.push_str(&format!(
            "data: {head}\ndata: \"content\":\" g\"}}}}]}}\n\n"
        ));
        bytes.push_str(&format!(
            "data: {head}\ndata: \"content\":\" g2\"}}}}]}}\n\n"
        ));
        bytes.push_str(&format!("data: {head}\"content\":\" h\"}}}}]}}\n\n"));
        bytes.push_str(&format!(
            "data: {head}}},\"finish_reason\":\"stop\"}}],\"timings\":{{\"prompt_ms\":4.5}}}}\n\n"
        ));
        bytes.push_str("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":7}}\n\ndata: [DONE]\n\n");
        let bytes = bytes.into_bytes();
        // Kept, the reply needs each event's text; without it, a run of events is counted.
        let reads = [1, 7, 64, 300, bytes.len()];
        for (read, reply) in reads
            .into_iter()
            .flat_map(|r| [(r, Some(String::new())), (r, None)])
        {
            let mut reference = StreamState {
                reply: reply.clone(),
                ..StreamState::default()
            };
            let mut parser = SseParser::default();
            let mut shortcut = StreamState {
                reply,
                ..StreamState::default()
            };
            let mut taking = SseParser::default();
            for (n, piece) in bytes.chunks(read).enumerate() {
                let now_ms = n as f64;
                parser
                    .feed(piece, |_, data| match reference.on_event(data, now_ms) {
                        EventOutcome::Continue => ControlFlow::Continue(()),
                        _ => ControlFlow::Break(()),
                    })
                    .expect("within cap");
                taking
                    .feed_to(piece, &mut Shortcut(&mut shortcut, now_ms))
                    .expect("within cap");
            }
            assert!(
                reference.done && reference.content_chunks == 11,
                "{}",
                figures(&reference)
            );
            assert_eq!(
                figures(&shortcut),
                figures(&reference),
                "reads of {read}, reply kept: {}",
                reference.reply.is_some()
            );
        }
    }

    fn feed(state: &mut StreamState, events: &[(&str, f64)]) -> EventOutcome {
        let mut last = EventOutcome::Continue;
        for (data, t) in events {
            last = state.on_event(data.as_bytes(), *t);
            if last != EventOutcome::Continue {
                break;
            }
        }
        last
    }

    #[test]
    fn llama_cpp_timings_on_the_last_chunk_are_kept() {
        let mut s = StreamState::default();
        let out = feed(
            &mut s,
            &[
                (
                    r#"{"choices":[{"delta":{"content":"hi"}}],"timings":{"prompt_ms":99.0}}"#,
                    1.0,
                ),
                (
                    r#"{"choices":[{"delta":{},"finish_reason":"length"}],"timings":{"prompt_n":5,"prompt_ms":12.5,"predicted_n":2,"predicted_ms":30.25}}"#,
                    2.0,
                ),
                ("[DONE]", 3.0),
            ],
        );
        assert_eq!(out, EventOutcome::Done);
        // Text-carrying chunks are not searched for timings; the last chunk's win.
        assert_eq!(s.server.prompt_ms, Some(12.5));
        assert_eq!(s.server.total_ms(), Some(42.75));
        let mut none = StreamState::default();
        feed(
            &mut none,
            &[(r#"{"choices":[],"timings":{"prompt_ms":"x"}}"#, 1.0)],
        );
        assert_eq!(none.server, ServerTimings::default());
    }

    #[test]
    fn vllm_per_request_metrics_on_the_usage_chunk_are_kept() {
        let mut s = StreamState::default();
        feed(
            &mut s,
            &[
                (r#"{"choices":[{"delta":{"content":"hi"}}]}"#, 1.0),
                (
                    r#"{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2},"metrics":{"time_to_first_token_ms":85.5,"generation_time_ms":40.0,"queue_time_ms":12.25,"mean_itl_ms":40.0,"tokens_per_second":15.8}}"#,
                    2.0,
                ),
                ("[DONE]", 3.0),
            ],
        );
        assert_eq!(s.server.queue_ms, Some(12.25));
        assert_eq!(s.server.prompt_ms, Some(85.5));
        assert_eq!(s.server.total_ms(), Some(137.75));
        // `null` fields (n > 1, or timing not available) leave nothing.
        let mut nulls = StreamState::default();
        feed(
            &mut nulls,
            &[(r#"{"choices":[],"metrics":null}"#, 1.0), ("[DONE]", 2.0)],
        );
        assert_eq!(nulls.server, ServerTimings::default());
        let mut partial = StreamState::default();
        feed(
            &mut partial,
            &[(
                r#"{"choices":[],"metrics":{"queue_time_ms":null,"time_to_first_token_ms":3.0,"generation_time_ms":null}}"#,
                1.0,
            )],
        );
        assert_eq!(partial.server.prompt_ms, Some(3.0));
        assert_eq!(partial.server.total_ms(), None);
    }

    #[test]
    fn vllm_reasoning_then_content_with_usage_chunk() {
        let mut s = StreamState::default();
        let out = feed(
            &mut s,
            &[
                (
                    r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
                    1.0,
                ),
                (
                    r#"{"choices":[{"delta":{"reasoning_content":"Let"}}]}"#,
                    10.0,
                ),
                (
                    r#"{"choices":[{"delta":{"reasoning_content":" me"}}]}"#,
                    12.0,
                ),
                (r#"{"choices":[{"delta":{"content":"Hi \"x\""}}]}"#, 20.0),
                (
                    r#"{"choices":[{"delta":{"content":"!"},"finish_reason":"stop"}]}"#,
                    25.0,
                ),
                (
                    r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":3}}}"#,
                    26.0,
                ),
                ("[DONE]", 27.0),
            ],
        );
        assert_eq!(out, EventOutcome::Done);
        assert_eq!(s.first_output_ms, Some(10.0));
        assert_eq!(s.first_content_ms, Some(20.0));
        assert_eq!(s.max_inter_chunk_ms, Some(8.0));
        assert_eq!((s.reasoning_chunks, s.content_chunks), (2, 2));
        assert_eq!(
            (s.prompt_tokens, s.completion_tokens, s.cached_tokens),
            (Some(7), Some(4), Some(3))
        );
        assert_eq!(
            s.output_tokens(),
            (4, super::super::OutputTokenSource::Usage)
        );
    }

    #[test]
    fn llama_cpp_null_content_and_usage_on_finish_chunk() {
        let mut s = StreamState::default();
        feed(
            &mut s,
            &[
                (
                    r#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#,
                    1.0,
                ),
                (r#"{"choices":[{"delta":{"reasoning":"hmm"}}]}"#, 5.0),
                (r#"{"choices":[{"delta":{"content":"ok"}}]}"#, 9.0),
                (
                    r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
                    9.5,
                ),
            ],
        );
        assert_eq!(
            (s.first_output_ms, s.first_content_ms),
            (Some(5.0), Some(9.0))
        );
        assert_eq!(s.completion_tokens, Some(2));
        assert_eq!(s.cached_tokens, None);
    }

    #[test]
    fn completions_text_and_counted_tokens() {
        let mut s = StreamState::default();
        feed(
            &mut s,
            &[
                (r#"{"choices":[{"text":"","index":0}]}"#, 1.0),
                (r#"{"choices":[{"text":"a"}]}"#, 2.0),
                (r#"{"choices":[{"text":"b"}]}"#, 3.0),
            ],
        );
        assert_eq!(s.first_content_ms, Some(2.0));
        assert_eq!(
            s.output_tokens(),
            (2, super::super::OutputTokenSource::Counted)
        );
    }

    #[test]
    fn malformed_and_error_events() {
        let mut s = StreamState::default();
        let out = s.on_event(b"{not json", 1.0);
        assert!(matches!(
            out,
            EventOutcome::Failed(StreamFailure {
                kind: ErrorKind::MalformedEvent,
                ..
            })
        ));
        let out = s.on_event(br#"{"choices":"nope"}"#, 1.0);
        assert!(matches!(
            out,
            EventOutcome::Failed(StreamFailure {
                kind: ErrorKind::MalformedEvent,
                ..
            })
        ));
        let out = s.on_event(br#"{"error":{"message":"overloaded","code":503}}"#, 1.0);
        assert_eq!(
            out,
            EventOutcome::Failed(StreamFailure {
                kind: ErrorKind::ErrorObject,
                message: "overloaded".into(),
                body: Some(br#"{"error":{"message":"overloaded","code":503}}"#.to_vec()),
            })
        );
        let out = s.on_event(
            br#"{"object":"error","message":"bad","type":"BadRequest"}"#,
            1.0,
        );
        assert!(matches!(
            out,
            EventOutcome::Failed(StreamFailure {
                kind: ErrorKind::ErrorObject,
                ..
            })
        ));
        // "error": null is not an error.
        assert_eq!(
            s.on_event(br#"{"choices":[],"error":null}"#, 1.0),
            EventOutcome::Continue
        );
    }

    #[test]
    fn tool_call_fragments_are_output_and_the_calls_are_kept() {
        let mut s = StreamState {
            reply: Some(String::new()),
            ..StreamState::default()
        };
        let out = feed(
            &mut s,
            &[
                (
                    r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#,
                    1.0,
                ),
                (
                    r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"search","arguments":""}}]}}]}"#,
                    5.0,
                ),
                (
                    r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\": \"x"}}]}}]}"#,
                    7.0,
                ),
                (
                    r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" y\"}"}}]}}]}"#,
                    12.0,
                ),
                (
                    r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"read","arguments":"{}"}}]}}]}"#,
                    13.0,
                ),
                (
                    r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
                    14.0,
                ),
                ("[DONE]", 15.0),
            ],
        );
        assert_eq!(out, EventOutcome::Done);
        assert_eq!((s.first_tool_call_ms, s.tool_call_chunks), (Some(5.0), 4));
        assert_eq!((s.first_output_ms, s.first_content_ms), (Some(5.0), None));
        assert_eq!(s.max_inter_chunk_ms, Some(5.0));
        assert_eq!(
            s.output_tokens(),
            (4, super::super::OutputTokenSource::Counted)
        );
        let reply = s.take_reply().expect("kept");
        assert_eq!(reply.content, "");
        let calls: Vec<(&str, &str, &str)> = reply
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                ("call_a", "search", r#"{"q": "x y"}"#),
                ("call_b", "read", "{}")
            ]
        );
        // Sent back as the API takes it.
        let sent = serde_json::to_value(&reply).expect("serializes");
        assert_eq!(sent["content"], serde_json::Value::Null);
        assert_eq!(sent["tool_calls"][0]["type"], "function");
        assert_eq!(
            sent["tool_calls"][0]["function"]["arguments"],
            r#"{"q": "x y"}"#
        );
    }

    #[test]
    fn a_malformed_tool_call_delta_is_a_clear_error() {
        let mut s = StreamState::default();
        match s.on_event(br#"{"choices":[{"delta":{"tool_calls":"x"}}]}"#, 1.0) {
            EventOutcome::Failed(StreamFailure {
                kind: ErrorKind::MalformedEvent,
                message,
                ..
            }) => assert!(message.contains("tool_calls"), "{message}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn excerpt_is_bounded_and_char_safe() {
        let long = "é".repeat(500);
        let e = excerpt(long.as_bytes());
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
    }
}
