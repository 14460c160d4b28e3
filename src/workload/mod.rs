//! Prompt sources: synthetic (seeded, token-count targets, shared prefixes), datasets, traces,
//! and the queue that builds them ahead of the requests.

pub mod dataset;
pub mod generated;
pub mod images;
pub mod queue;
pub mod synthetic;
pub mod tokens;
pub mod trace;
mod words;

mod archetypes;
mod build;
mod model_mix;
mod prompt_check;
mod tools;
pub use archetypes::Archetypes;
pub use model_mix::ModelChooser;
pub use prompt_check::{PromptTally, PromptTokenCheck};
pub use tools::{ToolCall, builtin_tools};

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use queue::{PromptQueue, QueueStats};
pub use synthetic::Sizing;
use synthetic::TextKit;
use tokens::{ServerCalibration, ServerCounter, TokenCounter};

/// One request's input, ready for the client to put in a body.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub input: PromptInput,
    /// Prompt tokens the server should report (chat template included), when known.
    pub planned_prompt_tokens: Option<u64>,
    /// `max_tokens` for the request.
    pub max_tokens: u32,
    /// Trace replay: when to send, relative to the phase start.
    pub scheduled_at: Option<std::time::Duration>,
    /// Sessions: the turn this prompt's user message opens; the scheduler puts the session's
    /// history (with the server's replies) before it.
    pub session: Option<SessionTurn>,
    /// The served model this request names, when its workload mixes models (else the
    /// target's `model:`).
    pub model: Option<Arc<str>>,
    /// The workload this request was drawn from, when its phase mixes archetypes.
    pub archetype: Option<Arc<str>>,
    /// The right answer, when the prompt's dataset row carries one (`expected`): its reply is
    /// scored against it.
    pub expected: Option<Arc<str>>,
}

impl Prompt {
    /// Images the request carries.
    pub fn images(&self) -> u32 {
        match &self.input {
            PromptInput::Messages(messages) => messages.iter().map(|m| m.images.len() as u32).sum(),
            PromptInput::Text(_) | PromptInput::Batch { .. } => 0,
        }
    }
}

/// One turn of a session workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SessionTurn {
    /// Session number within the window, from 0.
    pub session: u64,
    /// Turn within the session, from 0.
    pub turn: u32,
    pub turns: u32,
    /// Pause before this turn is sent, after the previous reply (0 for the first turn).
    pub think: std::time::Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PromptInput {
    /// Chat API messages.
    Messages(Vec<ChatMessage>),
    /// Completions API prompt text.
    Text(String),
    /// Embeddings `input` texts, or rerank `documents` with their `query`.
    Batch {
        query: Option<String>,
        texts: Vec<String>,
    },
}

impl PromptInput {
    /// How many inputs (embedding texts, rerank documents) the request carries.
    pub fn inputs(&self) -> u64 {
        match self {
            PromptInput::Batch { texts, .. } => texts.len() as u64,
            PromptInput::Messages(_) | PromptInput::Text(_) => 1,
        }
    }
}

/// One chat message: a user or assistant turn, an assistant's tool calls, or a tool's result.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    /// Required when read (a dataset's message without one is an error).
    pub content: String,
    /// An assistant message's tool calls (its `content` is then sent as `null` when empty).
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// A `role: tool` message: the call it answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// A user message's images, sent after its text as content parts.
    #[serde(skip)]
    pub images: Vec<images::Image>,
}

impl ChatMessage {
    /// A plain text message.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.into(),
            content: content.into(),
            ..ChatMessage::default()
        }
    }
}

impl ChatMessage {
    /// The text then each image, as OpenAI content parts.
    pub fn content_parts(&self) -> Vec<serde_json::Value> {
        let text = serde_json::json!({"type": "text", "text": self.content});
        let images = self.images.iter().map(
            |image| serde_json::json!({"type": "image_url", "image_url": {"url": &*image.url}}),
        );
        std::iter::once(text).chain(images).collect()
    }
}

