//! What one request produced: timestamps, token counts, chunk counts, and how it ended.

use crate::figure::{Counted, Figure};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One request's measurements. Times are milliseconds on one monotonic client clock; the
/// field names are those of the seed reports' `request_timings`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct RequestRecord {
    /// Position of the request within its phase (measured requests only).
    pub request_index: u64,
    /// servebench's readable id, `<run>-<phase>-<n>`.
    pub request_id: String,
    /// The request-id header's value as sent, when it is not `request_id` itself (a UUID
    /// derived from it by default), to join with server logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_request_id: Option<String>,
    /// The W3C trace id the request's `traceparent` carried (absent when trace context is
    /// off), to join with the server's traces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Request start, relative to the phase's measured start.
    pub start_offset_ms: f64,
    /// Open loop: when the schedule wanted the request sent, relative to the phase's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_offset_ms: Option<f64>,
    /// Open loop: actual send time minus scheduled time, any wait for a concurrency slot
    /// included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lag_ms: Option<f64>,
    /// Open loop under `max_concurrency`: of `send_lag_ms`, the wait for a free slot (the
    /// plan's cap, not the client's own delay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_wait_ms: Option<f64>,
    /// Request start → first non-empty reasoning or content delta.
    pub time_to_first_output_ms: Option<f64>,
    /// Request start → first non-empty content delta.
    pub ttft_ms: Option<f64>,
    /// Request start → end of stream (or failure).
    pub e2e_ms: f64,
    /// `e2e_ms − time_to_first_output_ms`.
    pub generation_ms: Option<f64>,
    /// `e2e_ms − ttft_ms`.
    pub visible_generation_ms: Option<f64>,
    /// `(output_tokens − 1) / generation_s`.
    pub decode_tok_s: Option<f64>,
    /// `generation_ms / (output_tokens − 1)`.
    pub mean_inter_token_latency_ms: Option<f64>,
    /// `(e2e − ttft) / (output_tokens − 1)`, in milliseconds (vLLM's TPOT).
    pub tpot_ms: Option<f64>,
    /// `prompt_tokens / time_to_first_output_s`.
    pub effective_prefill_tok_s: Option<f64>,
    /// Prompt tokens the workload planned (server-counted, chat template included).
    pub planned_context_tokens: Option<u64>,
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`.
    pub cached_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub output_token_source: Option<OutputTokenSource>,
    /// SSE deltas carrying content text.
    pub content_chunks: u64,
    /// SSE deltas carrying reasoning text.
    pub reasoning_chunks: u64,
    /// Largest gap between consecutive output chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_inter_chunk_ms: Option<f64>,
    /// `None` when the request succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RequestError>,
    /// Request start → the moment the client dropped the stream on purpose (the workload's
    /// `cancel`); absent when the request ran to its end or failed. A cancelled request is
    /// neither a success nor an error: `output_tokens` holds what came before the cancel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_ms: Option<f64>,
    /// 1 when a reused connection failed before any response byte and the request was sent
    /// again on a new one (its latency includes the lost attempt).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connection_retries: u32,
    /// Whether the request ran on a connection opened for it (absent when none was made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_connection: Option<bool>,
    /// A new connection's TCP connect time (absent on a reused connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_ms: Option<f64>,
    /// A new `https` connection's TLS handshake time (absent on a reused connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_ms: Option<f64>,
    /// Sessions: the session (numbered from 0 in its window) and the turn within it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// Request start → first streamed tool-call delta (a function name or argument
    /// fragment); absent when the reply called no tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_tool_ms: Option<f64>,
    /// Streamed deltas carrying a tool call's name or an argument fragment.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub tool_call_chunks: u64,
    /// The time the server says the request waited in its scheduler queue (vLLM `metrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_queue_ms: Option<f64>,
    /// The server's own prompt (prefill) time, when it reports one (llama.cpp `timings`, vLLM
    /// `metrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_prompt_ms: Option<f64>,
    /// The server's own queue (when reported), prompt and generation time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_total_ms: Option<f64>,
    /// Embeddings: texts in `input`; rerank: `documents`. Absent for chat and completions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<u64>,
    /// The served model the request named, when its workload mixes models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Bytes of the request's JSON body as sent (absent when it was never sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_bytes: Option<u64>,
    /// Images in the request's messages.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub images: u64,
    /// Of `output_tokens`, the reasoning tokens: the server's usage
    /// (`completion_tokens_details` / `output_tokens_details`), or counted from the stream
    /// when it reported 0 or nothing while streaming reasoning (`reasoning_token_source`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_token_source: Option<OutputTokenSource>,
    /// The server's speculative-decoding acceptance for this request, as it sent it (vLLM's
    /// `metrics.speculative_decoding`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decoding: Option<super::SpecDecoding>,
    /// The workload (archetype) the request was drawn from, when its phase mixes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archetype: Option<String>,
    /// The reply's text, kept only when the workload checks replies (`response_format`,
    /// `score`), so a later reader can check them again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// Why the reply ended as the server said (`stop`, `length`: cut by `max_tokens`), kept
    /// with `reply`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Structured output: whether the reply satisfied the workload's `response_format`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid: Option<bool>,
    /// Why it did not: `not JSON`, `cut by max_tokens`, or `schema: <instance path>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
    /// The prompt's right answer (its dataset row's `expected`), kept with `reply`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// Scored workloads: whether the reply answered `expected`, by the workload's `score`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct: Option<bool>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl RequestRecord {
    /// This request's value of `figure`, in the figure's unit; `None` when the request has none
    /// or is not one [`Counted`] says the figure covers.
    pub fn value(&self, figure: Figure) -> Option<f64> {
        let counts = match figure.spec().counted {
            Counted::Every => true,
            Counted::Succeeded => self.is_ok(),
            Counted::FirstOutput => self.error.is_none(),
            Counted::ServerTimed => {
                self.is_ok() && (self.server_prompt_ms.is_some() || self.server_total_ms.is_some())
            }
        };
        if !counts {
            return None;
        }
        let seconds = |ms: Option<f64>| ms.map(|v| v * 1e-3);
        let value = match figure {
            Figure::Ttft => seconds(self.ttft_ms),
            Figure::Tpot => seconds(self.tpot_ms),
            Figure::E2e => seconds(Some(self.e2e_ms)),
            Figure::TimeToFirstOutput => seconds(self.time_to_first_output_ms),
            Figure::MeanInterTokenLatency => self.mean_inter_token_latency_ms,
            Figure::MaxInterChunk => self.max_inter_chunk_ms,
            Figure::DecodeTokS => self.decode_tok_s,
            Figure::InputTokens => self.prompt_tokens.map(|t| t as f64),
            Figure::OutputTokens => self.output_tokens.map(|t| t as f64),
            Figure::ServerQueue => self.server_queue_ms,
            Figure::SendLag => self.send_lag_ms,
            Figure::SlotWait => self.slot_wait_ms,
            Figure::ClientSendLag => self
                .send_lag_ms
                .map(|lag| lag - self.slot_wait_ms.unwrap_or(0.0)),
            Figure::TtftMinusServerPrompt => {
                self.ttft_ms.zip(self.server_prompt_ms).map(|(a, b)| a - b)
            }
            Figure::E2eMinusServerTotal => self.server_total_ms.map(|b| self.e2e_ms - b),
            Figure::CachedTokens => self.cached_tokens.map(|t| t as f64),
            Figure::TtftTool => self.ttft_tool_ms,
            // Only replies that called a tool count, as for their TTFT.
            Figure::ToolCallChunks => self.ttft_tool_ms.map(|_| self.tool_call_chunks as f64),
            Figure::RequestBytes => self.request_bytes.map(|b| b as f64),
            Figure::ReasoningTokens => self.reasoning().map(|(t, _)| t as f64),
            Figure::ContentTokens => self.content_tokens().map(|t| t as f64),
            Figure::SpecAcceptanceLength => self
                .spec_decoding
                .as_ref()
                .filter(|s| s.num_spec_steps > 0)
                .map(|s| s.mean_acceptance_length),
            Figure::SpecAcceptanceRate => self
                .spec_decoding
                .as_ref()
                .filter(|s| s.draft_tokens().is_some_and(|d| d > 0))
                .map(|s| s.draft_acceptance_rate),
        };
        value.filter(|v| v.is_finite())
    }

    /// Reasoning tokens and where they came from: the record's own, else (a record read from
    /// a report written before them) counted from its reasoning deltas as the client counts
    /// a live stream: their share of the output tokens.
    pub fn reasoning(&self) -> Option<(u64, OutputTokenSource)> {
        if let Some(n) = self.reasoning_tokens {
            return Some((
                n,
                self.reasoning_token_source
                    .unwrap_or(OutputTokenSource::Usage),
            ));
        }
        let chunks = self.reasoning_chunks;
        let deltas = self.content_chunks + chunks + self.tool_call_chunks;
        let counted = match self.output_tokens {
            Some(total) => (total as f64 * chunks as f64 / deltas as f64).round() as u64,
            None => chunks,
        };
        (chunks > 0).then_some((counted, OutputTokenSource::Counted))
    }

    /// Output tokens less reasoning tokens, when the reasoning count is known.
    pub fn content_tokens(&self) -> Option<u64> {
        let (reasoning, _) = self.reasoning()?;
        Some(self.output_tokens?.saturating_sub(reasoning))
    }

    /// Ran to its end without an error (neither failed nor cancelled).
    pub fn is_ok(&self) -> bool {
        self.error.is_none() && self.cancelled_ms.is_none()
    }

    /// How the request failed to reach a server, when it did.
    pub fn unreached(&self) -> Option<Unreached> {
        self.error.as_ref().and_then(|e| e.unreached)
    }

    /// Dropped by the client on purpose (the workload's `cancel`).
    pub fn is_cancelled(&self) -> bool {
        self.cancelled_ms.is_some()
    }

    /// The id the server saw in the request-id header (unless the header was off).
    pub fn sent_id(&self) -> &str {
        self.sent_request_id.as_deref().unwrap_or(&self.request_id)
    }
}

