//! What every request of a client carries: its headers and the fixed part of its JSON body.

use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};

use super::config::{Api, ClientConfig};
use super::endpoint::access_headers;
use super::json_text;
use super::setup_error::ClientError;
use crate::workload::{ChatMessage, Prompt, PromptInput};

/// The Messages API version sent in `anthropic-version` (a target's own header replaces it).
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Built once per client; each request adds its prompt, `max_tokens` and `x-request-id`.
#[derive(Clone)]
pub(crate) struct RequestTemplate {
    /// Content type, accept, authorization and the target's headers.
    pub headers: HeaderMap,
    /// The body's fixed fields (model, stream, sampling, extra body), serialized without the
    /// enclosing braces.
    fixed_body: String,
    /// Where the model's JSON value sits in `fixed_body`: a request of a model mix writes its
    /// own name there.
    model_span: Option<std::ops::Range<usize>>,
    /// Whether the extra body sets `max_tokens` itself.
    body_sets_max_tokens: bool,
    /// Whether the extra body sets the input itself (`messages` or `prompt`; `input` or
    /// `documents`).
    body_sets_input: bool,
    /// Embeddings and rerank take neither `max_tokens` nor streaming.
    streams: bool,
    /// The Responses API takes `input` and `max_output_tokens`; the Messages API `system`
    /// apart from `messages`.
    api: Api,
    /// `"tools":[…]` serialized, and the planned `tool_choice` (serialized), unless the extra
    /// body sets them itself.
    tools: Option<(String, Option<String>)>,
}

impl RequestTemplate {
    pub fn new(config: &ClientConfig) -> Result<Self, ClientError> {
        let fixed = fixed_body_fields(config);
        let body_sets_max_tokens = fixed.contains_key(max_tokens_key(config.api));
        let inputs: &[&str] = if config.api == Api::Responses {
            &["input"]
        } else if config.api == Api::Messages {
            &["messages", "system"]
        } else if config.api.generates() {
            &["messages", "prompt"]
        } else {
            &["input", "documents"]
        };
        let body_sets_input = inputs.iter().any(|key| fixed.contains_key(*key));
        let fixed_body = serde_json::to_string(&fixed)
            .map_err(|e| ClientError(format!("cannot serialize the request body: {e}")))?;
        let model_span = model_span(&fixed, &fixed_body);
        let serialize = |value: serde_json::Result<String>| {
            value.map_err(|e| ClientError(format!("cannot serialize the tools: {e}")))
        };
        let tools = match &config.tools {
            Some(tools) if config.api == Api::Chat && !fixed.contains_key("tools") => {
                let choice = match (&tools.choice, fixed.contains_key("tool_choice")) {
                    (Some(choice), false) => Some(serialize(serde_json::to_string(choice))?),
                    _ => None,
                };
                Some((
                    serialize(serde_json::to_string(&tools.definitions))?,
                    choice,
                ))
            }
            _ => None,
        };
        Ok(RequestTemplate {
            headers: default_headers(config)?,
            fixed_body: fixed_body[1..fixed_body.len() - 1].to_string(),
            model_span,
            body_sets_max_tokens,
            body_sets_input,
            streams: config.api.generates(),
            api: config.api,
            tools,
        })
    }

    /// The JSON body for one prompt, serialized in place (no value goes through a string of
    /// its own).
    pub fn body(&self, prompt: &Prompt) -> String {
        String::from_utf8(self.body_bytes(prompt)).unwrap_or_default()
    }