/// Written as the OpenAI API takes it: `tool_calls` and `tool_call_id` only when set, and an
/// empty content beside tool calls as `null`.
impl Serialize for ChatMessage {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("role", &self.role)?;
        if !self.images.is_empty() {
            map.serialize_entry("content", &self.content_parts())?;
        } else if self.content.is_empty() && !self.tool_calls.is_empty() {
            map.serialize_entry("content", &())?;
        } else {
            map.serialize_entry("content", &self.content)?;
        }
        if !self.tool_calls.is_empty() {
            map.serialize_entry("tool_calls", &self.tool_calls)?;
        }
        if let Some(id) = &self.tool_call_id {
            map.serialize_entry("tool_call_id", id)?;
        }
        map.end()
    }
}

use std::path::PathBuf;

use crate::plan::{Api, TokenCount, TokenizerSource, TokenizerSpec, Workload};

/// What a prompt source needs to know about where its prompts go.
#[derive(Debug, Clone)]
pub struct WorkloadContext {
    pub api: Api,
    /// Resolved tokenizer: the workload's, else the target's, else the simulator's for a
    /// simulator target, else the built-in table.
    pub tokenizer: TokenizerSpec,
    /// Directory relative paths in the plan are taken from.
    pub plan_dir: PathBuf,
    /// The workload's seed, else the plan's, else 0.
    pub seed: u64,
    /// Base URL including `/v1` (for `/tokenize` calibration).
    pub base_url: String,
    pub model: String,
    /// The run's salt, when it goes in the prompts' text (`salt: text`): a few words at the
    /// head of every prompt, counted in its planned tokens.
    pub text_salt: Option<String>,
}

/// The tokenizer a phase counts with: the workload's, else the target's, else the simulator's
/// rules for a simulator target, else the built-in table.
pub fn resolve_tokenizer(workload: &Workload, target: &crate::plan::Target) -> TokenizerSpec {
    let fallback = if target.simulator.is_some() {
        TokenizerSource::Simulator
    } else {
        TokenizerSource::Builtin
    };
    workload
        .tokenizer
        .clone()
        .or_else(|| target.tokenizer.clone())
        .unwrap_or(TokenizerSpec {
            source: fallback,
            path: None,
            chat_template: None,
        })
}

/// A workload could not be built (missing dataset, bad tokenizer file, …).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct WorkloadError(pub String);

/// `max_tokens` when the workload sets no `output_tokens` (and the dataset or trace entry
/// gives none).
pub const DEFAULT_OUTPUT_TOKENS: u32 = 256;
/// Planned prompt tokens of a synthetic workload that sets no `input_tokens`.
pub const DEFAULT_INPUT_TOKENS: u32 = 512;
/// Words in a rerank request's query.
pub const RERANK_QUERY_WORDS: usize = 16;
/// Words of a synthetic tool result when the workload sets no `tools.result_tokens`.
pub const DEFAULT_TOOL_RESULT_TOKENS: u32 = 64;
/// Relative gap between planned and served prompt tokens tolerated before a warning.
pub const DEFAULT_PROMPT_TOLERANCE: f64 = 0.02;

/// Where prompts come from.
enum Kind {
    Synthetic,
    Dataset(dataset::DatasetSource),
    Trace(trace::TraceSource),
}

/// Deterministic stream of prompts for one phase.
///
/// Prompt `i` depends only on the workload, the context and `i`: the same plan and seed give
/// byte-identical prompts on every machine.
pub struct PromptSource {
    workload: Workload,
    context: WorkloadContext,
    kit: TextKit,
    kind: Kind,
    next_index: u64,
    calibration: Option<ServerCalibration>,
    /// Smallest synthetic prompt (template, shared prefix, nonce), measured once per counter.
    floor_tokens: u64,
    /// Sizing chosen by [`PromptSource::with_sizing`] instead of the counter's best.
    forced_sizing: Option<Sizing>,
    /// Each request's model, when the workload mixes models.
    models: Option<ModelChooser>,
    /// The workload's generated images, built once for the phase.
    images: Option<Arc<images::ImagePool>>,
    /// A phase's `mix`: every prompt comes from one of these, this source standing for the
    /// first archetype's workload only in its settings.
    archetypes: Option<Archetypes>,
}

