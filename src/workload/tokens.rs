//! Token counters: how many prompt tokens a server will report for a prompt.
//!
//! Four sources behind one trait: the simulator's documented rules (exact), a local Hugging
//! Face `tokenizer.json` with its chat template, a built-in BPE table embedded in the binary,
//! and a target's `/tokenize` endpoint (calibrated once, then applied as a linear model over
//! the built-in table).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use tokenizers::{Encoding, Tokenizer};

use super::{ChatMessage, PromptInput, WorkloadError};
use crate::plan::{Api, TokenizerSource, TokenizerSpec};
use crate::sim::tokenizer as sim_tokenizer;

/// Counts prompt tokens the way a server reports them in `usage.prompt_tokens`.
pub trait TokenCounter: Send + Sync {
    /// Prompt tokens of a completions request with this prompt (special tokens included).
    fn count_text(&self, text: &str) -> Result<u64, WorkloadError>;
    /// Prompt tokens of a chat request: template, every message and the generation prompt.
    fn count_chat(&self, messages: &[ChatMessage]) -> Result<u64, WorkloadError>;
    /// Tokens of a fragment of text inside a larger prompt (no special tokens).
    fn count_fragment(&self, text: &str) -> Result<u64, WorkloadError>;
    /// Short human description for reports and warnings.
    fn description(&self) -> String;

    /// Whether appending one synthetic word (` word`) to a message made of such words adds
    /// exactly one token in this request form, wherever it lands, so that prompts can be sized
    /// by arithmetic ([`TokenCounter::count_grown`]). When not, prompts are re-tokenized.
    fn adds_one_token_per_word(
        &self,
        _api: Api,
        _words: &[&'static str],
    ) -> Result<bool, WorkloadError> {
        Ok(false)
    }

    /// Prompt tokens of `skeleton` with `grown[i]` more synthetic words appended to message
    /// `i` (one entry for a completions prompt). Exact where
    /// [`TokenCounter::adds_one_token_per_word`] holds.
    fn count_grown(&self, skeleton: &PromptInput, grown: &[u64]) -> Result<u64, WorkloadError> {
        Ok(count_input(self, skeleton)? + grown.iter().sum::<u64>())
    }
}

/// Prompt tokens of a request input.
pub fn count_input<C: TokenCounter + ?Sized>(
    counter: &C,
    input: &PromptInput,
) -> Result<u64, WorkloadError> {
    match input {
        PromptInput::Messages(m) => counter.count_chat(m),
        PromptInput::Text(t) => counter.count_text(t),
    }
}

/// The simulator's rules from `src/sim/tokenizer.rs`; exact against a simulator target.
#[derive(Debug, Clone, Copy, Default)]
pub struct SimulatorCounter;

impl TokenCounter for SimulatorCounter {
    fn count_text(&self, text: &str) -> Result<u64, WorkloadError> {
        Ok(sim_tokenizer::count_text_tokens(text))
    }

    fn count_chat(&self, messages: &[ChatMessage]) -> Result<u64, WorkloadError> {
        Ok(sim_tokenizer::count_chat_tokens(
            messages.iter().map(|m| m.content.as_str()),
        ))
    }

    fn count_fragment(&self, text: &str) -> Result<u64, WorkloadError> {
        Ok(sim_tokenizer::count_text_tokens(text))
    }

    fn description(&self) -> String {
        "simulator tokenizer".to_string()
    }