    /// [`RequestTemplate::body`] as bytes, as it is sent: checking that it is UTF-8 (it is)
    /// would read it all once more.
    pub fn body_bytes(&self, prompt: &Prompt) -> Vec<u8> {
        // Images are most of a body that has them: room for them up front, not by doubling.
        let image_bytes: usize = match &prompt.input {
            PromptInput::Messages(messages) => messages
                .iter()
                .flat_map(|m| &m.images)
                .map(|image| image.url.len() + 64)
                .sum(),
            PromptInput::Text(_) | PromptInput::Batch { .. } => 0,
        };
        let mut body: Vec<u8> = Vec::with_capacity(self.fixed_body.len() + 256 + image_bytes);
        body.push(b'{');
        if !self.body_sets_input {
            let body = &mut body;
            let responses = self.api == Api::Responses;
            match &prompt.input {
                PromptInput::Messages(messages) if responses => push_field(body, "input", messages),
                PromptInput::Text(text) if responses => push_text(body, "input", text),
                PromptInput::Messages(messages) if self.api == Api::Messages => {
                    push_system_apart(body, messages)
                }
                PromptInput::Text(text) if self.api == Api::Messages => push_messages(
                    body,
                    std::iter::once(&ChatMessage::new("user", text.clone())),
                ),
                PromptInput::Messages(messages) => push_messages(body, messages.iter()),
                PromptInput::Text(text) => push_text(body, "prompt", text),
                PromptInput::Batch {
                    query: Some(query),
                    texts,
                } => {
                    push_text(body, "query", query);
                    push_field(body, "documents", texts);
                }
                // One input goes as a string, as most clients send it.
                PromptInput::Batch { query: None, texts } => match texts.as_slice() {
                    [one] => push_text(body, "input", one),
                    _ => push_field(body, "input", texts),
                },
            }
        }
        if self.streams && !self.body_sets_max_tokens {
            push_key(&mut body, max_tokens_key(self.api));
            body.extend_from_slice(itoa::Buffer::new().format(prompt.max_tokens).as_bytes());
            body.push(b',');
        }
        if let Some((tools, choice)) = &self.tools {
            body.extend_from_slice(b"\"tools\":");
            body.extend_from_slice(tools.as_bytes());
            body.push(b',');
            // After a tool's result the model must be free to answer, whatever the plan's
            // choice for a turn's opening request.
            let answers_tool = matches!(&prompt.input, PromptInput::Messages(m)
                if m.last().is_some_and(|m| m.role == "tool"));
            let choice = if answers_tool {
                Some("\"auto\"")
            } else {
                choice.as_deref()
            };
            if let Some(choice) = choice {
                body.extend_from_slice(b"\"tool_choice\":");
                body.extend_from_slice(choice.as_bytes());
                body.push(b',');
            }
        }
        match (&prompt.model, &self.model_span) {
            (Some(model), Some(span)) => {
                body.extend_from_slice(&self.fixed_body.as_bytes()[..span.start]);
                json_text::push_str(&mut body, model);
                body.extend_from_slice(&self.fixed_body.as_bytes()[span.end..]);
            }
            _ => body.extend_from_slice(self.fixed_body.as_bytes()),
        }
        if body.ends_with(b",") {
            body.pop();
        }
        body.push(b'}');
        body
    }
}

/// The byte range of the `model` value in the fixed fields' text without its braces (`body`
/// is `fixed` serialized): found by serializing them again with a marker in its place, as
/// every field before it writes the same text either way.
fn model_span(
    fixed: &serde_json::Map<String, serde_json::Value>,
    body: &str,
) -> Option<std::ops::Range<usize>> {
    const MARKER: &str = "\u{1}servebench-model\u{1}";
    let value = fixed.get("model")?;
    let mut marked = fixed.clone();
    marked.insert("model".into(), serde_json::Value::String(MARKER.into()));
    let marked = serde_json::to_string(&marked).ok()?;
    let marker = serde_json::to_string(MARKER).ok()?;
    let start = marked.find(&marker)?;
    let len = serde_json::to_string(value).ok()?.len();
    // Both texts start with `{`, which the fixed body leaves out.
    (body.get(start..start + len)? == serde_json::to_string(value).ok()?)
        .then(|| start - 1..start - 1 + len)
}

/// The body field that caps a reply's length.
fn max_tokens_key(api: Api) -> &'static str {
    match api {
        Api::Responses => "max_output_tokens",
        _ => "max_tokens",
    }
}

/// The Messages API's `"system":"…",` (the system messages' texts, joined) and the other
/// messages as `"messages":[…],`: it has no system role.
fn push_system_apart(body: &mut Vec<u8>, messages: &[ChatMessage]) {
    let is_system = |m: &&ChatMessage| m.role == "system";
    let system: Vec<&str> = messages
        .iter()
        .filter(is_system)
        .map(|m| m.content.as_str())
        .collect();
    if !system.is_empty() {
        push_text(body, "system", &system.join("\n\n"));
    }
    push_messages(body, messages.iter().filter(|m| !is_system(m)));
}

/// `"key":value,` onto a JSON body, the value serialized in place. Serializing strings and
/// string maps cannot fail; a failure would write `null`.
fn push_field<T: serde::Serialize + ?Sized>(body: &mut Vec<u8>, key: &str, value: &T) {
    push_key(body, key);
    let start = body.len();
    if serde_json::to_writer(&mut *body, value).is_err() {
        body.truncate(start);
        body.extend_from_slice(b"null");
    }
    body.push(b',');
}

/// `"key":` onto a JSON body.
fn push_key(body: &mut Vec<u8>, key: &str) {
    body.push(b'"');
    body.extend_from_slice(key.as_bytes());
    body.extend_from_slice(b"\":");
}

/// `"key":"text",`, the text escaped eight bytes at a time (a prompt is most of a body).
fn push_text(body: &mut Vec<u8>, key: &str, text: &str) {
    push_key(body, key);
    json_text::push_str(body, text);
    body.push(b',');
}