/// Fill a record's derived fields (generation, decode rate, ITL, TPOT, prefill rate) from its
/// raw timings and token counts, exactly as DESIGN.md defines them.
///
/// The float expressions are the ones the seed reports were computed with, so recomputing a
/// seed record reproduces its stored fields bit for bit. A field is `None` when undefined:
/// no first output/content, `output_tokens ≤ 1`, or a zero time span.
pub fn derive_record_fields(record: &mut RequestRecord) {
    let e2e_ms = record.e2e_ms;
    let generation_ms = record.time_to_first_output_ms.map(|tfo_ms| e2e_ms - tfo_ms);
    let visible_generation_ms = record.ttft_ms.map(|ttft_ms| e2e_ms - ttft_ms);
    // Tokens after the first one: the decode phase.
    let decode_tokens = record
        .output_tokens
        .filter(|&n| n > 1)
        .map(|n| (n - 1) as f64);

    record.generation_ms = generation_ms;
    record.visible_generation_ms = visible_generation_ms;
    record.decode_tok_s = match (decode_tokens, generation_ms) {
        (Some(tokens), Some(g_ms)) if g_ms > 0.0 => Some(tokens / (g_ms / 1000.0)),
        _ => None,
    };
    record.mean_inter_token_latency_ms = match (decode_tokens, generation_ms) {
        (Some(tokens), Some(g_ms)) => Some(g_ms / tokens),
        _ => None,
    };
    record.tpot_ms = match (decode_tokens, visible_generation_ms) {
        (Some(tokens), Some(v_ms)) => Some(v_ms / tokens),
        _ => None,
    };
    record.effective_prefill_tok_s = match (record.prompt_tokens, record.time_to_first_output_ms) {
        (Some(prompt), Some(tfo_ms)) if tfo_ms > 0.0 => Some(prompt as f64 / (tfo_ms / 1000.0)),
        _ => None,
    };
}