    fn adds_one_token_per_word(
        &self,
        _api: Api,
        words: &[&'static str],
    ) -> Result<bool, WorkloadError> {
        // One token per whitespace-free run, whatever surrounds it.
        Ok(words
            .iter()
            .all(|w| !w.is_empty() && !w.contains(char::is_whitespace)))
    }
}

/// A Jinja chat template rendered the way Hugging Face `transformers` renders it.
pub struct ChatTemplate {
    env: minijinja::Environment<'static>,
    bos_token: String,
    eos_token: String,
}

impl ChatTemplate {
    /// Compiles `source`; `origin` names it in errors.
    pub fn new(
        source: String,
        bos_token: String,
        eos_token: String,
        origin: &str,
    ) -> Result<Self, WorkloadError> {
        let mut env = minijinja::Environment::new();
        // transformers renders with trim_blocks and lstrip_blocks on.
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |msg: String| -> Result<String, minijinja::Error> {
                Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    msg,
                ))
            },
        );
        env.add_function("strftime_now", |format: String| -> String {
            chrono::Utc::now().format(&format).to_string()
        });
        env.add_template_owned("chat", source)
            .map_err(|e| WorkloadError(format!("{origin}: invalid chat template: {e}")))?;
        Ok(ChatTemplate {
            env,
            bos_token,
            eos_token,
        })
    }

    /// The prompt text the server's template produces, generation prompt included.
    pub fn render(&self, messages: &[ChatMessage]) -> Result<String, WorkloadError> {
        let template = self
            .env
            .get_template("chat")
            .map_err(|e| WorkloadError(format!("chat template: {e}")))?;
        template
            .render(minijinja::context! {
                messages => messages,
                add_generation_prompt => true,
                bos_token => &self.bos_token,
                eos_token => &self.eos_token,
            })
            .map_err(|e| WorkloadError(format!("chat template failed to render: {e}")))
    }
}

/// A generic ChatML template (no default system prompt) for the built-in table.
const BUILTIN_CHAT_TEMPLATE: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// SmolLM2's byte-level BPE (49,152 tokens), shipped as a test fixture and embedded here.
static BUILTIN_TOKENIZER_JSON: &[u8] =
    include_bytes!("../../tests/fixtures/tokenizers/smollm2-135m/tokenizer.json");

fn builtin_tokenizer() -> Result<Arc<Tokenizer>, WorkloadError> {
    static CELL: OnceLock<Result<Arc<Tokenizer>, String>> = OnceLock::new();
    CELL.get_or_init(|| {
        Tokenizer::from_bytes(BUILTIN_TOKENIZER_JSON)
            .map(Arc::new)
            .map_err(|e| e.to_string())
    })
    .clone()
    .map_err(|e| WorkloadError(format!("built-in tokenizer: {e}")))
}

/// A Hugging Face tokenizer plus an optional chat template.
pub struct HfCounter {
    tokenizer: Arc<Tokenizer>,
    template: Option<ChatTemplate>,
    description: String,
    /// Counts of small prompts (each message cut to its first word), the base that
    /// [`TokenCounter::count_grown`] adds words to; keyed by their text.
    skeletons: Mutex<HashMap<String, u64>>,
}

/// Skeleton counts kept per counter: one per first word and message shape in practice.
const SKELETON_CACHE: usize = 4096;

impl HfCounter {
    /// The embedded table with a generic ChatML template.
    pub fn builtin() -> Result<Self, WorkloadError> {
        let template = ChatTemplate::new(
            BUILTIN_CHAT_TEMPLATE.to_string(),
            String::new(),
            "<|im_end|>".to_string(),
            "built-in chat template",
        )?;
        Ok(HfCounter {
            tokenizer: builtin_tokenizer()?,
            template: Some(template),
            description: "built-in BPE (SmolLM2 49k vocabulary, ChatML template)".to_string(),
            skeletons: Mutex::default(),
        })
    }

