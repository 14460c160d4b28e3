//! A target's `/tokenize` endpoint: calibrated once, then a linear model over the built-in table.

use super::{HfCounter, TokenCounter};
use crate::plan::Api;
use crate::workload::{ChatMessage, PromptInput, WorkloadError};

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
            // Batches are put together from prompts already counted one by one.
            PromptInput::Batch { texts, .. } => texts
                .iter()
                .try_fold(0, |sum, t| Ok(sum + c.text_base_tokens + scaled(t, 0)?)),
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
    http: &reqwest::Client,
    headers: &reqwest::header::HeaderMap,
    base_url: &str,
    model: &str,
    sample: &str,
) -> Result<ServerCalibration, WorkloadError> {
    let probe = Probe::new(http, headers, base_url, model, sample)?;
    // vLLM/SGLang first; llama.cpp ignores `prompt` and answers an empty token list.
    let first = post_count(
        &probe.client,
        &probe.url,
        &serde_json::json!({"model": model, "prompt": sample, "add_special_tokens": false}),
    )
    .await;
    match first {
        Ok(sample_tokens) if sample_tokens > 0 => probe.openai_style(sample_tokens).await,
        first => probe.llama_cpp(sample, first).await,
    }
}

/// What each calibration step needs: the HTTP client, the endpoints and the empty chats.
struct Probe<'a> {
    client: Access,
    root: String,
    url: String,
    model: &'a str,
    builtin: HfCounter,
    sample_builtin: f64,
    empty: ChatMessage,
    three: [ChatMessage; 3],
}

impl<'a> Probe<'a> {
    fn new(
        http: &reqwest::Client,
        headers: &reqwest::header::HeaderMap,
        base_url: &str,
        model: &'a str,
        sample: &str,
    ) -> Result<Self, WorkloadError> {
        let root = server_root(base_url);
        let client = Access {
            http: http.clone(),
            headers: headers.clone(),
        };
        let url = format!("{root}/tokenize");
        let builtin = HfCounter::builtin()?;
        let sample_builtin = builtin.count_fragment(sample)?.max(1) as f64;
        let empty = ChatMessage::new("user", String::new());
        let three = [
            empty.clone(),
            ChatMessage::new("assistant", String::new()),
            empty.clone(),
        ];
        Ok(Probe {
            client,
            root,
            url,
            model,
            builtin,
            sample_builtin,
            empty,
            three,
        })
    }

    /// The vLLM/SGLang shape answered the sample with `sample_tokens`.
    async fn openai_style(&self, sample_tokens: u64) -> Result<ServerCalibration, WorkloadError> {
        let (client, url, model) = (&self.client, &self.url, self.model);
        let mut notes = Vec::new();
        let text_base = post_count(
            client,
            url,
            &serde_json::json!({"model": model, "prompt": ""}),
        )
        .await?;
        let one = post_count(
            client,
            url,
            &serde_json::json!({"model": model, "messages": [&self.empty], "add_generation_prompt": true}),
        )
        .await;
        let (fixed, per_message) = match one {
            Ok(one) => {
                let three_count = post_count(
                    client,
                    url,
                    &serde_json::json!({"model": model, "messages": &self.three, "add_generation_prompt": true}),
                )
                .await?;
                split_overhead(one, three_count)
            }
            Err(e) => {
                notes.push(format!(
                    "chat template overhead not measured ({e}); using the built-in template's"
                ));
                builtin_overhead(&self.builtin)?
            }
        };
        Ok(ServerCalibration {
            dialect: TokenizeDialect::OpenAiStyle,
            text_base_tokens: text_base,
            chat_fixed_tokens: fixed,
            chat_message_tokens: per_message,
            content_ratio: sample_tokens as f64 / self.sample_builtin,
            notes,
        })
    }

    /// The vLLM/SGLang shape failed (`first`); tries llama.cpp's.
    async fn llama_cpp(
        &self,
        sample: &str,
        first: Result<u64, WorkloadError>,
    ) -> Result<ServerCalibration, WorkloadError> {
        let (client, url) = (&self.client, &self.url);
        let mut notes = Vec::new();
        let sample_tokens = post_count(client, url, &serde_json::json!({"content": sample}))
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
            client,
            url,
            &serde_json::json!({"content": "", "add_special": true}),
        )
        .await?;
        let apply = format!("{}/apply-template", self.root);
        let rendered_one = post_template(client, &apply, std::slice::from_ref(&self.empty)).await;
        let (fixed, per_message) = match rendered_one {
            Ok(one) => {
                let three_text = post_template(client, &apply, &self.three).await?;
                let count = |text: String| async move {
                    post_count(
                        client,
                        url,
                        &serde_json::json!({"content": text, "add_special": true, "parse_special": true}),
                    )
                    .await
                };
                split_overhead(count(one).await?, count(three_text).await?)
            }
            Err(e) => {
                notes.push(format!(
                    "chat template overhead not measured ({e}); using the built-in template's"
                ));
                builtin_overhead(&self.builtin)?
            }
        };
        Ok(ServerCalibration {
            dialect: TokenizeDialect::LlamaCpp,
            text_base_tokens: text_base,
            chat_fixed_tokens: fixed,
            chat_message_tokens: per_message,
            content_ratio: sample_tokens as f64 / self.sample_builtin,
            notes,
        })
    }
}

/// Splits the counts of one and three empty messages into fixed and per-message overhead.
pub(super) fn split_overhead(one: u64, three: u64) -> (u64, u64) {
    let per_message = three.saturating_sub(one) / 2;
    (one.saturating_sub(per_message), per_message)
}

fn builtin_overhead(builtin: &HfCounter) -> Result<(u64, u64), WorkloadError> {
    let msg = |role: &str| ChatMessage::new(role, String::new());
    let one = builtin.count_chat(&[msg("user")])?;
    let three = builtin.count_chat(&[msg("user"), msg("assistant"), msg("user")])?;
    Ok(split_overhead(one, three))
}

/// The HTTP client and headers side traffic to the target goes through.
struct Access {
    http: reqwest::Client,
    headers: reqwest::header::HeaderMap,
}

async fn post_json(
    client: &Access,
    url: &str,
    body: &serde_json::Value,
) -> Result<serde_json::Value, WorkloadError> {
    let response = client
        .http
        .post(url)
        .headers(client.headers.clone())
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
    client: &Access,
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
    client: &Access,
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
