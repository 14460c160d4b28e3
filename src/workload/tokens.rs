//! Token counters: how many prompt tokens a server will report for a prompt.
//!
//! Four sources behind one trait: the simulator's documented rules (exact), a local Hugging
//! Face `tokenizer.json` with its chat template, a built-in BPE table embedded in the binary,
//! and a target's `/tokenize` endpoint (calibrated once, then applied as a linear model over
//! the built-in table).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use tokenizers::Tokenizer;

use super::{ChatMessage, WorkloadError};
use crate::plan::{TokenizerSource, TokenizerSpec};
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
}

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