    /// A local `tokenizer.json`; the chat template is `chat_template` if given, else
    /// `chat_template.jinja` or `tokenizer_config.json`'s `chat_template` beside the file.
    pub fn from_files(
        tokenizer_path: &Path,
        chat_template: Option<&Path>,
    ) -> Result<Self, WorkloadError> {
        let bytes = std::fs::read(tokenizer_path).map_err(|e| {
            WorkloadError(format!(
                "{}: cannot read tokenizer file: {e}",
                tokenizer_path.display()
            ))
        })?;
        let tokenizer = Tokenizer::from_bytes(&bytes).map_err(|e| {
            WorkloadError(format!(
                "{}: not a Hugging Face tokenizer.json: {e}",
                tokenizer_path.display()
            ))
        })?;
        let dir = tokenizer_path.parent().unwrap_or(Path::new("."));
        let config = read_tokenizer_config(&dir.join("tokenizer_config.json"))?;
        let token_text = |key: &str| -> String {
            match config.as_ref().and_then(|c| c.get(key)) {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(serde_json::Value::Object(o)) => o
                    .get("content")
                    .and_then(|c| c.as_str())
                    .unwrap_or_default()
                    .to_string(),
                _ => String::new(),
            }
        };
        let (bos, eos) = (token_text("bos_token"), token_text("eos_token"));
        let beside = dir.join("chat_template.jinja");
        let template = if let Some(path) = chat_template {
            Some((read_text(path)?, path.display().to_string()))
        } else if beside.is_file() {
            Some((read_text(&beside)?, beside.display().to_string()))
        } else {
            config
                .as_ref()
                .and_then(|c| c.get("chat_template"))
                .and_then(|t| t.as_str())
                .map(|t| (t.to_string(), "tokenizer_config.json".to_string()))
        };
        let template = template
            .map(|(source, origin)| ChatTemplate::new(source, bos, eos, &origin))
            .transpose()?;
        Ok(HfCounter {
            tokenizer: Arc::new(tokenizer),
            template,
            description: format!("tokenizer file {}", tokenizer_path.display()),
            skeletons: Mutex::default(),
        })
    }

    pub fn has_chat_template(&self) -> bool {
        self.template.is_some()
    }

    /// Token ids of a rendered prompt, for tests and diagnostics.
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>, WorkloadError> {
        self.tokenizer
            .encode_fast(text, add_special_tokens)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| WorkloadError(format!("tokenizer failed: {e}")))
    }

    /// Whether `text`, holding `contents` in order (see [`probe_contents`]), tokenizes with
    /// one token of its own per word after the first of each content (see
    /// [`one_token_per_word`]), with nothing in the tokenizer that counts by length.
    fn probe(
        &self,
        text: &str,
        contents: &[String],
        add_special: bool,
    ) -> Result<bool, WorkloadError> {
        // Truncation or padding in tokenizer.json would change counts with length.
        if self.tokenizer.get_truncation().is_some() || self.tokenizer.get_padding().is_some() {
            return Ok(false);
        }
        let encoding = self
            .tokenizer
            .encode(text, add_special)
            .map_err(|e| WorkloadError(format!("tokenizer failed: {e}")))?;
        Ok(one_token_per_word(text, contents, &encoding))
    }

    /// [`TokenCounter::adds_one_token_per_word`] for fragments (no template, no special
    /// tokens), what [`ServerCounter`] counts content with.
    fn fragment_adds_one_token_per_word(
        &self,
        words: &[&'static str],
    ) -> Result<bool, WorkloadError> {
        let contents = probe_contents(words);
        let mut all = true;
        for content in &contents {
            all &= self.probe(content, std::slice::from_ref(content), false)?;
        }
        Ok(all)
    }

    /// The chat prompt text as the template renders it.
    pub fn render_chat(&self, messages: &[ChatMessage]) -> Result<String, WorkloadError> {
        match &self.template {
            Some(t) => t.render(messages),
            None => Err(WorkloadError(format!(
                "{} has no chat template: set `tokenizer.chat_template` or use `api: completions`",
                self.description
            ))),
        }
    }
}

fn read_text(path: &Path) -> Result<String, WorkloadError> {
    std::fs::read_to_string(path)
        .map_err(|e| WorkloadError(format!("{}: cannot read: {e}", path.display())))
}

fn read_tokenizer_config(path: &Path) -> Result<Option<serde_json::Value>, WorkloadError> {
    if !path.is_file() {
        return Ok(None);
    }
    let text = read_text(path)?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| WorkloadError(format!("{}: invalid JSON: {e}", path.display())))
}

impl TokenCounter for HfCounter {
    fn count_text(&self, text: &str) -> Result<u64, WorkloadError> {
        // Completions prompts get the tokenizer's special tokens (BOS), as vLLM does.
        Ok(self.encode(text, true)?.len() as u64)
    }

    fn count_chat(&self, messages: &[ChatMessage]) -> Result<u64, WorkloadError> {
        // The template writes its own special tokens; servers add none on top.
        let rendered = self.render_chat(messages)?;
        Ok(self.encode(&rendered, false)?.len() as u64)
    }