/// `"messages":[…],`: plain messages (a role and text) written here, as serde would write
/// them but with the faster escaper; any with tool calls goes through serde whole.
fn push_messages<'a>(body: &mut Vec<u8>, messages: impl Iterator<Item = &'a ChatMessage> + Clone) {
    let plain = |m: &ChatMessage| m.tool_calls.is_empty() && m.tool_call_id.is_none();
    if !messages.clone().all(plain) {
        return push_field(body, "messages", &messages.collect::<Vec<_>>());
    }
    body.extend_from_slice(b"\"messages\":[");
    for (i, message) in messages.enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(b"{\"role\":");
        json_text::push_str(body, &message.role);
        body.extend_from_slice(b",\"content\":");
        if message.images.is_empty() {
            json_text::push_str(body, &message.content);
        } else {
            push_content_parts(body, message);
        }
        body.push(b'}');
    }
    body.extend_from_slice(b"],");
}

/// A message's text and images as OpenAI content parts. Each image's data URL was encoded
/// ahead (base64 needs no JSON escaping), so sending one is a copy, not an encoding.
fn push_content_parts(body: &mut Vec<u8>, message: &ChatMessage) {
    body.extend_from_slice(b"[{\"type\":\"text\",\"text\":");
    json_text::push_str(body, &message.content);
    body.push(b'}');
    for image in &message.images {
        debug_assert!(
            !image.url.contains(['"', '\\']),
            "a data URL needs no escaping"
        );
        body.extend_from_slice(b",{\"type\":\"image_url\",\"image_url\":{\"url\":\"");
        body.extend_from_slice(image.url.as_bytes());
        body.extend_from_slice(b"\"}}");
    }
    body.push(b']');
}

/// Content type, accept, the API key and the target's headers, secrets marked sensitive.
fn default_headers(config: &ClientConfig) -> Result<HeaderMap, ClientError> {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::ACCEPT,
        HeaderValue::from_static(if config.api.generates() {
            "text/event-stream"
        } else {
            "application/json"
        }),
    );
    // The Messages API takes its key in `x-api-key` and names the version it speaks.
    let key_header = match (config.endpoint.api_key_header.as_deref(), config.api) {
        (None, Api::Messages) => Some("x-api-key"),
        (named, _) => named,
    };
    if config.api == Api::Messages {
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
    }
    let access = access_headers(
        config.endpoint.api_key.as_deref(),
        key_header,
        &config.endpoint.headers,
    )?;
    // A target's own header replaces a default of the same name.
    for (name, value) in &access {
        headers.insert(name.clone(), value.clone());
    }
    if !config.connection.reuse {
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    Ok(headers)
}

/// The fixed body fields: model, streaming, sampling, then the extra body merged over them.
fn fixed_body_fields(config: &ClientConfig) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::{Value, json};
    let mut fixed = serde_json::Map::new();
    fixed.insert("model".into(), Value::String(config.model.clone()));
    if !config.api.generates() {
        // Embeddings and rerank take no sampling settings.
        for (key, value) in &config.body {
            fixed.insert(key.clone(), value.clone());
        }
        return fixed;
    }
    fixed.insert("stream".into(), Value::Bool(true));
    let s = &config.sampling;
    if matches!(config.api, Api::Responses | Api::Messages) {
        // Usage always comes with `response.completed` (`message_delta`); neither API has
        // `stream_options`, `ignore_eos`, `min_tokens` or `seed` (`validate` refuses them).
        if let Some(t) = s.temperature {
            fixed.insert("temperature".into(), json!(t));
        }
        for (key, value) in &config.body {
            fixed.insert(key.clone(), value.clone());
        }
        return fixed;
    }
    fixed.insert("stream_options".into(), json!({ "include_usage": true }));
    if let Some(t) = s.temperature {
        fixed.insert("temperature".into(), json!(t));
    }
    if let Some(v) = s.ignore_eos {
        fixed.insert("ignore_eos".into(), json!(v));
    }
    if let Some(v) = s.min_tokens {
        fixed.insert("min_tokens".into(), json!(v));
    }
    if let Some(v) = s.seed {
        fixed.insert("seed".into(), json!(v));
    }
    for (key, value) in &config.body {
        fixed.insert(key.clone(), value.clone());
    }
    fixed
}

