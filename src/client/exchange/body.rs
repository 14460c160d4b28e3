//! Reading a response's body: an event stream to its end marker, or an embeddings or rerank
//! JSON body, into the stream state.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use hyper::body::Incoming;

use super::super::config::Api;
use super::super::failure::{Deadlines, Failure, Waited, Which, error_chain, ms_since, next_chunk};
use super::super::pool::Lease;
use super::super::record::ErrorKind;
use super::super::sse::{EventKind, Events, SseParser};
use super::super::stream::{self, EventOutcome, StreamFailure, StreamFormat, StreamState, excerpt};
use super::Client;

/// After `[DONE]`, how long to wait for the body's end so the connection can be reused.
const DRAIN_WAIT: Duration = Duration::from_millis(500);

impl Client {
    /// Read an event stream to `[DONE]` (and the body's end); whether the body ended comes back
    /// with the result, so the connection can go back to the pool.
    pub(super) async fn read_stream(
        &self,
        body: &mut Incoming,
        (start, lease, head_read): (Instant, &Lease, (u64, Instant)),
        deadlines: &mut Deadlines,
        state: &mut StreamState,
    ) -> (Result<f64, Failure>, bool) {
        let mut parser = SseParser::new(self.max_event_bytes);
        // The connection's byte count when the clock was last read, and that reading.
        let mut stamped = head_read;
        loop {
            let chunk = match deadlines.wait(next_chunk(body)).await {
                Waited::Done(Ok(chunk)) => chunk,
                Waited::Done(Err(err)) => {
                    let message = format!(
                        "stream broke after {} events: {}",
                        state.events,
                        error_chain(&err)
                    );
                    return (Err(Failure::new(ErrorKind::StreamBroken, message)), false);
                }
                Waited::TimedOut(Which::Own) => {
                    let message = format!(
                        "no bytes within the idle timeout after {} events",
                        state.events
                    );
                    return (Err(Failure::new(ErrorKind::IdleTimeout, message)), false);
                }
                Waited::TimedOut(Which::Total) => return (Err(Failure::total()), false),
            };
            // Frames cut from what one socket read brought share that read's timestamp: they
            // arrived together, and a clock read per frame cost more than its scan. A shared
            // HTTP/2 connection's count moves with other streams too, so it reads more often.
            let read = lease.bytes_read();
            let now = if stamped.0 == read {
                stamped.1
            } else {
                stamped = (read, Instant::now());
                stamped.1
            };
            deadlines.saw_bytes(now);
            let now_ms = ms_since(start, now);
            let Some(chunk) = chunk else {
                return (finish_stream(&mut parser, state, now_ms), true);
            };
            let mut events = StreamEvents {
                state: &mut *state,
                now_ms,
                failure: None,
            };
            let fed = parser.feed_to(&chunk, &mut events);
            let failure = events.failure;
            if let Err(e) = fed {
                return (
                    Err(Failure::new(ErrorKind::MalformedEvent, e.to_string())),
                    false,
                );
            }
            if let Some(failure) = failure {
                return (Err(failure.into()), false);
            }
            if state.done {
                // Let go of the read's bytes first: while any part of hyper's read buffer is
                // held, its next read (the body's end) takes a new 8 KiB buffer.
                drop(chunk);
                deadlines.drain_until(now + DRAIN_WAIT);
                return (Ok(now_ms), drain(body, deadlines).await);
            }
            if let Some(limit) = state.cancel_after_deltas
                && state.content_chunks + state.reasoning_chunks + state.tool_call_chunks >= limit
            {
                // Not given back to the pool: the connection closes, as a user's client does,
                // and the server sees the disconnect.
                state.cancelled = true;
                return (Ok(now_ms), false);
            }
        }
    }

    /// An embeddings or rerank response: the whole JSON body, its usage, and as many results
    /// as the request sent inputs (rerank's `top_n` may return fewer).
    pub(super) async fn read_json(
        &self,
        body: &mut Incoming,
        status: hyper::StatusCode,
        (start, inputs): (Instant, u64),
        deadlines: &mut Deadlines,
        state: &mut StreamState,
    ) -> (Result<f64, Failure>, bool) {
        let mut bytes = Vec::new();
        loop {
            match deadlines.wait(next_chunk(body)).await {
                Waited::Done(Ok(Some(chunk))) if bytes.len() + chunk.len() > MAX_JSON_BYTES => {
                    let message = format!("response body over {} MiB", MAX_JSON_BYTES >> 20);
                    return (Err(Failure::new(ErrorKind::MalformedEvent, message)), false);
                }
                Waited::Done(Ok(Some(chunk))) => {
                    deadlines.saw_bytes(Instant::now());
                    bytes.extend_from_slice(&chunk);
                }
                Waited::Done(Ok(None)) => break,
                Waited::Done(Err(err)) => {
                    let message = format!(
                        "body broke after {} bytes: {}",
                        bytes.len(),
                        error_chain(&err)
                    );
                    return (Err(Failure::new(ErrorKind::StreamBroken, message)), false);
                }
                Waited::TimedOut(Which::Own) => {
                    let message = format!(
                        "no bytes within the idle timeout after {} bytes",
                        bytes.len()
                    );
                    return (Err(Failure::new(ErrorKind::IdleTimeout, message)), false);
                }
                Waited::TimedOut(Which::Total) => return (Err(Failure::total()), false),
            }
        }
        let end_ms = ms_since(start, Instant::now());
        let malformed = |message: String| Failure::new(ErrorKind::MalformedEvent, message);
        let value: serde_json::Value = match serde_json::from_slice(&bytes) {
            Ok(value) => value,
            Err(e) => {
                let message = format!("the body is not JSON ({e}): {}", excerpt(&bytes));
                return (Err(malformed(message)), true);
            }
        };
        if value.get("error").is_some_and(|e| !e.is_null())
            || value.get("object").and_then(|o| o.as_str()) == Some("error")
        {
            let failure = Failure {
                kind: ErrorKind::ErrorObject,
                status: Some(status.as_u16()),
                message: stream::error_message(&bytes),
                body: Some(self.redactor.bytes(bytes)),
                unreached: None,
            };
            return (Err(failure), true);
        }
        state.prompt_tokens = json_usage(&value);
        let (key, exact) = match self.config.api {
            Api::Rerank => ("results", false),
            _ => ("data", true),
        };
        let results = value.get(key).and_then(|v| v.as_array()).map(Vec::len);
        let expected = if exact { "exactly" } else { "1 to" };
        match results {
            Some(n) if n as u64 == inputs || (!exact && n > 0 && (n as u64) < inputs) => {
                (Ok(end_ms), true)
            }
            _ => {
                let found = results.map_or("none".to_string(), |n| n.to_string());
                let message = format!(
                    "expected {expected} {inputs} entries in `{key}`, found {found}: {}",
                    excerpt(&bytes)
                );
                (Err(malformed(message)), true)
            }
        }
    }
}