    fn count_fragment(&self, text: &str) -> Result<u64, WorkloadError> {
        Ok(self.encode(text, false)?.len() as u64)
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn adds_one_token_per_word(
        &self,
        api: Api,
        words: &[&'static str],
    ) -> Result<bool, WorkloadError> {
        let contents = probe_contents(words);
        match api {
            Api::Chat => {
                if self.template.is_none() {
                    return Ok(false);
                }
                let roles = ["user", "assistant", "user"];
                let messages: Vec<ChatMessage> = contents
                    .iter()
                    .zip(roles)
                    .map(|(c, role)| ChatMessage {
                        role: role.into(),
                        content: c.clone(),
                    })
                    .collect();
                // A template that fails on this shape fails on real prompts too; re-tokenizing
                // reports that where it happens.
                let Ok(text) = self.render_chat(&messages) else {
                    return Ok(false);
                };
                self.probe(&text, &contents, false)
            }
            Api::Completions => self.probe(&contents.join("\n"), &contents, true),
        }
    }

    fn count_grown(&self, skeleton: &PromptInput, grown: &[u64]) -> Result<u64, WorkloadError> {
        let key = skeleton_key(skeleton);
        let cached = self
            .skeletons
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .copied();
        let base = match cached {
            Some(n) => n,
            None => {
                let n = count_input(self, skeleton)?;
                let mut cache = self.skeletons.lock().unwrap_or_else(|p| p.into_inner());
                if cache.len() < SKELETON_CACHE {
                    cache.insert(key, n);
                }
                n
            }
        };
        Ok(base + grown.iter().sum::<u64>())
    }
}

/// A cache key that tells roles, contents and the request form apart.
fn skeleton_key(input: &PromptInput) -> String {
    match input {
        PromptInput::Text(t) => format!("t\u{1}{t}"),
        PromptInput::Messages(m) => {
            let mut key = String::from("m");
            for message in m {
                key.push('\u{1}');
                key.push_str(&message.role);
                key.push('\u{2}');
                key.push_str(&message.content);
            }
            key
        }
    }
}

/// Three contents holding every word: in order, reversed, and rotated by half, so each word
/// is seen after different neighbours and some word ends each message.
fn probe_contents(words: &[&'static str]) -> Vec<String> {
    let forward = words.join(" ");
    let reversed: Vec<&str> = words.iter().rev().copied().collect();
    let half = words.len() / 2;
    let rotated: Vec<&str> = words[half..]
        .iter()
        .chain(&words[..half])
        .copied()
        .collect();
    vec![forward, reversed.join(" "), rotated.join(" ")]
}

/// True when, in `encoding` of `text`, every word after the first of each content (found in
/// order in `text`) is exactly one token spanning ` word`, in a pre-tokenizer piece of its
/// own. The BPE model tokenizes each piece on its own, so such a word adds one token
/// wherever it is put.
fn one_token_per_word(text: &str, contents: &[String], encoding: &Encoding) -> bool {
    let offsets = encoding.get_offsets();
    let word_ids = encoding.get_word_ids();
    let mut pieces: HashMap<u32, usize> = HashMap::new();
    for id in word_ids.iter().flatten() {
        *pieces.entry(*id).or_default() += 1;
    }
    let mut spans = Vec::new();
    let mut from = 0;
    for content in contents {
        let Some(at) = text[from..].find(content.as_str()).map(|i| i + from) else {
            return false;
        };
        let mut pos = at;
        for (j, word) in content.split(' ').enumerate() {
            if j > 0 {
                // ` word`: the space belongs to the word's token.
                spans.push((pos - 1, pos + word.len()));
            }
            pos += word.len() + 1;
        }
        from = at + content.len();
    }
    let mut token = 0;
    for (start, end) in spans {
        while token < offsets.len() && offsets[token].1 <= start {
            token += 1;
        }
        let first = token;
        let mut k = token;
        while k < offsets.len() && offsets[k].0 < end {
            k += 1;
        }
        // A post-processor may trim the leading space from the offsets.
        let (s, e) = offsets.get(first).copied().unwrap_or_default();
        if k - first != 1 || !(s == start || s == start + 1) || e != end {
            return false;
        }
        match word_ids[first] {
            Some(id) if pieces.get(&id) == Some(&1) => {}
            _ => return false,
        }
    }
    true
}

/// Which `/tokenize` request shape the target speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizeDialect {
    /// vLLM and SGLang: `{model, prompt}` / `{model, messages}` → `{count, tokens}`.
    OpenAiStyle,
    /// llama.cpp: `{content}` → `{tokens}`, chat rendered by `/apply-template`.
    LlamaCpp,
}

/// What `/tokenize` said about the target's tokenizer and chat template.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerCalibration {
    pub dialect: TokenizeDialect,
    /// Tokens of an empty completions prompt (BOS and the like).
    pub text_base_tokens: u64,
    /// Chat tokens independent of the message count (system preamble, generation prompt).
    pub chat_fixed_tokens: u64,
    /// Chat tokens each message adds on top of its content.
    pub chat_message_tokens: u64,
    /// Server tokens per built-in-table token, measured on synthetic text.
    pub content_ratio: f64,
    /// Anything measured indirectly, for the report.
    pub notes: Vec<String>,
}

/// Counts with the built-in table, scaled and offset by a [`ServerCalibration`].
pub struct ServerCounter {
    base: HfCounter,
    calibration: ServerCalibration,
}

impl ServerCounter {
    pub fn new(calibration: ServerCalibration) -> Result<Self, WorkloadError> {
        Ok(ServerCounter {
            base: HfCounter::builtin()?,
            calibration,
        })
    }

