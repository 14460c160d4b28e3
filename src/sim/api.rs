//! OpenAI-compatible request bodies as the simulator reads them, and what it derives from them.

use serde::Deserialize;

use super::tokenizer;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Chat,
    Completions,
    /// `/v1/responses`: chat underneath, Responses API events on the wire.
    Responses,
    /// `/v1/messages`: chat underneath, Messages API events on the wire.
    Messages,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Deserialize)]
pub(crate) struct ContentPart {
    /// `text`, `image_url`, …
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub image_url: Option<ImageUrl>,
}

/// An `image_url` part's value.
#[derive(Debug, Deserialize)]
pub(crate) struct ImageUrl {
    pub url: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ChatMessage {
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub content: Option<MessageContent>,
    /// An assistant message's tool calls.
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCallIn>>,
    /// A `role: tool` message: the call it answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

/// A tool call in a request's history.
#[derive(Debug, Deserialize)]
pub(crate) struct ToolCallIn {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionIn>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FunctionIn {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub arguments: Option<String>,
}

/// A tool a request offers: only its name and first parameter matter here.
#[derive(Debug, Deserialize)]
pub(crate) struct ToolDef {
    #[serde(default)]
    pub function: Option<FunctionDef>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FunctionDef {
    pub name: String,
    #[serde(default)]
    pub parameters: Option<serde_json::Value>,
}

impl ChatMessage {
    /// The URLs of the message's `image_url` parts; a part of that type without one is an
    /// error.
    pub(crate) fn image_urls(&self) -> impl Iterator<Item = Result<&str, String>> {
        let parts = match &self.content {
            Some(MessageContent::Parts(parts)) => parts.as_slice(),
            Some(MessageContent::Text(_)) | None => &[],
        };
        parts
            .iter()
            .filter_map(|part| match (&part.image_url, part.kind.as_deref()) {
                (Some(image), _) => Some(Ok(image.url.as_str())),
                (None, Some("image_url")) => Some(Err(
                    "an `image_url` part needs `image_url: {url}`".to_string(),
                )),
                (None, _) => None,
            })
    }

    /// The message's text; an assistant's tool calls add their names and arguments, which a
    /// chat template renders into the prompt too.
    pub(crate) fn text(&self) -> String {
        let mut text = match &self.content {
            None => String::new(),
            Some(MessageContent::Text(text)) => text.clone(),
            Some(MessageContent::Parts(parts)) => parts
                .iter()
                .filter_map(|part| part.text.as_deref())
                .collect::<Vec<_>>()
                .join("\n"),
        };
        for function in self.tool_calls.iter().flatten().flat_map(|c| &c.function) {
            for part in [&function.name, &function.arguments].into_iter().flatten() {
                if !text.is_empty() {
                    text.push(' ');
                }
                text.push_str(part);
            }
        }
        text
    }
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum PromptInput {
    Text(String),
    Texts(Vec<String>),
    Ids(Vec<u32>),
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct StreamOptions {
    #[serde(default)]
    pub include_usage: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ChatTemplateKwargs {
    #[serde(default)]
    pub enable_thinking: Option<bool>,
    #[serde(default)]
    pub thinking: Option<bool>,
    #[serde(default)]
    pub thinking_mode: Option<String>,
}

/// The fields of `/v1/chat/completions` and `/v1/completions` the simulator acts on; others
/// (temperature, top_p, …) are accepted and ignored.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct GenerationRequest {
    /// The model asked for; a server answers 404 for one it does not serve.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub messages: Option<Vec<ChatMessage>>,
    #[serde(default)]
    pub prompt: Option<PromptInput>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub max_completion_tokens: Option<u64>,
    #[serde(default)]
    pub min_tokens: Option<u64>,
    #[serde(default)]
    pub ignore_eos: Option<bool>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub chat_template_kwargs: Option<ChatTemplateKwargs>,
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    #[serde(default)]
    pub n: Option<u32>,
    #[serde(default)]
    pub tools: Option<Vec<ToolDef>>,
    /// `"auto"`, `"required"`, `"none"` or `{"type": "function", "function": {"name": …}}`.
    #[serde(default)]
    pub tool_choice: Option<serde_json::Value>,
    /// vLLM's `cache_salt`: prompts with different salts share no prefix-cache blocks.
    #[serde(default)]
    pub cache_salt: Option<String>,
    /// Structured output: `{type: json_object}` or `{type: json_schema, json_schema: {…}}`
    /// (the Responses API's `text.format` is read into it).
    #[serde(default)]
    pub response_format: Option<serde_json::Value>,
}

/// `/v1/responses`: `input` as a string or a list of messages (`content` a string or
/// `input_text` parts), `max_output_tokens`, `stream`, `reasoning.effort`; others ignored.
#[derive(Debug, Deserialize)]
pub(crate) struct ResponsesRequest {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub input: Option<ResponsesInput>,
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub reasoning: Option<ResponsesReasoning>,
    /// `text.format`: structured output.
    #[serde(default)]
    pub text: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum ResponsesInput {
    Text(String),
    Items(Vec<ChatMessage>),
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ResponsesReasoning {
    #[serde(default)]
    pub effort: Option<String>,
}

impl ResponsesRequest {
    /// The same request as chat: the input as messages.
    pub(crate) fn into_generation(self) -> GenerationRequest {
        let messages = match self.input {
            None => None,
            Some(ResponsesInput::Text(text)) => Some(vec![ChatMessage {
                role: Some("user".into()),
                content: Some(MessageContent::Text(text)),
                tool_calls: None,
                tool_call_id: None,
            }]),
            Some(ResponsesInput::Items(items)) => Some(items),
        };
        GenerationRequest {
            model: self.model,
            messages,
            max_tokens: self.max_output_tokens,
            stream: self.stream,
            reasoning_effort: self.reasoning.and_then(|r| r.effort),
            response_format: self
                .text
                .and_then(|mut t| t.get_mut("format").map(std::mem::take)),
            ..GenerationRequest::default()
        }
    }
}

/// `/v1/messages`: `system` (a string or text blocks) apart from `messages` (`content` a
/// string or text blocks), `max_tokens`, `stream`; others ignored.
#[derive(Debug, Deserialize)]
pub(crate) struct MessagesRequest {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub system: Option<MessageContent>,
    #[serde(default)]
    pub messages: Option<Vec<ChatMessage>>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub stream: Option<bool>,
}

impl MessagesRequest {
    /// The same request as chat: the system prompt as the first message.
    pub(crate) fn into_generation(self) -> GenerationRequest {
        let system = self.system.map(|content| ChatMessage {
            role: Some("system".into()),
            content: Some(content),
            tool_calls: None,
            tool_call_id: None,
        });
        let messages = self
            .messages
            .map(|messages| system.into_iter().chain(messages).collect());
        GenerationRequest {
            model: self.model,
            messages,
            max_tokens: self.max_tokens,
            stream: self.stream,
            ..GenerationRequest::default()
        }
    }
}

/// `/tokenize` in vLLM's shape (`prompt` or `messages`) or llama.cpp's (`content`).
#[derive(Debug, Deserialize)]
pub(crate) struct TokenizeRequest {
    #[serde(default)]
    pub prompt: Option<PromptInput>,
    #[serde(default)]
    pub messages: Option<Vec<ChatMessage>>,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub add_generation_prompt: Option<bool>,
}

/// The prompt as token ids (exact per `tokenizer`), for counting and for the prefix cache.
pub(crate) fn chat_ids(messages: &[ChatMessage], add_generation_prompt: bool) -> Vec<u32> {
    let texts: Vec<String> = messages.iter().map(ChatMessage::text).collect();
    let mut ids = tokenizer::chat_token_ids(texts.iter().map(String::as_str));
    if !add_generation_prompt {
        ids.truncate(ids.len() - tokenizer::GENERATION_PROMPT_TOKENS as usize);
    }
    ids
}

pub(crate) fn prompt_ids(prompt: &PromptInput) -> Result<Vec<u32>, String> {
    match prompt {
        PromptInput::Text(text) => Ok(tokenizer::text_token_ids(text).collect()),
        PromptInput::Texts(texts) => match texts.as_slice() {
            [one] => Ok(tokenizer::text_token_ids(one).collect()),
            _ => Err(format!(
                "`prompt` must hold exactly one string, found {}",
                texts.len()
            )),
        },
        PromptInput::Ids(ids) => Ok(ids.clone()),
    }
}

/// Thinking is on when the simulator has `reasoning_tokens > 0` and the request does not turn
/// it off (`chat_template_kwargs.enable_thinking: false`, `thinking: false` or
/// `thinking_mode: "disabled"`, or `reasoning_effort: "none"`). `reasoning_effort` scales the
/// budget: `minimal` and `low` ¼, `medium` ½ (rounded up), `high`/absent/other the full amount.
pub(crate) fn reasoning_budget(request: &GenerationRequest, reasoning_tokens: u32) -> u64 {
    let full = u64::from(reasoning_tokens);
    if full == 0 {
        return 0;
    }
    if let Some(kwargs) = &request.chat_template_kwargs {
        let disabled = kwargs.enable_thinking == Some(false)
            || kwargs.thinking == Some(false)
            || kwargs.thinking_mode.as_deref() == Some("disabled");
        if disabled {
            return 0;
        }
    }
    match request.reasoning_effort.as_deref() {
        Some("none") => 0,
        Some("minimal") | Some("low") => full.div_ceil(4),
        Some("medium") => full.div_ceil(2),
        _ => full,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: &str) -> GenerationRequest {
        serde_json::from_str(json).expect("valid request")
    }

    #[test]
    fn thinking_rules() {
        assert_eq!(reasoning_budget(&request("{}"), 0), 0);
        assert_eq!(reasoning_budget(&request("{}"), 10), 10);
        let off = r#"{"chat_template_kwargs":{"enable_thinking":false}}"#;
        assert_eq!(reasoning_budget(&request(off), 10), 0);
        let off = r#"{"chat_template_kwargs":{"thinking_mode":"disabled"}}"#;
        assert_eq!(reasoning_budget(&request(off), 10), 0);
        assert_eq!(
            reasoning_budget(&request(r#"{"reasoning_effort":"low"}"#), 10),
            3
        );
        assert_eq!(
            reasoning_budget(&request(r#"{"reasoning_effort":"medium"}"#), 10),
            5
        );
    }

    #[test]
    fn content_parts_count_like_text() {
        let req = request(
            r#"{"messages":[{"role":"user","content":[{"type":"text","text":"a b"},{"type":"text","text":"c"}]}]}"#,
        );
        let ids = chat_ids(req.messages.as_deref().unwrap_or_default(), true);
        assert_eq!(ids.len() as u64, tokenizer::count_chat_tokens(["a b c"]));
        let ids = chat_ids(req.messages.as_deref().unwrap_or_default(), false);
        assert_eq!(
            ids.len() as u64,
            tokenizer::count_chat_tokens(["a b c"]) - tokenizer::GENERATION_PROMPT_TOKENS
        );
    }
}