/// A per-process-unique id prefix: `sb-` and 8 random hex digits.
pub(crate) fn default_request_id_prefix() -> String {
    format!("sb-{:08x}", rand::random::<u32>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::ToolCall;
    use crate::workload::{Prompt, PromptInput};

    fn written(write: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut body = Vec::new();
        write(&mut body);
        String::from_utf8(body).expect("UTF-8")
    }

    #[test]
    fn messages_and_text_are_written_as_serde_writes_them() {
        let plain = vec![
            ChatMessage::new("system", "Be brief.\n\t\u{1}"),
            ChatMessage::new("user", "say \"hi\" \\ é"),
        ];
        let expected = format!("\"messages\":{},", serde_json::to_string(&plain).unwrap());
        assert_eq!(written(|b| push_messages(b, plain.iter())), expected);
        let text = "a \"quoted\"\nprompt";
        let expected = format!("\"prompt\":{},", serde_json::to_string(text).unwrap());
        assert_eq!(written(|b| push_text(b, "prompt", text)), expected);
        // A message with tool calls goes through serde, whole.
        let mut with_call = plain.clone();
        with_call.push(ChatMessage {
            tool_calls: vec![ToolCall::default()],
            ..ChatMessage::new("assistant", "")
        });
        let expected = format!(
            "\"messages\":{},",
            serde_json::to_string(&with_call).unwrap()
        );
        assert_eq!(written(|b| push_messages(b, with_call.iter())), expected);
        assert!(expected.contains("\"content\":null"));
    }

    #[test]
    fn images_go_as_content_parts_as_serde_writes_them() {
        let image = crate::workload::images::Image {
            url: "data:image/png;base64,iVBORw0KGgo=".into(),
            width: 1,
            height: 1,
        };
        let messages = vec![
            ChatMessage::new("system", "Describe."),
            ChatMessage {
                images: vec![image.clone(), image],
                ..ChatMessage::new("user", "what is \"this\"?")
            },
        ];
        let expected = format!(
            "\"messages\":{},",
            serde_json::to_string(&messages).unwrap()
        );
        assert_eq!(written(|b| push_messages(b, messages.iter())), expected);
        let body: serde_json::Value =
            serde_json::from_str(&expected[11..expected.len() - 1]).unwrap();
        assert_eq!(body[1]["content"][0]["text"], "what is \"this\"?");
        assert_eq!(body[1]["content"][2]["type"], "image_url");
        assert_eq!(
            body[1]["content"][2]["image_url"]["url"],
            "data:image/png;base64,iVBORw0KGgo="
        );
    }

    #[test]
    fn the_messages_api_takes_the_system_prompt_apart_and_always_a_cap() {
        let config = ClientConfig {
            api: Api::Messages,
            ..ClientConfig::default()
        };
        let template = RequestTemplate::new(&config).unwrap();
        let prompt = Prompt {
            input: PromptInput::Messages(vec![
                ChatMessage::new("system", "Be brief."),
                ChatMessage::new("user", "hi"),
            ]),
            planned_prompt_tokens: None,
            max_tokens: 7,
            expected: None,
            scheduled_at: None,
            archetype: None,
            model: None,
            session: None,
        };
        let body: serde_json::Value = serde_json::from_str(&template.body(&prompt)).unwrap();
        assert_eq!(body["system"], "Be brief.");
        assert_eq!(
            body["messages"],
            serde_json::json!([{"role": "user", "content": "hi"}])
        );
        assert_eq!(body["max_tokens"], 7);
        assert_eq!(body["stream"], true);
        assert!(body.get("stream_options").is_none(), "{body}");
        let text = Prompt {
            input: PromptInput::Text("hello".into()),
            ..prompt
        };
        let body: serde_json::Value = serde_json::from_str(&template.body(&text)).unwrap();
        assert!(body.get("system").is_none());
        assert_eq!(
            body["messages"],
            serde_json::json!([{"role": "user", "content": "hello"}])
        );
        assert_eq!(
            template.headers.get("anthropic-version").unwrap(),
            ANTHROPIC_VERSION
        );
    }

    #[test]
    fn a_request_of_a_model_mix_names_its_own_model_and_nothing_else_changes() {
        let config = ClientConfig {
            model: "base".into(),
            body: serde_json::from_str(r#"{"top_k": 5, "note": {"model": "nested"}}"#).unwrap(),
            ..ClientConfig::default()
        };
        let template = RequestTemplate::new(&config).unwrap();
        let prompt = Prompt {
            input: PromptInput::Text("hello".into()),
            planned_prompt_tokens: None,
            max_tokens: 7,
            expected: None,
            scheduled_at: None,
            archetype: None,
            session: None,
            model: None,
        };
        let default = template.body(&prompt);
        let mixed = template.body(&Prompt {
            model: Some("adapter \"a\"".into()),
            ..prompt
        });
        assert_eq!(
            mixed,
            default.replacen("\"model\":\"base\"", "\"model\":\"adapter \\\"a\\\"\"", 1)
        );
        let body: serde_json::Value = serde_json::from_str(&mixed).unwrap();
        assert_eq!(body["model"], "adapter \"a\"");
        assert_eq!(body["note"]["model"], "nested");
        assert_eq!(body["top_k"], 5);
    }
}