    pub fn calibration(&self) -> &ServerCalibration {
        &self.calibration
    }

    fn content(&self, text: &str) -> Result<u64, WorkloadError> {
        let n = self.base.count_fragment(text)? as f64;
        Ok((n * self.calibration.content_ratio).round() as u64)
    }
}

impl TokenCounter for ServerCounter {
    fn count_text(&self, text: &str) -> Result<u64, WorkloadError> {
        Ok(self.calibration.text_base_tokens + self.content(text)?)
    }

    fn count_chat(&self, messages: &[ChatMessage]) -> Result<u64, WorkloadError> {
        let mut total = self.calibration.chat_fixed_tokens;
        for m in messages {
            total += self.calibration.chat_message_tokens + self.content(&m.content)?;
        }
        Ok(total)
    }

    fn count_fragment(&self, text: &str) -> Result<u64, WorkloadError> {
        self.content(text)
    }

    fn adds_one_token_per_word(
        &self,
        _api: Api,
        words: &[&'static str],
    ) -> Result<bool, WorkloadError> {
        // Contents are counted as fragments of the built-in table, without a template.
        self.base.fragment_adds_one_token_per_word(words)
    }

    fn count_grown(&self, skeleton: &PromptInput, grown: &[u64]) -> Result<u64, WorkloadError> {
        let c = &self.calibration;
        let scaled = |text: &str, more: u64| -> Result<u64, WorkloadError> {
            let n = (self.base.count_fragment(text)? + more) as f64;
            Ok((n * c.content_ratio).round() as u64)
        };
        match skeleton {
            PromptInput::Text(t) => Ok(c.text_base_tokens + scaled(t, grown.iter().sum())?),
            PromptInput::Messages(m) => {
                let mut total = c.chat_fixed_tokens;
                for (i, message) in m.iter().enumerate() {
                    let more = grown.get(i).copied().unwrap_or(0);
                    total += c.chat_message_tokens + scaled(&message.content, more)?;
                }
                Ok(total)
            }
        }
    }

    fn description(&self) -> String {
        let dialect = match self.calibration.dialect {
            TokenizeDialect::OpenAiStyle => "vLLM/SGLang",
            TokenizeDialect::LlamaCpp => "llama.cpp",
        };
        format!("server /tokenize ({dialect}) calibration")
    }
}

/// Resolves a tokenizer spec to a counter. `server` starts as the built-in table until
/// [`calibrate_server`] replaces it.
pub fn counter_for(
    spec: &TokenizerSpec,
    plan_dir: &Path,
) -> Result<Arc<dyn TokenCounter>, WorkloadError> {
    match spec.source {
        TokenizerSource::Simulator => Ok(Arc::new(SimulatorCounter)),
        TokenizerSource::Builtin | TokenizerSource::Server => Ok(Arc::new(HfCounter::builtin()?)),
        TokenizerSource::File => {
            let path = spec.path.as_deref().ok_or_else(|| {
                WorkloadError("tokenizer `source: file` needs `path` (a tokenizer.json)".into())
            })?;
            let template = spec.chat_template.as_deref().map(|t| resolve(plan_dir, t));
            Ok(Arc::new(HfCounter::from_files(
                &resolve(plan_dir, path),
                template.as_deref(),
            )?))
        }
    }
}

/// A plan path: absolute as is, relative to the plan's directory otherwise.
pub fn resolve(plan_dir: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        plan_dir.join(p)
    }
}

/// The server root for `/tokenize`: `base_url` without a trailing `/v1`.
pub fn server_root(base_url: &str) -> String {
    let trimmed = base_url.trim_end_matches('/');
    trimmed
        .strip_suffix("/v1")
        .unwrap_or(trimmed)
        .trim_end_matches('/')
        .to_string()
}

/// Calibrates against `{root}/tokenize`, detecting the request shape. `sample` is synthetic
/// text whose built-in count is known.
pub async fn calibrate_server(
    base_url: &str,
    model: &str,
    sample: &str,
) -> Result<ServerCalibration, WorkloadError> {
    let root = server_root(base_url);
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| WorkloadError(format!("cannot build HTTP client: {e}")))?;
    let url = format!("{root}/tokenize");
    let builtin = HfCounter::builtin()?;
    let sample_builtin = builtin.count_fragment(sample)?.max(1) as f64;
    let empty = ChatMessage {
        role: "user".into(),
        content: String::new(),
    };
    let three = [
        empty.clone(),
        ChatMessage {
            role: "assistant".into(),
            content: String::new(),
        },
        empty.clone(),
    ];

