//! Resolved simulator settings: `SimConfig` with defaults applied and every value checked.

use std::fmt;

use super::{ReasoningField, RoleChunk, SimConfig, SimFault, SimFaultKind, UsagePlacement};

/// Defaults, modelled on vLLM serving a mid-size model (seed 004: ~6.2 ms/token at
/// concurrency 1 growing to ~8.9 ms at 32, ~150 ms TTFT for a 540-token prompt).
pub const DEFAULT_MODEL: &str = "sim";
pub const DEFAULT_MAX_RUNNING: u32 = 64;
pub const DEFAULT_PREFILL_TOK_S: f64 = 4000.0;
pub const DEFAULT_DECODE_MS_PER_TOKEN: f64 = 6.2;
pub const DEFAULT_DECODE_MS_PER_RUNNING: f64 = 0.09;
pub const DEFAULT_CHUNK_TOKENS: u32 = 1;
pub const DEFAULT_REASONING_TOKENS: u32 = 0;
pub const DEFAULT_MEAN_OUTPUT_TOKENS: u32 = 256;
pub const DEFAULT_JITTER: f64 = 0.05;
pub const DEFAULT_BLOCK_TOKENS: u32 = 16;
pub const DEFAULT_MAX_MODEL_LEN: u64 = 32768;
/// Length of the simulated embedding vectors (a small sentence-embedding model's).
pub const DEFAULT_EMBEDDING_DIM: u32 = 384;
/// Longest embedding vector served.
pub const MAX_EMBEDDING_DIM: u32 = 16384;
pub const DEFAULT_STALL_S: f64 = 5.0;
/// Share of `tool_choice: auto` requests answered with a tool call.
pub const DEFAULT_TOOL_CALL_FRACTION: f64 = 0.5;
pub const DEFAULT_RETRY_AFTER_S: f64 = 1.0;

/// Every problem found in a `SimConfig`, one message per bad value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimConfigError {
    pub problems: Vec<String>,
}

impl fmt::Display for SimConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid simulator settings: {}",
            self.problems.join("; ")
        )
    }
}

impl std::error::Error for SimConfigError {}

#[derive(Debug, Clone)]
pub(crate) struct CacheSettings {
    pub capacity_tokens: u64,
    pub block_tokens: u32,
}

#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub seed: u64,
    pub model: String,
    /// The model name as a JSON string literal, quotes included.
    pub model_json: String,
    pub max_running: u32,
    /// Seconds per uncached prompt token (0 = instant prefill).
    pub prefill_s_per_token: f64,
    pub decode_ms_per_token: f64,
    pub decode_ms_per_running: f64,
    pub chunk_tokens: u32,
    pub reasoning_tokens: u32,
    pub mean_output_tokens: u32,
    pub jitter: f64,
    pub max_model_len: u64,
    pub embedding_dim: u32,
    pub tool_call_fraction: f64,
    /// Aborted requests that keep their slots for good.
    pub leak_aborted_slots: u32,
    pub prefix_cache: Option<CacheSettings>,
    pub reasoning_field: ReasoningField,
    pub role_chunk: RoleChunk,
    pub usage: UsagePlacement,
    pub llama_timings: bool,
    pub vllm_metrics: bool,
    pub faults: Vec<SimFault>,
    pub record_timestamps: bool,
    pub record_requests: bool,
    pub close_after_response: bool,
    /// Idle keep-alive connections are closed after this long.
    pub keep_alive_timeout: Option<std::time::Duration>,
    pub require_uuid_request_id: bool,
    /// Serve requests for any model name instead of answering 404.
    pub accept_any_model: bool,
    pub adapters: Option<super::adapters::AdapterSettings>,
    /// Usage says 0 reasoning tokens whatever streamed.
    pub zero_reasoning_usage: bool,
    pub speculative: Option<super::speculative::DraftSettings>,
    pub power: Option<super::power::SimPower>,
    /// Share of structured-output replies broken on purpose.
    pub invalid_share: f64,
    /// Milliseconds added per output token under a `response_format`.
    pub grammar_ms_per_token: f64,
    /// Share of generated-set prompts answered right.
    pub correct_share: f64,
}

