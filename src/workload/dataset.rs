//! Dataset files (JSONL prompts or messages, ShareGPT JSON): parsing, filtering, sampling.

use std::path::Path;

use rand::seq::SliceRandom;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::synthetic::{Purpose, TextKit, stream_rng};
use super::{ChatMessage, PromptInput, WorkloadError};
use crate::plan::{Api, Dataset, DatasetFormat};

/// One usable dataset entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub input: EntryInput,
    /// The entry's own output length: JSONL `output_tokens`/`max_tokens`, ShareGPT's first
    /// reply counted in tokens.
    pub output_tokens: Option<u32>,
    /// 1-based line (JSONL) or entry number (ShareGPT) in the file, for messages; the turns
    /// of one multi-turn conversation share it.
    pub origin: usize,
    /// JSONL `expected`: the right answer, which a workload's `score` holds the reply to.
    pub expected: Option<std::sync::Arc<str>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum EntryInput {
    Text(String),
    Messages(Vec<ChatMessage>),
}

/// The file's bytes read once: its sha256 and its entries.
pub struct Loaded {
    pub sha256: String,
    pub entries: Vec<Entry>,
}

pub fn read_file(path: &Path) -> Result<(Vec<u8>, String), WorkloadError> {
    let bytes = std::fs::read(path)
        .map_err(|e| WorkloadError(format!("{}: cannot read: {e}", path.display())))?;
    let sha = hex::encode(Sha256::digest(&bytes));
    Ok((bytes, sha))
}

pub fn load(
    path: &Path,
    format: DatasetFormat,
    multi_turn: bool,
    kit: &TextKit,
) -> Result<Loaded, WorkloadError> {
    let (bytes, sha256) = read_file(path)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| WorkloadError(format!("{}: not UTF-8: {e}", path.display())))?;
    let entries = match format {
        DatasetFormat::Jsonl if multi_turn => {
            return Err(WorkloadError(format!(
                "{}: multi_turn reads ShareGPT conversations; a JSONL entry carries its whole \
                 history in `messages` already",
                path.display()
            )));
        }
        DatasetFormat::Jsonl => parse_jsonl(path, text)?,
        DatasetFormat::Sharegpt => parse_sharegpt(path, text, multi_turn, kit)?,
    };
    if entries.is_empty() {
        return Err(WorkloadError(format!(
            "{}: the dataset has no usable entries",
            path.display()
        )));
    }
    Ok(Loaded { sha256, entries })
}

fn parse_jsonl(path: &Path, text: &str) -> Result<Vec<Entry>, WorkloadError> {
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let at = |msg: String| WorkloadError(format!("{}:{line_no}: {msg}", path.display()));
        if line.trim().is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_str(line).map_err(|e| at(format!("invalid JSON: {e}")))?;
        let obj = value
            .as_object()
            .ok_or_else(|| at("expected a JSON object".into()))?;
        let input = match (obj.get("prompt"), obj.get("messages")) {
            (Some(Value::String(p)), None) => EntryInput::Text(p.clone()),
            (None, Some(m)) => EntryInput::Messages(
                serde_json::from_value::<Vec<ChatMessage>>(m.clone()).map_err(|e| {
                    at(format!(
                        "`messages` must be an array of {{role, content}} strings: {e}"
                    ))
                })?,
            ),
            (Some(_), Some(_)) => return Err(at("has both `prompt` and `messages`".into())),
            (Some(_), None) => return Err(at("`prompt` must be a string".into())),
            (None, None) => return Err(at("needs a `prompt` string or a `messages` array".into())),
        };
        if matches!(&input, EntryInput::Messages(m) if m.is_empty()) {
            return Err(at("`messages` is empty".into()));
        }
        let input = match obj.get("images") {
            None | Some(Value::Null) => input,
            Some(images) => with_images(input, &read_images(path, images).map_err(at)?)
                .ok_or_else(|| at("`images` need a user message to go with".into()))?,
        };
        let output_tokens = match obj.get("output_tokens").or_else(|| obj.get("max_tokens")) {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| *n > 0)
                    .ok_or_else(|| at("`output_tokens` must be a positive integer".into()))?,
            ),
        };
        let expected = match obj.get("expected") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str().into()),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => Some(v.to_string().into()),
            Some(_) => return Err(at("`expected` must be a string or a number".into())),
        };
        entries.push(Entry {
            input,
            output_tokens,
            origin: line_no,
            expected,
        });
    }
    Ok(entries)
}

/// A row's `images`: file paths relative to the dataset file, each read once.
fn read_images(dataset: &Path, images: &Value) -> Result<Vec<super::images::Image>, String> {
    let paths = images
        .as_array()
        .ok_or("`images` must be an array of file paths")?;
    let dir = dataset.parent().unwrap_or(Path::new(""));
    paths
        .iter()
        .map(|p| {
            let p = p
                .as_str()
                .ok_or("`images` must be an array of file paths")?;
            super::images::read_file(&dir.join(p)).map_err(|e| e.0)
        })
        .collect()
}