    // vLLM/SGLang first; llama.cpp ignores `prompt` and answers an empty token list.
    let probe = post_count(
        &client,
        &url,
        &serde_json::json!({"model": model, "prompt": sample, "add_special_tokens": false}),
    )
    .await;
    let mut notes = Vec::new();
    match probe {
        Ok(sample_tokens) if sample_tokens > 0 => {
            let text_base = post_count(
                &client,
                &url,
                &serde_json::json!({"model": model, "prompt": ""}),
            )
            .await?;
            let one = post_count(
                &client,
                &url,
                &serde_json::json!({"model": model, "messages": [&empty], "add_generation_prompt": true}),
            )
            .await;
            let (fixed, per_message) = match one {
                Ok(one) => {
                    let three_count = post_count(
                        &client,
                        &url,
                        &serde_json::json!({"model": model, "messages": &three, "add_generation_prompt": true}),
                    )
                    .await?;
                    split_overhead(one, three_count)
                }
                Err(e) => {
                    notes.push(format!(
                        "chat template overhead not measured ({e}); using the built-in template's"
                    ));
                    builtin_overhead(&builtin)?
                }
            };
            Ok(ServerCalibration {
                dialect: TokenizeDialect::OpenAiStyle,
                text_base_tokens: text_base,
                chat_fixed_tokens: fixed,
                chat_message_tokens: per_message,
                content_ratio: sample_tokens as f64 / sample_builtin,
                notes,
            })
        }
        first => {
            let sample_tokens = post_count(&client, &url, &serde_json::json!({"content": sample}))
                .await
                .map_err(|e| {
                    let first = match first {
                        Ok(_) => "an empty token list".to_string(),
                        Err(f) => f.0,
                    };
                    WorkloadError(format!(
                        "{url}: neither the vLLM/SGLang shape ({first}) nor the llama.cpp shape ({e}) worked"
                    ))
                })?;
            let text_base = post_count(
                &client,
                &url,
                &serde_json::json!({"content": "", "add_special": true}),
            )
            .await?;
            let apply = format!("{root}/apply-template");
            let rendered_one = post_template(&client, &apply, std::slice::from_ref(&empty)).await;
            let (fixed, per_message) = match rendered_one {
                Ok(one) => {
                    let three_text = post_template(&client, &apply, &three).await?;
                    let count = |text: String| {
                        let client = &client;
                        let url = &url;
                        async move {
                            post_count(
                                client,
                                url,
                                &serde_json::json!({"content": text, "add_special": true, "parse_special": true}),
                            )
                            .await
                        }
                    };
                    split_overhead(count(one).await?, count(three_text).await?)
                }
                Err(e) => {
                    notes.push(format!(
                        "chat template overhead not measured ({e}); using the built-in template's"
                    ));
                    builtin_overhead(&builtin)?
                }
            };
            Ok(ServerCalibration {
                dialect: TokenizeDialect::LlamaCpp,
                text_base_tokens: text_base,
                chat_fixed_tokens: fixed,
                chat_message_tokens: per_message,
                content_ratio: sample_tokens as f64 / sample_builtin,
                notes,
            })
        }
    }
}