fn check_non_negative(problems: &mut Vec<String>, name: &str, value: f64) {
    if !value.is_finite() || value < 0.0 {
        problems.push(format!(
            "{name} must be a finite number >= 0, found {value}"
        ));
    }
}

impl Settings {
    pub fn resolve(config: &SimConfig) -> Result<Settings, SimConfigError> {
        let mut problems = Vec::new();
        let model = config
            .model
            .clone()
            .unwrap_or_else(|| DEFAULT_MODEL.to_string());
        if model.is_empty() {
            problems.push("model must not be empty".to_string());
        }
        let max_running = config.max_running.unwrap_or(DEFAULT_MAX_RUNNING);
        if max_running == 0 {
            problems.push("max_running must be at least 1".to_string());
        }
        let (prefill_tok_s, decode_ms_per_token, decode_ms_per_running) =
            latency_settings(config, &mut problems);
        let shape = reply_shape(config, &mut problems);
        let (tool_call_fraction, leak_aborted_slots) =
            tools_and_leaks(config, max_running, &mut problems);
        let prefix_cache = cache_settings(config, &mut problems);
        check_faults_and_keep_alive(config, &mut problems);
        let dialect = config.dialect.clone().unwrap_or_default();
        let adapters = super::adapters::resolve(config.adapters.as_ref(), &model, &mut problems);
        let speculative = super::speculative::resolve(config.speculative.as_ref(), &mut problems);
        for (key, problem) in config.power.iter().flat_map(|p| p.problems()) {
            problems.push(format!("power.{key} {problem}"));
        }
        let (invalid_share, grammar_ms_per_token, correct_share) =
            answer_settings(config, &mut problems);
        if !problems.is_empty() {
            return Err(SimConfigError { problems });
        }
        let model_json = serde_json::Value::String(model.clone()).to_string();
        Ok(Settings {
            seed: config.seed.unwrap_or(0),
            model,
            model_json,
            max_running,
            prefill_s_per_token: if prefill_tok_s > 0.0 {
                1.0 / prefill_tok_s
            } else {
                0.0
            },
            decode_ms_per_token,
            decode_ms_per_running,
            chunk_tokens: shape.chunk_tokens,
            reasoning_tokens: config.reasoning_tokens.unwrap_or(DEFAULT_REASONING_TOKENS),
            mean_output_tokens: shape.mean_output_tokens,
            jitter: shape.jitter,
            max_model_len: shape.max_model_len,
            embedding_dim: shape.embedding_dim,
            tool_call_fraction,
            leak_aborted_slots,
            prefix_cache,
            reasoning_field: dialect
                .reasoning_field
                .unwrap_or(ReasoningField::ReasoningContent),
            role_chunk: dialect.role_chunk.unwrap_or(RoleChunk::Empty),
            usage: dialect.usage.unwrap_or(UsagePlacement::Separate),
            llama_timings: dialect.llama_timings.unwrap_or(false),
            vllm_metrics: dialect.vllm_metrics.unwrap_or(false),
            faults: config.faults.clone(),
            record_timestamps: config.record_timestamps.unwrap_or(false),
            record_requests: config.record_requests.unwrap_or(false),
            close_after_response: config.close_after_response.unwrap_or(false),
            keep_alive_timeout: config.keep_alive_timeout.map(|d| d.0),
            require_uuid_request_id: config.require_uuid_request_id.unwrap_or(false),
            accept_any_model: config.accept_any_model.unwrap_or(false),
            adapters,
            zero_reasoning_usage: dialect.zero_reasoning_usage.unwrap_or(false),
            speculative,
            power: config.power.clone(),
            invalid_share,
            grammar_ms_per_token,
            correct_share,
        })
    }
}