/// The entry with `images` on its last user message (a prompt becomes one).
fn with_images(input: EntryInput, images: &[super::images::Image]) -> Option<EntryInput> {
    let mut messages = match input {
        EntryInput::Text(text) => vec![ChatMessage::new("user", text)],
        EntryInput::Messages(messages) => messages,
    };
    let user = messages.iter_mut().rev().find(|m| m.role == "user")?;
    user.images.extend_from_slice(images);
    Some(EntryInput::Messages(messages))
}

/// ShareGPT: the first human turn is the prompt and the reply after it sets the output
/// length (as vLLM's benchmark does); conversations without both are skipped. With
/// `multi_turn`, every human turn followed by a reply is an entry whose messages are the
/// conversation so far (system turns included, earlier replies as the dataset recorded them).
fn parse_sharegpt(
    path: &Path,
    text: &str,
    multi_turn: bool,
    kit: &TextKit,
) -> Result<Vec<Entry>, WorkloadError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        WorkloadError(format!(
            "{}:{}:{}: invalid JSON: {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    let items = value.as_array().ok_or_else(|| {
        WorkloadError(format!(
            "{}: ShareGPT data must be a JSON array of {{conversations: [...]}}",
            path.display()
        ))
    })?;
    let mut entries = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = |msg: &str| WorkloadError(format!("{}: entry {}: {msg}", path.display(), i + 1));
        let turns = item
            .get("conversations")
            .and_then(|c| c.as_array())
            .ok_or_else(|| at("needs a `conversations` array"))?;
        let mut history: Vec<ChatMessage> = Vec::new();
        let mut asked: Option<String> = None;
        for turn in turns {
            let from = turn.get("from").and_then(|f| f.as_str());
            let value = turn.get("value").and_then(|v| v.as_str());
            let (Some(from), Some(value)) = (from, value) else {
                return Err(at("each turn needs `from` and `value` strings"));
            };
            let role = match from {
                "human" | "user" => "user",
                "gpt" | "assistant" | "chatgpt" | "bard" => "assistant",
                "system" => "system",
                _ => continue,
            };
            match (role, &asked) {
                ("user", None) => asked = Some(value.to_string()),
                ("assistant", Some(prompt)) => {
                    let output = kit.counter.count_fragment(value)?;
                    let input = if multi_turn {
                        let mut messages = history.clone();
                        messages.push(message("user", prompt));
                        EntryInput::Messages(messages)
                    } else {
                        EntryInput::Text(prompt.clone())
                    };
                    entries.push(Entry {
                        input,
                        output_tokens: u32::try_from(output).ok().filter(|n| *n > 0),
                        origin: i + 1,
                        expected: None,
                    });
                    if !multi_turn {
                        break;
                    }
                    history.push(message("user", prompt));
                    history.push(message("assistant", value));
                    asked = None;
                }
                // A second user message before a reply joins the first, as one turn.
                ("user", Some(prompt)) if multi_turn => {
                    asked = Some(format!("{prompt}\n\n{value}"));
                }
                ("system", _) if multi_turn && asked.is_none() => {
                    history.push(message("system", value));
                }
                _ => {}
            }
        }
    }
    Ok(entries)
}

fn message(role: &str, content: &str) -> ChatMessage {
    ChatMessage::new(role, content)
}

/// `sample` whole conversations (seeded), each keeping its turns in order.
fn sample_conversations(
    kept: Vec<(Entry, u64)>,
    sample: usize,
    seed: u64,
    path: &Path,
) -> Result<Vec<(Entry, u64)>, WorkloadError> {
    let mut conversations: Vec<Vec<(Entry, u64)>> = Vec::new();
    for (entry, tokens) in kept {
        match conversations.last_mut() {
            Some(last) if last[0].0.origin == entry.origin => last.push((entry, tokens)),
            _ => conversations.push(vec![(entry, tokens)]),
        }
    }
    if sample > conversations.len() {
        return Err(WorkloadError(format!(
            "{}: sample {sample} asks for more than the {} conversations that pass the length filter",
            path.display(),
            conversations.len()
        )));
    }
    conversations.shuffle(&mut stream_rng(seed, Purpose::DatasetOrder, 0));
    conversations.truncate(sample);
    Ok(conversations.into_iter().flatten().collect())
}

/// An entry as a request input for `api`.
pub fn to_input(entry: &EntryInput, api: Api) -> PromptInput {
    match (entry, api) {
        (EntryInput::Text(t), Api::Completions | Api::Embeddings | Api::Rerank) => {
            PromptInput::Text(t.clone())
        }
        (EntryInput::Text(t), Api::Chat | Api::Responses | Api::Messages) => {
            PromptInput::Messages(vec![ChatMessage::new("user", t.clone())])
        }
        (EntryInput::Messages(m), Api::Chat | Api::Responses | Api::Messages) => {
            PromptInput::Messages(m.clone())
        }
        // Completions have no roles: the contents, one paragraph each.
        (EntryInput::Messages(m), Api::Completions | Api::Embeddings | Api::Rerank) => {
            PromptInput::Text(
                m.iter()
                    .map(|m| m.content.as_str())
                    .collect::<Vec<_>>()
                    .join("\n\n"),
            )
        }
    }
}

