//! The embedded OpenAI-compatible simulator: latency model, prefix cache, faults, `/metrics`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Simulator settings, as a plan's `simulator:` target section or `servebench sim --config`.
/// Every field has a realistic default, so `simulator: {}` is a working target.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Seed for jitter, natural output lengths and fault draws.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Model name served by `/v1/models` (default `sim`); a request for another gets 404
    /// `model_not_found`, as from vLLM. A plan's simulator target serves the target's `model:`
    /// when this is not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Serve requests for any model name instead of answering 404 (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_any_model: Option<bool>,
    /// LoRA adapters served beside the model, with a load delay on first use and a cap on
    /// how many are resident at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapters: Option<SimAdapters>,
    /// Sequences decoded at once; further requests wait in a FIFO queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_running: Option<u32>,
    /// Prefill speed for uncached prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_tok_s: Option<f64>,
    /// Time per output token with one running sequence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_ms_per_token: Option<f64>,
    /// Extra time per output token for each additional running sequence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_ms_per_running: Option<f64>,
    /// Output tokens per SSE event (several models speculative decoding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_tokens: Option<u32>,
    /// Reasoning tokens streamed before content when the request asks for thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u32>,
    /// Mean output length when the request does not set `ignore_eos`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_output_tokens: Option<u32>,
    /// Relative seeded jitter on every delay (0.05 = ±5%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<f64>,
    /// Prefix cache; absent means no caching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<SimPrefixCache>,
    /// Wire-format differences between engines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<SimDialect>,
    /// Faults injected on demand.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<SimFault>,
    /// Context window: prompt plus `max_tokens` beyond it is rejected with 400 (default 32768).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model_len: Option<u64>,
    /// Length of the vectors `/v1/embeddings` returns (default 384).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_dim: Option<u32>,
    /// Share of chat requests offering `tools` with `tool_choice` `auto` (or none) that
    /// answer with a tool call, seeded per request (default 0.5); a request whose last
    /// message is a tool's result is answered in text. `required` or a named function always
    /// calls; `none` never does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_fraction: Option<f64>,
    /// A server bug on demand: the first this many requests aborted by their client (a
    /// disconnect mid-stream) keep their slots for good, so capacity falls (default 0: freed
    /// at once, as vLLM does). At most `max_running - 1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leak_aborted_slots: Option<u32>,
    /// Keep per-request send timestamps for [`SimHandle::timestamps`] (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_timestamps: Option<bool>,
    /// Keep each request's headers and chat messages, and the reply text sent, for
    /// [`SimHandle::requests`] (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_requests: Option<bool>,
    /// Close the connection after every response while still announcing
    /// `Keep-Alive: timeout=5, max=100`, as llama.cpp's server does (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_after_response: Option<bool>,
    /// Close a keep-alive connection after it sat idle this long, without announcing it, as
    /// uvicorn does after 5 s (default: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_alive_timeout: Option<crate::duration::HumanDuration>,
    /// Answer HTTP 400 with an empty body when `x-request-id` is present but not a UUID, as
    /// FastAPI servers with a request-id middleware do (llama-cpp-python; default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_uuid_request_id: Option<bool>,
    /// A draft model: speculative decoding with a settable acceptance rate; absent means
    /// one `chunk_tokens` event at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<speculative::SimSpeculative>,
    /// A power gauge on `/metrics` (DCGM's `DCGM_FI_DEV_POWER_USAGE` by default, one label
    /// set per device) rising with the requests running, and the energy drawn as a counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<SimPower>,
    /// Structured output: share of `response_format` requests answered with a reply that
    /// fails it (text that is not JSON, or an object missing a required property), seeded
    /// per request (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_share: Option<f64>,
    /// Structured output: milliseconds added to each output token's decode time when the
    /// request carries a `response_format`, as a grammar's mask costs (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grammar_ms_per_token: Option<f64>,
    /// Scored sets servebench generates (`dataset: {generate: …}`): seeded share of their
    /// prompts answered right; the rest get a wrong answer (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct_share: Option<f64>,
}

/// Block-hashed prefix cache with LRU eviction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimPrefixCache {
    /// Tokens the cache holds before it evicts the least recently used blocks.
    pub capacity_tokens: u64,
    /// Tokens per hashed block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_tokens: Option<u32>,
}

/// What real engines differ on in their streams.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimDialect {
    /// `reasoning_content` (vLLM/DeepSeek, default) or `reasoning` (newer vLLM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_field: Option<ReasoningField>,
    /// First role-only chunk: `empty` (`content: ""`, vLLM, default), `null` (llama.cpp), `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_chunk: Option<RoleChunk>,
    /// Where usage goes when asked for: `separate` chunk with `choices: []` (default),
    /// `finish_chunk`, or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsagePlacement>,
    /// Add llama.cpp's `timings` object to the last chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llama_timings: Option<bool>,
    /// Add vLLM's per-request `metrics` object (`--enable-per-request-metrics`: queue,
    /// prefill and generation time) wherever usage goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vllm_metrics: Option<bool>,
    /// Report `reasoning_tokens: 0` in usage while streaming reasoning text, as SGLang did
    /// (default false: the reasoning streamed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_reasoning_usage: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningField {
    ReasoningContent,
    Reasoning,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RoleChunk {
    Empty,
    Null,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UsagePlacement {
    Separate,
    FinishChunk,
    None,
}

/// One fault rule: what goes wrong, and when (`probability` per request, or every `every`-th
/// request, or at the listed request numbers, counted from 1 per simulator).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimFault {
    /// What goes wrong.
    pub kind: SimFaultKind,
    /// Chance per request, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    /// Every n-th request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<u64>,
    /// These request numbers, counted from 1.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub at: Vec<u64>,
    /// HTTP status for `status` faults (500, 503, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// `Retry-After` seconds for `rate_limit`, stall length for `stall`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// For mid-stream faults: after this many output tokens (default: half way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_tokens: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SimFaultKind {
    /// Respond with `status` (default 500) and an error body.
    Status,
    /// 429 with `Retry-After`.
    RateLimit,
    /// Reset the connection before sending headers.
    ResetBeforeHeaders,
    /// Close the connection mid-stream.
    DisconnectMidStream,
    /// Stop sending for `seconds` mid-stream, then continue.
    Stall,
    /// Send one event that is not valid JSON.
    MalformedEvent,
    /// End the stream cleanly without `data: [DONE]`.
    MissingDone,
    /// 200 whose body (or first event) is an error object.
    ErrorObject,
}

mod adapters;
pub mod answers;
mod api;
mod cache;
pub mod config_file;
mod control;
mod faults;
mod generate;
pub mod images;
mod keepalive;
pub mod power;
mod prometheus;
mod rng;
mod server;
mod settings;
pub mod speculative;
mod state;
pub mod tokenizer;

pub use adapters::SimAdapters;
pub use power::SimPower;
pub use server::{SimHandle, SimStats, UnixSim, serve, serve_on, serve_unix};
pub use settings::{DEFAULT_MODEL, SimConfigError};
pub use state::{SeenRequest, SendTimes, SimToolCall};

impl SimConfig {
    /// Check every value; returns all problems at once.
    pub fn validate(&self) -> Result<(), SimConfigError> {
        settings::Settings::resolve(self).map(|_| ())
    }
}