/// The share of replies that call a tool, and the slots an aborted request leaks.
fn tools_and_leaks(config: &SimConfig, max_running: u32, problems: &mut Vec<String>) -> (f64, u32) {
    let tool_call_fraction = config
        .tool_call_fraction
        .unwrap_or(DEFAULT_TOOL_CALL_FRACTION);
    if !(0.0..=1.0).contains(&tool_call_fraction) {
        problems.push(format!(
            "tool_call_fraction must be in [0, 1], found {tool_call_fraction}"
        ));
    }
    let leak_aborted_slots = config.leak_aborted_slots.unwrap_or(0);
    if max_running > 0 && leak_aborted_slots >= max_running {
        problems.push(format!(
            "leak_aborted_slots must be below max_running ({max_running}), found \
             {leak_aborted_slots}: with every slot leaked nothing is served"
        ));
    }
    (tool_call_fraction, leak_aborted_slots)
}

/// Structured output's broken share and grammar cost, and the share of generated-set prompts
/// answered right.
fn answer_settings(config: &SimConfig, problems: &mut Vec<String>) -> (f64, f64, f64) {
    let mut share = |name: &str, value: Option<f64>, default: f64| {
        let value = value.unwrap_or(default);
        if !(0.0..=1.0).contains(&value) {
            problems.push(format!("{name} must be in [0, 1], found {value}"));
        }
        value
    };
    let invalid_share = share("invalid_share", config.invalid_share, 0.0);
    let correct_share = share("correct_share", config.correct_share, 1.0);
    let grammar_ms_per_token = config.grammar_ms_per_token.unwrap_or(0.0);
    check_non_negative(problems, "grammar_ms_per_token", grammar_ms_per_token);
    (invalid_share, grammar_ms_per_token, correct_share)
}

/// How replies are cut and sized.
struct ReplyShape {
    chunk_tokens: u32,
    mean_output_tokens: u32,
    jitter: f64,
    max_model_len: u64,
    embedding_dim: u32,
}

/// Tokens per event, reply lengths and their spread, context length and embedding size.
fn reply_shape(config: &SimConfig, problems: &mut Vec<String>) -> ReplyShape {
    let chunk_tokens = config.chunk_tokens.unwrap_or(DEFAULT_CHUNK_TOKENS);
    if chunk_tokens == 0 {
        problems.push("chunk_tokens must be at least 1".to_string());
    }
    let mean_output_tokens = config
        .mean_output_tokens
        .unwrap_or(DEFAULT_MEAN_OUTPUT_TOKENS);
    if mean_output_tokens == 0 {
        problems.push("mean_output_tokens must be at least 1".to_string());
    }
    let jitter = config.jitter.unwrap_or(DEFAULT_JITTER);
    if !(0.0..1.0).contains(&jitter) {
        problems.push(format!("jitter must be in [0, 1), found {jitter}"));
    }
    let max_model_len = config.max_model_len.unwrap_or(DEFAULT_MAX_MODEL_LEN);
    if max_model_len < 2 {
        problems.push("max_model_len must be at least 2".to_string());
    }
    let embedding_dim = config.embedding_dim.unwrap_or(DEFAULT_EMBEDDING_DIM);
    if !(1..=MAX_EMBEDDING_DIM).contains(&embedding_dim) {
        problems.push(format!(
            "embedding_dim must be between 1 and {MAX_EMBEDDING_DIM}, found {embedding_dim}"
        ));
    }
    ReplyShape {
        chunk_tokens,
        mean_output_tokens,
        jitter,
        max_model_len,
        embedding_dim,
    }
}

/// Each fault, and a keep-alive timeout above zero.
fn check_faults_and_keep_alive(config: &SimConfig, problems: &mut Vec<String>) {
    for (index, fault) in config.faults.iter().enumerate() {
        check_fault(problems, index, fault);
    }
    if config.keep_alive_timeout.is_some_and(|d| d.0.is_zero()) {
        problems.push("keep_alive_timeout must be above zero".to_string());
    }
}