/// Where `output_tokens` came from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OutputTokenSource {
    /// `usage.completion_tokens` sent by the server.
    Usage,
    /// Counted from the stream because the server sent no usage (for reasoning tokens: no
    /// count, or 0 while it streamed reasoning).
    Counted,
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequestError {
    pub kind: ErrorKind,
    /// HTTP status, when one was received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Short human description (a body excerpt for HTTP errors); never holds secrets.
    pub message: String,
    /// The response body's first 2 KB as text, secrets redacted: for a non-2xx response
    /// (`""` when it had none) and for an error object (its payload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The server's error code (`error.code`, a number as its decimal string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The server's error type (`error.type`, or the first FastAPI validation error's `type`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// Set when the request never reached a server (refused, reset before a response, name
    /// not resolved): what the run's backoff and target-down check act on. Live only: a
    /// record read back from a report or the records has none.
    #[serde(skip)]
    #[schemars(skip)]
    pub unreached: Option<Unreached>,
}

/// How a request failed to reach any server. A connect timeout is not one: a server that
/// is slow to accept is measured, not backed off from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreached {
    /// Nothing listened at the address.
    Refused,
    /// The connection was reset or closed before a response head came.
    Reset,
    /// The host name did not resolve.
    Unresolved,
    /// Another connection failure: the TLS or HTTP handshake.
    Failed,
}

