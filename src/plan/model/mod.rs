//! The plan's typed model: what a plan file may say, before and after expansion.
//!
//! One model serves both stages. A raw plan may carry `vars`, `matrix` and `{{ }}` templates;
//! the expanded plan has none left and every phase carries its resolved settings, so an
//! expanded plan loads, validates and expands to itself.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::count::TokenCount;
use super::duration::HumanDuration;
use super::tolerance::Tolerance;

mod target;
pub use target::*;

/// The plan format version this build reads.
pub const PLAN_VERSION: u32 = 1;

/// A benchmark plan: targets, workloads and an ordered list of phases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Plan format version; `1`.
    pub version: u32,
    /// Short name, used for the run directory and report header.
    pub name: String,
    /// Longer free text, carried into the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Template variables with their defaults; `--vars FILE` and `--set k=v` override them.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub vars: IndexMap<String, Value>,
    /// Free-form labels carried into the report (engine, gpu, hardware, precision, notes, …).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub metadata: IndexMap<String, Value>,
    /// Seed for everything random in the run (prompts, arrivals); workloads may override it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// How percentiles are computed in the report.
    #[serde(default)]
    pub percentile_method: PercentileMethod,
    /// Service-level objectives for goodput, in the grammar of a search's `slo`: a request
    /// counts when it succeeded and each limited figure is within that figure's loosest limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<super::slo::Slo>,
    /// How the results history reads this plan's runs: which figures open alerts and how
    /// many runs a new level needs. Read from the newest recorded run; enters no work hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistorySettings>,
    /// Endpoints, by name.
    pub targets: IndexMap<String, Target>,
    /// Prompt sources and request shapes, by name.
    pub workloads: IndexMap<String, Workload>,
    /// Settings every phase inherits unless it sets its own (an expanded plan has none left).
    #[serde(default, skip_serializing_if = "PhaseDefaults::is_empty")]
    pub defaults: PhaseDefaults,
    /// Phases, run in this order.
    pub phases: Vec<Phase>,
}

pub use crate::quantile::PercentileMethod;

/// The plan's `history:` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistorySettings {
    /// Eligible runs a change needs at its new level before it is called (and the level
    /// before it); a shorter blip never alerts. Default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 2, max = 50))]
    pub min_runs_after: Option<u32>,
    /// The figures whose changes open alerts (figure paths such as `ttft.p99`, or
    /// `capacity` for a search's). Every other series is still analysed and drawn. Default:
    /// `ttft.p50, ttft.p99, tpot.p50, tpot.p99, e2e.p99, output_tokens_per_second,
    /// request_rate, error_rate, capacity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<Vec<String>>,
}

/// How prompt text is counted in tokens. Also written as one string: `server`, `simulator`,
/// `builtin`, or the path of a `tokenizer.json` (see [`super::tokenizer_spec`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenizerSpec {
    /// Where token counts come from: `simulator`, `builtin`, `file` or `server`.
    pub source: TokenizerSource,
    /// `tokenizer.json` path for `source: file`, relative to the plan file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Chat template (Jinja) path for `source: file`, relative to the plan file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TokenizerSource {
    /// The simulator's documented deterministic tokenizer.
    Simulator,
    /// An embedded BPE table (no download).
    Builtin,
    /// A local Hugging Face `tokenizer.json`.
    File,
    /// Calibrate against the target's `/tokenize` endpoint before each phase.
    Server,
}

/// A prompt source and request shape.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Planned prompt tokens as the server counts them (chat template included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<TokenCount>,
    /// `max_tokens` per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<TokenCount>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_prefix: Option<SharedPrefix>,
    /// Prompts from a JSONL or ShareGPT file instead of synthetic ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<Dataset>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
    /// Multi-turn conversations: each turn extends the previous one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Conversation>,
    /// Sessions: each a sequence of turns whose history carries the server's real replies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<Session>,
    /// Tool calling (chat): the tools every request offers; in a session, a reply's tool
    /// calls are answered by a synthetic tool result as the next turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Tools>,
    /// Images in each chat request's user message, generated ahead of the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<super::images::Images>,
    /// Cancel a share of the requests mid-generation, as impatient users and agents do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<super::cancel::Cancel>,
    /// Sampling temperature sent with each request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Ask the server to keep generating past end-of-sequence, so outputs reach `max_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_eos: Option<bool>,
    /// `min_tokens` sent with each request (vLLM, SGLang).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_tokens: Option<u32>,
    /// Seed for this workload's prompts; overrides the plan's `seed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Tolerated relative gap between planned and served prompt tokens before a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tolerance: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<TokenizerSpec>,
    /// Embeddings: prompts per request, sent as the `input` list; rerank: documents per
    /// request (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u32>,
    /// Extra request body fields, merged over the target's.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub body: serde_json::Map<String, Value>,
    /// Served model names with their shares of the requests (a base model and its LoRA
    /// adapters), instead of the target's one `model:`; shares sum to 100%.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<super::model_mix::ModelMix>,
    /// How a run's prompts are kept out of an earlier run's prefix cache (default `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salt: Option<SaltMode>,
    /// Structured output: every reply must be JSON (`json_object`) or satisfy a JSON Schema
    /// (`json_schema`); each is checked and the phase reports `valid_share`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<super::response_format::ResponseFormat>,
    /// Answers checked under load: how each reply is held against its dataset row's
    /// `expected` (`exact`, `normalized`, `choice`, `{regex: …}`, `{number: {tolerance}}`,
    /// `{json_field: PATH}`); the phase reports `accuracy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<super::score::Score>,
}