impl PromptSource {
    pub fn new(workload: &Workload, context: &WorkloadContext) -> Result<Self, WorkloadError> {
        validate(workload)?;
        let counter = tokens::counter_for(&context.tokenizer, &context.plan_dir)?;
        let kit = TextKit::new(counter, context.api)?;
        let kind = prompt_kind(workload, context, &kit)?;
        let mut source = PromptSource {
            workload: workload.clone(),
            context: context.clone(),
            kit,
            kind,
            next_index: 0,
            calibration: None,
            floor_tokens: 0,
            forced_sizing: None,
            models: workload
                .models
                .as_ref()
                .map(|mix| ModelChooser::new(mix, context.seed)),
            images: match &workload.images {
                Some(plan) => Some(Arc::new(images::ImagePool::build(plan, context.seed)?)),
                None => None,
            },
            archetypes: None,
        };
        source.floor_tokens = source.synthetic_floor()?;
        source.check()?;
        Ok(source)
    }

    /// A phase's `mix`: one source per archetype, each workload with its own context, in
    /// `mix`'s order; the first also stands for the phase's workload. `seed` spreads the
    /// prompts over the archetypes, `requests` is the phase's fixed request count.
    pub fn mixed(
        mix: &crate::plan::ArchetypeMix,
        parts: &[(&Workload, WorkloadContext)],
        seed: u64,
        requests: Option<u64>,
    ) -> Result<Self, WorkloadError> {
        let mut sources = Vec::with_capacity(parts.len());
        for ((workload, context), name) in parts.iter().zip(mix.names()) {
            let source = PromptSource::new(workload, context)
                .map_err(|e| WorkloadError(format!("archetype `{name}`: {e}")))?;
            sources.push(source);
        }
        let (lead, context) = parts
            .first()
            .ok_or_else(|| WorkloadError("the mix lists no workload".into()))?;
        let mut source = PromptSource::new(lead, context)?;
        source.archetypes = Some(Archetypes::new(mix, sources, seed, requests));
        Ok(source)
    }

    /// Fails on a fixed target below what the template and nonce alone take, and on a chat
    /// template that cannot render; builds the first prompt to prove the rest.
    fn check(&self) -> Result<(), WorkloadError> {
        if let (Kind::Synthetic, Some(TokenCount::Fixed(n))) =
            (&self.kind, &self.workload.input_tokens)
        {
            let floor = self.floor_tokens;
            if u64::from(*n) < floor {
                return Err(WorkloadError(format!(
                    "input_tokens {n} is below the {floor} tokens the template, nonce{} take \
                     alone with {}",
                    if self.workload.shared_prefix.is_some() {
                        " and shared prefix"
                    } else {
                        ""
                    },
                    self.kit.counter.description()
                )));
            }
        }
        self.build(0).map(|_| ())
    }

    fn synthetic_floor(&self) -> Result<u64, WorkloadError> {
        let prefix = self
            .workload
            .shared_prefix
            .as_ref()
            .map_or(0, |p| p.tokens as usize);
        self.kit
            .floor(self.head_salt_words().len() + prefix + synthetic::NONCE_WORDS)
    }