/// Prefill speed and decode times (all zero or more).
fn latency_settings(config: &SimConfig, problems: &mut Vec<String>) -> (f64, f64, f64) {
    let prefill_tok_s = config.prefill_tok_s.unwrap_or(DEFAULT_PREFILL_TOK_S);
    check_non_negative(problems, "prefill_tok_s", prefill_tok_s);
    let decode_ms_per_token = config
        .decode_ms_per_token
        .unwrap_or(DEFAULT_DECODE_MS_PER_TOKEN);
    check_non_negative(problems, "decode_ms_per_token", decode_ms_per_token);
    let decode_ms_per_running = config
        .decode_ms_per_running
        .unwrap_or(DEFAULT_DECODE_MS_PER_RUNNING);
    check_non_negative(problems, "decode_ms_per_running", decode_ms_per_running);
    (prefill_tok_s, decode_ms_per_token, decode_ms_per_running)
}

fn cache_settings(config: &SimConfig, problems: &mut Vec<String>) -> Option<CacheSettings> {
    config.prefix_cache.as_ref().map(|cache| {
        let block_tokens = cache.block_tokens.unwrap_or(DEFAULT_BLOCK_TOKENS);
        if block_tokens == 0 {
            problems.push("prefix_cache.block_tokens must be at least 1".to_string());
        }
        CacheSettings {
            capacity_tokens: cache.capacity_tokens,
            block_tokens,
        }
    })
}

pub(crate) fn check_fault(problems: &mut Vec<String>, index: usize, fault: &SimFault) {
    let at = format!("faults[{index}]");
    if fault.probability.is_none() && fault.every.is_none() && fault.at.is_empty() {
        problems.push(format!("{at}: needs `probability`, `every` or `at`"));
    }
    if let Some(p) = fault.probability.filter(|p| !(0.0..=1.0).contains(p)) {
        problems.push(format!("{at}.probability must be in [0, 1], found {p}"));
    }
    if fault.every == Some(0) {
        problems.push(format!("{at}.every must be at least 1"));
    }
    if fault.at.contains(&0) {
        problems.push(format!("{at}.at: request numbers count from 1"));
    }
    if let Some(seconds) = fault.seconds {
        check_non_negative(problems, &format!("{at}.seconds"), seconds);
    }
    match fault.kind {
        SimFaultKind::Status => {
            if let Some(status) = fault.status.filter(|s| !(400..=599).contains(s)) {
                problems.push(format!("{at}.status must be 400..=599, found {status}"));
            }
        }
        SimFaultKind::RateLimit
        | SimFaultKind::ResetBeforeHeaders
        | SimFaultKind::DisconnectMidStream
        | SimFaultKind::Stall
        | SimFaultKind::MalformedEvent
        | SimFaultKind::MissingDone
        | SimFaultKind::ErrorObject => {
            if fault.status.is_some() {
                problems.push(format!("{at}.status only applies to kind `status`"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_resolve() {
        let settings = Settings::resolve(&SimConfig::default()).expect("defaults are valid");
        assert_eq!(settings.model_json, "\"sim\"");
        assert_eq!(settings.max_running, DEFAULT_MAX_RUNNING);
        assert!((settings.prefill_s_per_token - 1.0 / DEFAULT_PREFILL_TOK_S).abs() < 1e-12);
    }

    #[test]
    fn collects_every_problem() {
        let config = SimConfig {
            max_running: Some(0),
            jitter: Some(1.5),
            faults: vec![SimFault {
                kind: SimFaultKind::Stall,
                probability: Some(2.0),
                every: None,
                at: vec![],
                status: Some(500),
                seconds: None,
                after_tokens: None,
            }],
            ..SimConfig::default()
        };
        let err = Settings::resolve(&config).expect_err("invalid");
        assert_eq!(err.problems.len(), 4, "{err}");
        assert!(err.to_string().contains("faults[0].probability"));
    }
}