impl Unreached {
    /// In plain words, as a stop reason says it: `target down at 3.1 s (connection refused)`.
    pub fn describe(self) -> &'static str {
        match self {
            Unreached::Refused => "connection refused",
            Unreached::Reset => "connection reset before a response",
            Unreached::Unresolved => "host name not resolved",
            Unreached::Failed => "connection failed",
        }
    }
}

/// Separates the parts of [`RequestError::cause`].
pub const CAUSE_SEPARATOR: &str = " · ";

/// The longest a code or type may be inside a cause key, in characters.
const CAUSE_PART_CHARS: usize = 64;

impl RequestError {
    /// An error with no body, code or type.
    pub fn new(kind: ErrorKind, status: Option<u16>, message: impl Into<String>) -> Self {
        RequestError {
            kind,
            status,
            message: message.into(),
            body: None,
            code: None,
            error_type: None,
            unreached: None,
        }
    }

    /// A short, stable key that groups failures with the same cause (`errors_by_cause`):
    ///
    /// - `http_status`/`rate_limited`: `HTTP <status>`, then ` · <type>` and ` · <code>` when
    ///   the server sent them (a code equal to the status is left out), or ` · empty body`
    ///   when the response had no body: `HTTP 400 · invalid_request_error ·
    ///   context_length_exceeded`, `HTTP 503`, `HTTP 401 · empty body`;
    /// - `error_object`: `error_object`, then ` · <type>` and ` · <code>`;
    /// - any other kind: its name (`connect`, `idle_timeout`, `stream_broken`, …).
    ///
    /// The message never goes into the key (it often holds request-specific text); a type or
    /// code is trimmed, its whitespace collapsed and cut to 64 characters.
    pub fn cause(&self) -> String {
        let mut key = match (self.kind, self.status) {
            (ErrorKind::HttpStatus | ErrorKind::RateLimited, Some(status)) => {
                format!("HTTP {status}")
            }
            (ErrorKind::HttpStatus | ErrorKind::RateLimited | ErrorKind::ErrorObject, _) => {
                self.kind.name().to_string()
            }
            (kind, _) => return kind.name().to_string(),
        };
        let status = self.status.map(|s| s.to_string());
        let error_type = self.error_type.as_deref().and_then(cause_part);
        let code = self
            .code
            .as_deref()
            .and_then(cause_part)
            .filter(|code| Some(code) != status.as_ref());
        let empty_body = self.body.as_deref().is_some_and(|b| b.trim().is_empty());
        let parts = match (error_type, code) {
            (None, None) if empty_body => vec!["empty body".to_string()],
            (error_type, code) => error_type.into_iter().chain(code).collect(),
        };
        for part in parts {
            key.push_str(CAUSE_SEPARATOR);
            key.push_str(&part);
        }
        key
    }
}

/// A code or type as it goes into a cause key; `None` when blank.
fn cause_part(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() {
        return None;
    }
    let joined = words.join(" ");
    Some(match joined.char_indices().nth(CAUSE_PART_CHARS) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    })
}

/// Closed set of failure kinds; counted per kind in every summary.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The TCP/TLS connection could not be made.
    Connect,
    /// No response headers/first byte within the first-byte timeout.
    FirstByteTimeout,
    /// A gap between chunks longer than the idle timeout.
    IdleTimeout,
    /// The whole request took longer than the total timeout.
    TotalTimeout,
    /// HTTP 429.
    RateLimited,
    /// Any other non-2xx status.
    HttpStatus,
    /// The connection closed or reset before the stream finished.
    StreamBroken,
    /// The stream ended cleanly but without `[DONE]`.
    MissingDone,
    /// An event that is not valid JSON or not the expected shape, or over the size cap.
    MalformedEvent,
    /// An error object inside a 200 response or stream.
    ErrorObject,
    /// Interrupted by the user (Ctrl-C) while in flight.
    Cancelled,
}