/// How a run's prompts differ from another run's of the same plan. The prompts' shape
/// (lengths, shared prefixes, datasets, order) is the same in every run; the salt is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SaltMode {
    /// `cache_salt` where the target's engine takes it (vLLM, the simulator), else `text`.
    #[default]
    Auto,
    /// A few words from the run's salt lead every prompt, counted in its planned tokens.
    Text,
    /// The run's salt goes in each request's `cache_salt` field; the text is unchanged.
    CacheSalt,
    /// Byte-identical prompts in every run: a rerun may be served from the server's cache.
    None,
}

/// Requests share one of `groups` prefixes of `tokens` tokens, then a unique suffix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SharedPrefix {
    /// Length of each shared prefix in tokens.
    pub tokens: u32,
    /// Number of distinct prefixes; requests are spread over them.
    pub groups: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dataset {
    /// Path relative to the plan file (none with `generate`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// How the file is laid out (default `jsonl`).
    #[serde(default)]
    pub format: DatasetFormat,
    /// Keep only prompts with at least this many tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_input_tokens: Option<u32>,
    /// Keep only prompts with at most this many tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<u32>,
    /// Sample this many entries (seeded) instead of using all; with `multi_turn`, this many
    /// conversations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<u32>,
    /// ShareGPT only: every user turn that has a reply is a request, its history (earlier
    /// turns with the dataset's own replies) before it; a conversation's requests stay
    /// together and in order. Default: the first user turn only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multi_turn: bool,
    /// A scored set servebench writes itself instead of a file: `copy`, `arithmetic` or
    /// `json_extract`, each row with its `expected` answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate: Option<super::score::GeneratedSet>,
    /// `generate`: rows in the set (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u32>,
    /// `generate`: the set's seed (default the workload's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DatasetFormat {
    /// One JSON object per line with `prompt` or `messages`.
    #[default]
    Jsonl,
    /// ShareGPT JSON: an array of `{conversations: [{from, value}]}`.
    Sharegpt,
}

/// Replay of a request trace as an open-loop arrival schedule: Mooncake JSONL (`timestamp`,
/// `input_length`, `output_length`, `hash_ids`), or the Azure LLM inference or BurstGPT CSV.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    /// Path relative to the plan file.
    pub path: String,
    /// The file's format (default `mooncake`).
    #[serde(default, skip_serializing_if = "TraceFormat::is_default")]
    pub format: TraceFormat,
    /// Multiplies the trace's timestamps: 0.5 replays twice as fast.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub time_scale: f64,
    /// Tokens per hash block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_tokens: Option<u32>,
}

/// How a trace file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// JSONL, one `{timestamp (ms), input_length, output_length, hash_ids}` per line.
    #[default]
    Mooncake,
    /// Azure LLM inference trace CSV: `TIMESTAMP` (date and time), `ContextTokens`,
    /// `GeneratedTokens`.
    Azure,
    /// BurstGPT CSV: `Timestamp` (seconds), `Model`, `Request tokens`, `Response tokens`,
    /// `Total tokens`, `Log Type`.
    Burstgpt,
}

impl TraceFormat {
    fn is_default(&self) -> bool {
        *self == TraceFormat::Mooncake
    }
}

/// A session: `turns` requests sent one after another, each with the whole history so far
/// (the user messages and the server's own replies), `think_time` apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// Requests per session.
    #[schemars(range(min = 1))]
    pub turns: u32,
    /// Tokens of each later turn's new user message (default: `input_tokens`, which sizes
    /// the first turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_tokens: Option<TokenCount>,
    /// Pause between a reply and the next turn: a fixed time (`2s`), or `{mean: 2s}` for
    /// exponentially distributed pauses with that mean (seeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_time: Option<ThinkTime>,
    /// Send the session's id in this header with every turn (e.g. `x-session-id`), so a
    /// gateway can route a session's turns to one replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity_header: Option<String>,
}