    /// The salt words a synthetic head starts with: only before a shared prefix. Without
    /// one the nonce leads the prompt and carries the salt itself, at no cost in tokens.
    fn head_salt_words(&self) -> Vec<&'static str> {
        if self.workload.shared_prefix.is_some() {
            self.salt_words()
        } else {
            Vec::new()
        }
    }

    /// How far the run's text salt turns the nonce's words (0 without a text salt).
    fn nonce_salt(&self) -> u64 {
        self.context
            .text_salt
            .as_deref()
            .map_or(0, |salt| crate::hash::fnv1a_64(salt.as_bytes()))
    }

    /// The words the run's text salt leads every prompt with (none without a text salt).
    fn salt_words(&self) -> Vec<&'static str> {
        self.context
            .text_salt
            .as_deref()
            .map_or_else(Vec::new, |salt| self.kit.salt_words(salt))
    }

    /// The same prompts sized the given way: [`Sizing::Retokenize`] is the reference the
    /// arithmetic is tested against.
    pub fn with_sizing(mut self, sizing: Sizing) -> Self {
        self.kit = self.kit.with_sizing(sizing);
        self.forced_sizing = Some(sizing);
        self
    }

    /// How this source sizes synthetic prompts.
    pub fn sizing(&self) -> Sizing {
        self.kit.sizing
    }

    /// [`PromptSource::calibrate_with`] over a plain HTTP client with no extra headers, for a
    /// server reached directly.
    pub async fn calibrate(&mut self) -> Result<(), WorkloadError> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| WorkloadError(format!("cannot build HTTP client: {e}")))?;
        self.calibrate_with(&http, &reqwest::header::HeaderMap::new())
            .await
    }

    /// For `tokenizer: server`: measure the chat-template overhead against `/tokenize`, through
    /// `http` with `headers` (the target's TLS, proxy, socket, key and headers); every
    /// archetype of a mix is measured for its own prompts.
    pub async fn calibrate_with(
        &mut self,
        http: &reqwest::Client,
        headers: &reqwest::header::HeaderMap,
    ) -> Result<(), WorkloadError> {
        self.calibrate_own(http, headers).await?;
        if let Some(archetypes) = &mut self.archetypes {
            for source in &mut archetypes.sources {
                source.calibrate_own(http, headers).await?;
            }
        }
        Ok(())
    }

    async fn calibrate_own(
        &mut self,
        http: &reqwest::Client,
        headers: &reqwest::header::HeaderMap,
    ) -> Result<(), WorkloadError> {
        match self.context.tokenizer.source {
            TokenizerSource::Server => {}
            TokenizerSource::Simulator | TokenizerSource::Builtin | TokenizerSource::File => {
                return Ok(());
            }
        }
        let sample = format!(" {}", self.kit.words.join(" "));
        let calibration = tokens::calibrate_server(
            http,
            headers,
            &self.context.base_url,
            &self.context.model,
            &sample,
        )
        .await?;
        let counter: Arc<dyn TokenCounter> = Arc::new(ServerCounter::new(calibration.clone())?);
        let kit = TextKit::new(counter, self.context.api)?;
        self.kit = match self.forced_sizing {
            Some(sizing) => kit.with_sizing(sizing),
            None => kit,
        };
        if let Kind::Dataset(d) = &mut self.kind {
            d.recount(&self.kit)?;
        }
        self.calibration = Some(calibration);
        self.floor_tokens = self.synthetic_floor()?;
        self.check()
    }

    /// The next prompt, in a seeded, reproducible order.
    pub fn next_prompt(&mut self) -> Prompt {
        let index = self.next_index;
        self.next_index += 1;
        self.prompt(index)
    }

    /// Prompt number `index` (what the `index + 1`-th `next_prompt` call returns).
    pub fn prompt(&self, index: u64) -> Prompt {
        if let Some(archetypes) = &self.archetypes {
            return archetypes.prompt(index);
        }
        let mut prompt = self.built(index);
        if let Some(models) = &self.models {
            // Every turn of a session or conversation goes to its first turn's model.
            let key = match (prompt.session, &self.workload.conversation) {
                (Some(turn), _) => turn.session,
                (None, Some(c)) => index / u64::from(c.turns.max(1)),
                (None, None) => index,
            };
            prompt.model = Some(models.pick(key));
        }
        if let (Some(pool), PromptInput::Messages(messages)) = (&self.images, &mut prompt.input)
            && let Some(user) = messages.iter_mut().rev().find(|m| m.role == "user")
        {
            user.images = pool.for_request(index);
        }
        self.count_images(&mut prompt);
        prompt
    }

    /// Adds a prompt's image tokens to its plan by the simulator's rule when the simulator
    /// counts; another server's rule is its model's own, so the plan is then unknown.
    fn count_images(&self, prompt: &mut Prompt) {
        let PromptInput::Messages(messages) = &prompt.input else {
            return;
        };
        let images = messages.iter().flat_map(|m| &m.images);
        prompt.planned_prompt_tokens = match self.context.tokenizer.source {
            TokenizerSource::Simulator => prompt.planned_prompt_tokens.map(|text| {
                text + images
                    .map(|i| crate::sim::images::image_tokens(i.width, i.height))
                    .sum::<u64>()
            }),
            _ if images.clone().next().is_some() => None,
            _ => prompt.planned_prompt_tokens,
        };
    }

    /// What a request's images look like, for the report header (`None` without images).
    pub fn images_description(&self) -> Option<String> {
        if let Some(archetypes) = &self.archetypes {
            let each: Vec<String> = archetypes
                .each()
                .filter_map(|(name, s)| Some(format!("{name}: {}", s.images_description()?)))
                .collect();
            return (!each.is_empty()).then(|| each.join("; "));
        }
        self.images.as_ref().map(|pool| pool.describe())
    }

    /// Prompt `index` as built, or one of the planned shape if building fails.
    fn built(&self, index: u64) -> Prompt {
        match self.build(index) {
            Ok(p) => p,
            // `new` built prompt 0 with the same counter, so this is not expected; still,
            // send something of the planned shape rather than stop the run.
            Err(_) => Prompt {
                input: self.kit.input(&[], String::new()),
                planned_prompt_tokens: None,
                max_tokens: DEFAULT_OUTPUT_TOKENS,
                expected: None,
                scheduled_at: None,
                archetype: None,
                session: None,
                model: None,
            },
        }
    }

    /// Trace replay: send times relative to the phase start, one per trace entry. The
    /// scheduler sends prompt `i` at `Prompt.scheduled_at` (equal to `schedule[i]` for the
    /// first pass).
    pub fn arrival_schedule(&self) -> Option<&[Duration]> {
        match &self.kind {
            Kind::Trace(t) => Some(&t.schedule),
            Kind::Synthetic | Kind::Dataset(_) => None,
        }
    }

    /// Requests in one pass of a trace: the natural `requests` bound of a replay phase.
    pub fn request_limit(&self) -> Option<u64> {
        match &self.kind {
            Kind::Trace(t) => Some(t.entries.len() as u64),
            Kind::Synthetic | Kind::Dataset(_) => None,
        }
    }

    /// sha256 (hex) of the dataset or trace file, for the report.
    pub fn dataset_sha256(&self) -> Option<&str> {
        match &self.kind {
            Kind::Dataset(d) => Some(&d.sha256),
            Kind::Trace(t) => Some(&t.sha256),
            Kind::Synthetic => None,
        }
    }

    /// How prompt tokens are counted (for the report and the mismatch warning).
    pub fn tokenizer_description(&self) -> String {
        self.kit.counter.description()
    }

    /// The `/tokenize` measurements, after [`PromptSource::calibrate`] on a server tokenizer.
    pub fn calibration(&self) -> Option<&ServerCalibration> {
        self.calibration.as_ref()
    }

    /// The workload's tolerance for planned vs served prompt tokens (default 2%).
    pub fn prompt_tolerance(&self) -> f64 {
        self.workload
            .prompt_tolerance
            .unwrap_or(DEFAULT_PROMPT_TOLERANCE)
    }

    /// One line saying what the prompts are planned to be, e.g. for the report header.
    pub fn planned_tokens_description(&self) -> String {
        if let Some(archetypes) = &self.archetypes {
            let each: Vec<String> = archetypes
                .each()
                .map(|(name, s)| format!("{name}: {}", s.planned_tokens_description()))
                .collect();
            return format!("mix of {}", each.join("; "));
        }
        let output = self.workload.output_tokens.as_ref().map_or(
            format!("{DEFAULT_OUTPUT_TOKENS} (default)"),
            synthetic::describe_count,
        );
        let what = match &self.kind {
            Kind::Synthetic => {
                let input = self.workload.input_tokens.as_ref().map_or(
                    format!("{DEFAULT_INPUT_TOKENS} (default)"),
                    synthetic::describe_count,
                );
                let mut s = format!("synthetic: input {input} tokens, output {output} tokens");
                if let Some(p) = &self.workload.shared_prefix {
                    s.push_str(&format!(
                        ", shared prefix {} tokens in {} groups",
                        p.tokens, p.groups
                    ));
                }
                if let Some(session) = &self.workload.session {
                    s.push_str(&format!(
                        ", {}-turn sessions carrying the server's replies",
                        session.turns
                    ));
                }
                if let Some(c) = &self.workload.conversation {
                    s.push_str(&format!(", {}-turn conversations", c.turns));
                }
                s
            }
            Kind::Dataset(d) => format!(
                "dataset: {} of {} entries, output {}",
                d.entries.len(),
                d.total_entries,
                if self.workload.output_tokens.is_some() {
                    format!("{output} tokens")
                } else {
                    "from each entry".into()
                }
            ),
            Kind::Trace(t) => format!(
                "trace: {} requests over {:.3} s, {} tokens per hash block",
                t.entries.len(),
                t.span().as_secs_f64(),
                t.block_tokens
            ),
        };
        let images = self.images.as_ref().map_or(String::new(), |pool| {
            format!(", images {}", pool.describe())
        });
        format!("{what}{images} ({})", self.kit.counter.description())
    }
}