/// Splits the counts of one and three empty messages into fixed and per-message overhead.
fn split_overhead(one: u64, three: u64) -> (u64, u64) {
    let per_message = three.saturating_sub(one) / 2;
    (one.saturating_sub(per_message), per_message)
}

fn builtin_overhead(builtin: &HfCounter) -> Result<(u64, u64), WorkloadError> {
    let msg = |role: &str| ChatMessage {
        role: role.into(),
        content: String::new(),
    };
    let one = builtin.count_chat(&[msg("user")])?;
    let three = builtin.count_chat(&[msg("user"), msg("assistant"), msg("user")])?;
    Ok(split_overhead(one, three))
}

async fn post_json(
    client: &reqwest::Client,
    url: &str,
    body: &serde_json::Value,
) -> Result<serde_json::Value, WorkloadError> {
    let response = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| WorkloadError(format!("{url}: request failed: {e}")))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| WorkloadError(format!("{url}: reading the response failed: {e}")))?;
    if !status.is_success() {
        let snippet: String = text.chars().take(200).collect();
        return Err(WorkloadError(format!("{url}: HTTP {status}: {snippet}")));
    }
    serde_json::from_str(&text)
        .map_err(|e| WorkloadError(format!("{url}: response is not JSON: {e}")))
}

/// `count` if present, else the length of `tokens`.
async fn post_count(
    client: &reqwest::Client,
    url: &str,
    body: &serde_json::Value,
) -> Result<u64, WorkloadError> {
    let value = post_json(client, url, body).await?;
    if let Some(count) = value.get("count").and_then(|c| c.as_u64()) {
        return Ok(count);
    }
    match value.get("tokens").and_then(|t| t.as_array()) {
        Some(tokens) => Ok(tokens.len() as u64),
        None => Err(WorkloadError(format!(
            "{url}: response has neither `count` nor `tokens`"
        ))),
    }
}

async fn post_template(
    client: &reqwest::Client,
    url: &str,
    messages: &[ChatMessage],
) -> Result<String, WorkloadError> {
    let value = post_json(client, url, &serde_json::json!({"messages": messages})).await?;
    value
        .get("prompt")
        .and_then(|p| p.as_str())
        .map(str::to_string)
        .ok_or_else(|| WorkloadError(format!("{url}: response has no `prompt` string")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_root_strips_v1() {
        assert_eq!(server_root("http://h:8000/v1"), "http://h:8000");
        assert_eq!(server_root("http://h:8000/v1/"), "http://h:8000");
        assert_eq!(server_root("http://h:8000"), "http://h:8000");
        assert_eq!(server_root("http://h/proxy/v1"), "http://h/proxy");
    }

    #[test]
    fn overhead_split() {
        // fixed 10, per message 5: one message 15, three 25.
        assert_eq!(split_overhead(15, 25), (10, 5));
    }

    #[test]
    fn builtin_counts_words_and_template() {
        let c = HfCounter::builtin().expect("builtin");
        assert_eq!(c.count_fragment(" the cat sat").expect("count"), 3);
        let msg = ChatMessage {
            role: "user".into(),
            content: "hello there".into(),
        };
        let empty = ChatMessage {
            role: "user".into(),
            content: String::new(),
        };
        let with = c.count_chat(&[msg]).expect("chat");
        let without = c.count_chat(&[empty]).expect("chat");
        assert_eq!(with - without, 2);
    }
}