impl ErrorKind {
    /// The kind as report.json spells it.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::FirstByteTimeout => "first_byte_timeout",
            ErrorKind::IdleTimeout => "idle_timeout",
            ErrorKind::TotalTimeout => "total_timeout",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::HttpStatus => "http_status",
            ErrorKind::StreamBroken => "stream_broken",
            ErrorKind::MissingDone => "missing_done",
            ErrorKind::MalformedEvent => "malformed_event",
            ErrorKind::ErrorObject => "error_object",
            ErrorKind::Cancelled => "cancelled",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(
        status: u16,
        body: Option<&str>,
        error_type: Option<&str>,
        code: Option<&str>,
    ) -> RequestError {
        RequestError {
            body: body.map(str::to_string),
            error_type: error_type.map(str::to_string),
            code: code.map(str::to_string),
            ..RequestError::new(ErrorKind::HttpStatus, Some(status), "m")
        }
    }

    #[test]
    fn cause_keys() {
        let cause = |e: RequestError| e.cause();
        assert_eq!(
            cause(http(
                400,
                Some("{}"),
                Some("invalid_request_error"),
                Some("context_length_exceeded")
            )),
            "HTTP 400 · invalid_request_error · context_length_exceeded"
        );
        // A code that repeats the status adds nothing.
        assert_eq!(
            cause(http(400, Some("{}"), Some("BadRequestError"), Some("400"))),
            "HTTP 400 · BadRequestError"
        );
        assert_eq!(cause(http(503, Some("busy"), None, None)), "HTTP 503");
        assert_eq!(
            cause(http(401, Some(" \n"), None, None)),
            "HTTP 401 · empty body"
        );
        // Reports written before bodies were kept say nothing about the body.
        assert_eq!(cause(http(401, None, None, None)), "HTTP 401");
        assert_eq!(
            cause(http(404, Some("{}"), Some("  not\tfound "), None)),
            "HTTP 404 · not found"
        );
        let long = "x".repeat(100);
        assert_eq!(
            cause(http(500, Some("{}"), Some(&long), None)),
            format!("HTTP 500 · {}…", "x".repeat(64))
        );
        let limited = RequestError {
            body: Some(String::new()),
            ..RequestError::new(ErrorKind::RateLimited, Some(429), "slow")
        };
        assert_eq!(cause(limited), "HTTP 429 · empty body");
        let object = RequestError {
            error_type: Some("overloaded".into()),
            code: Some("503".into()),
            ..RequestError::new(ErrorKind::ErrorObject, Some(200), "m")
        };
        assert_eq!(cause(object), "error_object · overloaded · 503");
        assert_eq!(
            cause(RequestError::new(ErrorKind::ErrorObject, None, "m")),
            "error_object"
        );
        assert_eq!(
            cause(RequestError::new(ErrorKind::HttpStatus, None, "m")),
            "http_status"
        );
        for kind in [
            ErrorKind::Connect,
            ErrorKind::IdleTimeout,
            ErrorKind::MalformedEvent,
        ] {
            let e = RequestError::new(kind, Some(200), "m");
            assert_eq!(cause(e), kind.name());
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
        }
    }

    #[test]
    fn new_fields_are_absent_unless_set() {
        let plain = RequestError::new(ErrorKind::HttpStatus, Some(503), "busy");
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"kind":"http_status","status":503,"message":"busy"}"#
        );
        let full = http(400, Some(""), Some("t"), Some("c"));
        let json = serde_json::to_string(&full).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"http_status","status":400,"message":"m","body":"","code":"c","type":"t"}"#
        );
        assert_eq!(serde_json::from_str::<RequestError>(&json).unwrap(), full);
    }

    #[test]
    fn derived_fields_undefined_for_single_token() {
        let mut r = RequestRecord {
            e2e_ms: 100.0,
            ttft_ms: Some(40.0),
            time_to_first_output_ms: Some(40.0),
            output_tokens: Some(1),
            prompt_tokens: Some(10),
            ..RequestRecord::default()
        };
        derive_record_fields(&mut r);
        assert_eq!(r.generation_ms, Some(60.0));
        assert_eq!(r.decode_tok_s, None);
        assert_eq!(r.tpot_ms, None);
        assert_eq!(r.mean_inter_token_latency_ms, None);
        assert_eq!(r.effective_prefill_tok_s, Some(250.0));
    }
}
