//! Hugging Face counters: a local `tokenizer.json` with its chat template, or the built-in table.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use tokenizers::{Encoding, Tokenizer};

use super::{TokenCounter, count_input};
use crate::plan::Api;
use crate::workload::{ChatMessage, PromptInput, WorkloadError};

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
    include_bytes!("../../../tests/fixtures/tokenizers/smollm2-135m/tokenizer.json");

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
    pub(super) fn fragment_adds_one_token_per_word(
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
            Api::Chat | Api::Responses | Api::Messages => {
                if self.template.is_none() {
                    return Ok(false);
                }
                let roles = ["user", "assistant", "user"];
                let messages: Vec<ChatMessage> = contents
                    .iter()
                    .zip(roles)
                    .map(|(c, role)| ChatMessage::new(role, c.clone()))
                    .collect();
                // A template that fails on this shape fails on real prompts too; re-tokenizing
                // reports that where it happens.
                let Ok(text) = self.render_chat(&messages) else {
                    return Ok(false);
                };
                self.probe(&text, &contents, false)
            }
            Api::Completions | Api::Embeddings | Api::Rerank => {
                self.probe(&contents.join("\n"), &contents, true)
            }
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
        PromptInput::Batch { query, texts } => {
            let mut key = format!("b\u{1}{}", query.as_deref().unwrap_or(""));
            for t in texts {
                key.push('\u{2}');
                key.push_str(t);
            }
            key
        }
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