/// The tools a chat workload offers, and the results its sessions send back.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tools {
    /// OpenAI function-calling definitions (`{type: function, function: {name, description,
    /// parameters}}`), sent as `tools`; default: a small built-in set (`search`, `read_file`,
    /// `run_command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definitions: Option<Vec<Value>>,
    /// `tool_choice` for the request that opens a turn (default `auto`); a request answering a
    /// tool result always asks `auto`, so the model can reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<ToolChoice>,
    /// Tokens of each synthetic tool result a session sends back (default 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_tokens: Option<TokenCount>,
}

/// How the model may choose among the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides whether to call a tool.
    Auto,
    /// The model must call a tool.
    Required,
    /// The model must not call a tool (the definitions still count as prompt tokens).
    None,
}

/// Time between a reply and the next turn of a session.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ThinkTime {
    Fixed(HumanDuration),
    Exponential {
        /// Mean pause.
        mean: HumanDuration,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Conversation {
    /// Turns per conversation.
    pub turns: u32,
}

/// Settings inherited by every phase that does not set them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PhaseDefaults {
    /// Name of the target a phase runs against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Name of the workload a phase sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<HumanDuration>,
    /// Stop starting requests after this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub requests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Warmup>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown: Option<HumanDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_timeout: Option<HumanDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<Tolerance>,
    /// What a phase does when its target goes down (default `then: fail`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_target_down: Option<super::target_down::OnTargetDown>,
    /// Actions run before the phase starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<super::hooks::Hook>,
    /// Actions run after the phase ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<super::hooks::Hook>,
}

impl PhaseDefaults {
    /// True when no setting is given.
    pub fn is_empty(&self) -> bool {
        *self == PhaseDefaults::default()
    }
}

/// One phase: a target, a workload, one load model and at least one bound. A phase with
/// `recheck` repeats an earlier phase's exact settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// Unique name; may use templates bound by `matrix`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Name of an earlier phase whose settings this one repeats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recheck: Option<String>,
    /// Every request of this phase may fail (a fault drill, an endpoint expected to refuse):
    /// a phase whose every request failed does not then fail the run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expect_errors: bool,
    /// What the phase does when its target goes down: `then: fail` (default; `continue`
    /// with `expect_errors`), `wait` (up to `wait_up_to`) or `continue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_target_down: Option<super::target_down::OnTargetDown>,
    /// Name of the target this phase runs against (from `targets`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Label for the path the traffic takes (defaults to the target's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// Name of the workload this phase sends (from `workloads`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// Closed loop: this many requests in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub concurrency: Option<u32>,
    /// Open loop: arrivals at a rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Capacity search: probes at varying load, in place of `concurrency` or `rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<super::search::Search>,
    /// Stop starting requests after this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<HumanDuration>,
    /// Stop starting requests after this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub requests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Warmup>,
    /// Pause after the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown: Option<HumanDuration>,
    /// How long in-flight requests may take to finish after the bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_timeout: Option<HumanDuration>,
    /// Drift tolerance, for a recheck.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<Tolerance>,
    /// Free-form labels carried into the report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Actions run before the phase starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<super::hooks::Hook>,
    /// End the measured window once the listed percentiles are stable (in place of
    /// `duration`, which `max_duration` replaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<super::until::Until>,
    /// Actions run while the measured window runs, each at its `at` offset (switching a
    /// fault mid-phase, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub during: Vec<super::hooks::Hook>,
    /// Actions run after the phase ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<super::hooks::Hook>,
    /// Set by a `repeat` group's expansion: which arm and round this phase is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<super::repeat::Round>,
    /// Cartesian sweep: each key sets the phase field of that name and binds a template
    /// variable; one phase per combination, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix: Option<IndexMap<String, Vec<Value>>>,
    /// Several named workloads (archetypes) with their shares of the phase's requests, in
    /// place of `workload`: `{short-chat: 70%, long-rag: 20%, vision: 10%}`. Figures are
    /// reported per archetype and for the whole phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<super::model_mix::ArchetypeMix>,
    /// Name of another phase to set this one against: the report shows this phase's
    /// overhead over it (TTFT, TPOT, per-request output tokens/s) with intervals, e.g. a
    /// structured-output phase against the same workload unconstrained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare_to: Option<String>,
}

/// Open-loop arrivals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rate {
    /// Mean requests per second.
    pub rps: f64,
    /// How arrivals are spaced: `constant`, `poisson` or `gamma`.
    #[serde(default)]
    pub arrival: Arrival,
    /// Gamma shape is `1 / burstiness`: 1 is Poisson, above 1 is burstier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burstiness: Option<f64>,
    /// Cap on requests in flight; arrivals beyond it wait (and the wait is reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_concurrency: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    Constant,
    #[default]
    Poisson,
    Gamma,
}

/// Requests sent before the measured window and never counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Warmup {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<HumanDuration>,
    /// Warm up with this many requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}