/// A dataset ready to serve: entries filtered by length, then sampled.
pub struct DatasetSource {
    pub sha256: String,
    pub entries: Vec<Entry>,
    /// Prompt tokens of each entry as a request input, counted once.
    pub tokens: Vec<u64>,
    /// Entries in the file before filtering.
    pub total_entries: usize,
}

/// The dataset's entries: its file's, or the scored set servebench writes (`generate`); a
/// scored workload (`scored`) needs `expected` on every row, refused here, before any request.
fn load_entries(
    dataset: &Dataset,
    path: &Path,
    kit: &TextKit,
    seed: u64,
    scored: bool,
) -> Result<Loaded, WorkloadError> {
    let loaded = match dataset.generate {
        Some(kind) => {
            let rows = dataset.rows.unwrap_or(super::generated::DEFAULT_ROWS);
            let text = super::generated::jsonl(kind, rows, dataset.seed.unwrap_or(seed));
            Loaded {
                sha256: hex::encode(Sha256::digest(text.as_bytes())),
                entries: parse_jsonl(path, &text)?,
            }
        }
        None => load(path, dataset.format, dataset.multi_turn, kit)?,
    };
    if let Some(entry) = loaded
        .entries
        .iter()
        .find(|e| scored && e.expected.is_none())
    {
        return Err(WorkloadError(format!(
            "{}:{}: the workload's `score` needs an `expected` answer on every row; this one \
             has none",
            path.display(),
            entry.origin
        )));
    }
    Ok(loaded)
}

pub fn prepare(
    dataset: &Dataset,
    path: &Path,
    kit: &TextKit,
    (seed, scored): (u64, bool),
    salt: Option<String>,
) -> Result<DatasetSource, WorkloadError> {
    if dataset.sample == Some(0) {
        return Err(WorkloadError(format!(
            "{}: sample must be at least 1",
            path.display()
        )));
    }
    let loaded = load_entries(dataset, path, kit, seed, scored)?;
    let total_entries = loaded.entries.len();
    let with_images = loaded.entries.iter().find(|e| match &e.input {
        EntryInput::Messages(m) => m.iter().any(|m| !m.images.is_empty()),
        EntryInput::Text(_) => false,
    });
    if let (Some(entry), false) = (with_images, kit.api == Api::Chat) {
        return Err(WorkloadError(format!(
            "{}:{}: images go as chat content parts; this phase's API is not chat",
            path.display(),
            entry.origin
        )));
    }
    let mut kept = Vec::new();
    for entry in loaded.entries {
        let tokens = kit.count(&to_input(&entry.input, kit.api))?;
        let low = dataset
            .min_input_tokens
            .is_some_and(|m| tokens < u64::from(m));
        let high = dataset
            .max_input_tokens
            .is_some_and(|m| tokens > u64::from(m));
        if !low && !high {
            kept.push((entry, tokens));
        }
    }
    if kept.is_empty() {
        return Err(WorkloadError(format!(
            "{}: none of the {total_entries} entries has between {} and {} input tokens ({})",
            path.display(),
            dataset
                .min_input_tokens
                .map_or("0".into(), |m| m.to_string()),
            dataset
                .max_input_tokens
                .map_or("any".into(), |m| m.to_string()),
            kit.counter.description()
        )));
    }
    if let (Some(sample), true) = (dataset.sample, dataset.multi_turn) {
        kept = sample_conversations(kept, sample as usize, seed, path)?;
    } else if let Some(sample) = dataset.sample {
        let sample = sample as usize;
        if sample > kept.len() {
            return Err(WorkloadError(format!(
                "{}: sample {sample} asks for more than the {} entries that pass the length filter",
                path.display(),
                kept.len()
            )));
        }
        kept.shuffle(&mut stream_rng(seed, Purpose::DatasetOrder, 0));
        kept.truncate(sample);
    }
    let (entries, tokens) = kept.into_iter().unzip();
    let mut source = DatasetSource {
        sha256: loaded.sha256,
        entries,
        tokens,
        total_entries,
    };
    // Filtered and sampled unsalted, so every run keeps the same entries; then salted and
    // counted again, so the planned tokens include the salt.
    if let Some(salt) = salt {
        for entry in &mut source.entries {
            salt_entry(&mut entry.input, &salt);
        }
        source.recount(kit)?;
    }
    Ok(source)
}

/// The run's salt words at the head of an entry: before its text, or its first message.
fn salt_entry(input: &mut EntryInput, salt: &str) {
    match input {
        EntryInput::Text(text) => *text = format!("{salt} {text}"),
        EntryInput::Messages(messages) => {
            if let Some(first) = messages.first_mut() {
                first.content = format!("{salt} {}", first.content);
            }
        }
    }
}

impl DatasetSource {
    /// Counts every entry again, with another counter (after a server calibration).
    pub fn recount(&mut self, kit: &TextKit) -> Result<(), WorkloadError> {
        self.tokens = self
            .entries
            .iter()
            .map(|e| kit.count(&to_input(&e.input, kit.api)))
            .collect::<Result<_, _>>()?;
        Ok(())
    }
}
