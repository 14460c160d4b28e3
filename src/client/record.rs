//! What one request produced: timestamps, token counts, chunk counts, and how it ended.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One request's measurements. Times are milliseconds on one monotonic client clock; the
/// field names are those of the seed reports' `request_timings`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct RequestRecord {
    /// Position of the request within its phase (measured requests only).
    pub request_index: u64,
    /// Sent as `x-request-id`, to join with server logs.
    pub request_id: String,
    /// Request start, relative to the phase's measured start.
    pub start_offset_ms: f64,
    /// Open loop: when the schedule wanted the request sent, relative to the phase's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_offset_ms: Option<f64>,
    /// Open loop: actual send time minus scheduled time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lag_ms: Option<f64>,
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
    /// 1 when a reused connection failed before any response byte and the request was sent
    /// again on a new one (its latency includes the lost attempt).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connection_retries: u32,
    /// Whether the request ran on a connection opened for it (absent when none was made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_connection: Option<bool>,
    /// The server's own prompt (prefill) time, when it reports one (llama.cpp `timings`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_prompt_ms: Option<f64>,
    /// The server's own prompt plus generation time, when it reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_total_ms: Option<f64>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl RequestRecord {
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }
}

/// Where `output_tokens` came from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OutputTokenSource {
    /// `usage.completion_tokens` sent by the server.
    Usage,
    /// Counted from the stream because the server sent no usage.
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