/// The workload's settings, each alone and against the others: one prompt source, counts,
/// the synthetic-only settings and the tolerance.
fn validate(workload: &Workload) -> Result<(), WorkloadError> {
    let sources = usize::from(workload.dataset.is_some()) + usize::from(workload.trace.is_some());
    if sources > 1 {
        return Err(WorkloadError(
            "a workload takes a dataset or a trace, not both".into(),
        ));
    }
    if let Some(count) = &workload.input_tokens {
        synthetic::validate_count(count, "input_tokens")?;
    }
    if let Some(count) = &workload.output_tokens {
        synthetic::validate_count(count, "output_tokens")?;
    }
    validate_synthetic_only(workload, sources)?;
    if let Some(t) = workload
        .prompt_tolerance
        .filter(|t| !(t.is_finite() && *t >= 0.0))
    {
        return Err(WorkloadError(format!(
            "prompt_tolerance must be a non-negative fraction, got {t}"
        )));
    }
    Ok(())
}

/// A shared prefix, sessions and conversations: each well formed, and only on synthetic
/// prompts (`sources` counts the dataset and trace).
fn validate_synthetic_only(workload: &Workload, sources: usize) -> Result<(), WorkloadError> {
    if let Some(p) = &workload.shared_prefix {
        if p.groups == 0 || p.tokens == 0 {
            return Err(WorkloadError(
                "shared_prefix: tokens and groups must be at least 1".into(),
            ));
        }
        if sources > 0 {
            return Err(WorkloadError(
                "shared_prefix applies to synthetic prompts, not to a dataset or trace".into(),
            ));
        }
    }
    if let Some(s) = &workload.session {
        if s.turns == 0 {
            return Err(WorkloadError("session: turns must be at least 1".into()));
        }
        if sources > 0 || workload.conversation.is_some() {
            return Err(WorkloadError(
                "session applies to synthetic prompts, not to a dataset, trace or conversation"
                    .into(),
            ));
        }
        if let Some(count) = &s.user_tokens {
            synthetic::validate_count(count, "session.user_tokens")?;
        }
    }
    if let Some(c) = &workload.conversation {
        if c.turns == 0 {
            return Err(WorkloadError(
                "conversation: turns must be at least 1".into(),
            ));
        }
        if sources > 0 {
            return Err(WorkloadError(
                "conversation applies to synthetic prompts, not to a dataset or trace".into(),
            ));
        }
    }
    Ok(())
}

/// Where prompts come from: the dataset (with the run's salt words), the trace, or the
/// synthetic generator.
fn prompt_kind(
    workload: &Workload,
    context: &WorkloadContext,
    kit: &TextKit,
) -> Result<Kind, WorkloadError> {
    Ok(if let Some(d) = &workload.dataset {
        let path = match d.generate {
            Some(kind) => std::path::PathBuf::from(format!("generated {kind:?} set")),
            None => tokens::resolve(&context.plan_dir, &d.path),
        };
        let salt = context
            .text_salt
            .as_deref()
            .map(|s| kit.salt_words(s).join(" "));
        let scored = (context.seed, workload.score.is_some());
        Kind::Dataset(dataset::prepare(d, &path, kit, scored, salt)?)
    } else if let Some(t) = &workload.trace {
        let path = tokens::resolve(&context.plan_dir, &t.path);
        Kind::Trace(trace::load(&path, t.format, t.time_scale, t.block_tokens)?)
    } else {
        Kind::Synthetic
    })
}