/// The largest embeddings or rerank body read (a batch of 64 inputs of 4,096 dimensions as
/// JSON is about 6 MiB).
const MAX_JSON_BYTES: usize = 256 << 20;

/// Prompt tokens of an embeddings or rerank body: `usage.prompt_tokens` (OpenAI, vLLM,
/// llama.cpp), else `usage.total_tokens` (vLLM rerank), else Cohere's `meta.tokens.input_tokens`
/// or `meta.billed_units.input_tokens`.
fn json_usage(value: &serde_json::Value) -> Option<u64> {
    let at = |path: &[&str]| {
        path.iter()
            .try_fold(value, |v, key| v.get(key))
            .and_then(serde_json::Value::as_u64)
    };
    at(&["usage", "prompt_tokens"])
        .or_else(|| at(&["usage", "total_tokens"]))
        .or_else(|| at(&["meta", "tokens", "input_tokens"]))
        .or_else(|| at(&["meta", "billed_units", "input_tokens"]))
}

/// The body's end after `[DONE]`, waited for until the deadline `deadlines` has in force;
/// whether it came.
async fn drain(body: &mut Incoming, deadlines: &mut Deadlines) -> bool {
    loop {
        match deadlines.wait(next_chunk(body)).await {
            Waited::Done(Ok(Some(_))) => {}
            Waited::Done(Ok(None)) => return true,
            Waited::Done(Err(_)) | Waited::TimedOut(_) => return false,
        }
    }
}

/// End of body: a last event without its blank line still counts; then `[DONE]` must have come.
fn finish_stream(
    parser: &mut SseParser,
    state: &mut StreamState,
    now_ms: f64,
) -> Result<f64, Failure> {
    let mut failure = None;
    parser
        .finish(|kind, data| on_data(state, kind, data, now_ms, &mut failure))
        .map_err(|e| Failure::new(ErrorKind::MalformedEvent, e.to_string()))?;
    if let Some(failure) = failure {
        return Err(failure.into());
    }
    if state.done {
        return Ok(now_ms);
    }
    Err(Failure::new(
        ErrorKind::MissingDone,
        format!(
            "stream ended after {} events without {}",
            state.events,
            state.end_marker()
        ),
    ))
}

/// One read's events, taken into the stream state at the read's time.
struct StreamEvents<'s> {
    state: &'s mut StreamState,
    now_ms: f64,
    failure: Option<StreamFailure>,
}

impl Events for StreamEvents<'_> {
    fn whole_events(&mut self, bytes: &[u8]) -> Option<usize> {
        self.state.whole_templated_events(bytes, self.now_ms)
    }

    fn event(&mut self, kind: EventKind, data: &[u8]) -> ControlFlow<()> {
        on_data(self.state, kind, data, self.now_ms, &mut self.failure)
    }
}

/// Hand one SSE payload to the stream state; stop on `[DONE]` or a failure.
fn on_data(
    state: &mut StreamState,
    kind: EventKind,
    data: &[u8],
    now_ms: f64,
    failure: &mut Option<StreamFailure>,
) -> ControlFlow<()> {
    if state.done {
        return ControlFlow::Break(()); // nothing after [DONE] counts
    }
    let outcome = match kind {
        EventKind::Data => match state.format {
            StreamFormat::Chunks => state.on_event(data, now_ms),
            StreamFormat::Responses => super::super::responses::on_event(state, data, now_ms),
            StreamFormat::Messages => super::super::messages::on_event(state, data, now_ms),
        },
        EventKind::Error => EventOutcome::Failed(StreamFailure {
            kind: ErrorKind::ErrorObject,
            message: stream::error_message(data),
            body: Some(data.to_vec()),
        }),
    };
    match outcome {
        EventOutcome::Continue => ControlFlow::Continue(()),
        EventOutcome::Done => ControlFlow::Break(()),
        EventOutcome::Failed(f) => {
            *failure = Some(f);
            ControlFlow::Break(())
        }
    }
}
