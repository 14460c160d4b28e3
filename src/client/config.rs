//! What the client is told: plain endpoint values (no plan types), and the secrets among them.

use std::fmt;
use std::time::Duration;

pub use crate::api::Api;

use super::endpoint::{Endpoint, REDACTED, is_secret_header};

/// How long a pooled connection may sit idle by default: below the 5 s keep-alive timeout of
/// uvicorn (vLLM, SGLang, llama-cpp-python) and of llama.cpp's server.
pub const DEFAULT_CONNECTION_IDLE_TIMEOUT: Duration = Duration::from_secs(4);

/// How connections are kept between requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionSettings {
    /// Keep connections open for later requests; `false` opens one per request.
    pub reuse: bool,
    /// Longest a pooled connection waits idle before it is closed by the client.
    pub idle_timeout: Duration,
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        ConnectionSettings {
            reuse: true,
            idle_timeout: DEFAULT_CONNECTION_IDLE_TIMEOUT,
        }
    }
}

/// Everything the client needs to talk to one target for one phase.
#[derive(Clone, Default)]
pub struct ClientConfig {
    /// Where the target is, how it is trusted and what every request to it carries.
    pub endpoint: Endpoint,
    pub api: Api,
    pub model: String,
    pub timeouts: ResolvedTimeouts,
    /// Extra body fields: the target's, then the workload's merged over them.
    pub body: serde_json::Map<String, serde_json::Value>,
    /// Sampling settings from the workload.
    pub sampling: Sampling,
    /// Most idle connections kept (the phase's concurrency).
    pub max_connections: usize,
    pub connection: ConnectionSettings,
    /// Whether each request carries a W3C `traceparent`.
    pub trace_context: super::trace_context::TraceContextMode,
    /// Chat: the tools every request offers, and how the model may choose among them.
    pub tools: Option<ToolSettings>,
    /// The requests the client drops mid-stream on purpose, and when.
    pub cancel: Option<super::cancel::CancelSettings>,
    /// Keep every reply's text in its record, to be checked after the request
    /// (`response_format`, `score`).
    pub keep_replies: bool,
}

/// The `tools` a chat request offers and its `tool_choice`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSettings {
    /// OpenAI function-calling definitions, sent as `tools`.
    pub definitions: Vec<serde_json::Value>,
    /// `tool_choice` for a request that opens a turn (`auto`, `required`, `none`, or a named
    /// function); a request that answers a tool result asks `auto`, so the model can reply.
    pub choice: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default)]
pub struct ResolvedTimeouts {
    pub connect: Option<Duration>,
    pub first_byte: Option<Duration>,
    pub idle: Option<Duration>,
    pub total: Option<Duration>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sampling {
    pub temperature: Option<f64>,
    pub ignore_eos: Option<bool>,
    pub min_tokens: Option<u32>,
    pub seed: Option<u64>,
}

/// Merge `over` into `base`: objects merge key by key (so a workload can add one
/// `chat_template_kwargs` entry to the target's), anything else replaces.
pub fn merge_body(
    base: &mut serde_json::Map<String, serde_json::Value>,
    over: &serde_json::Map<String, serde_json::Value>,
) {
    for (key, value) in over {
        match (base.get_mut(key), value) {
            (Some(serde_json::Value::Object(b)), serde_json::Value::Object(o)) => merge_body(b, o),
            _ => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("endpoint", &self.endpoint)
            .field("api", &self.api)
            .field("model", &self.model)
            .field("timeouts", &self.timeouts)
            .field("body", &self.body)
            .field("sampling", &self.sampling)
            .field("max_connections", &self.max_connections)
            .field("connection", &self.connection)
            .field("tools", &self.tools.as_ref().map(|t| t.definitions.len()))
            .field("cancel", &self.cancel)
            .field("keep_replies", &self.keep_replies)
            .finish()
    }
}

/// Cuts the API key and secret header values out of text a server sent back (a 401 body may
/// quote the request's headers).
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    /// Longest first, so a secret containing another is cut whole.
    secrets: Vec<String>,
}

impl Redactor {
    pub fn new(config: &ClientConfig) -> Self {
        let endpoint = &config.endpoint;
        let mut secrets: Vec<String> = endpoint
            .api_key
            .iter()
            .cloned()
            .chain(
                endpoint
                    .headers
                    .iter()
                    .filter(|(name, _)| is_secret_header(name))
                    .map(|(_, value)| value.clone()),
            )
            .chain(super::url_secrets::url_secrets(&endpoint.base_url))
            .filter(|s| !s.is_empty())
            .collect();
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Redactor { secrets }
    }

    /// `message` with every secret replaced, including one cut short by an excerpt's `…`.
    pub fn text(&self, mut message: String) -> String {
        for secret in &self.secrets {
            if message.contains(secret.as_str()) {
                message = message.replace(secret.as_str(), REDACTED);
            }
            if let Some(head) = message.strip_suffix('…') {
                let cut = (4..secret.len())
                    .rev()
                    .filter(|&k| secret.is_char_boundary(k))
                    .find(|&k| head.ends_with(&secret[..k]));
                if let Some(k) = cut {
                    message = format!("{}{REDACTED}…", &head[..head.len() - k]);
                }
            }
        }
        message
    }

    /// A response body with the secrets cut out, before any excerpt could split one.
    pub fn bytes(&self, mut body: Vec<u8>) -> Vec<u8> {
        for secret in &self.secrets {
            let secret = secret.as_bytes();
            while let Some(at) = memchr::memmem::find(&body, secret) {
                body.splice(at..at + secret.len(), REDACTED.bytes());
            }
        }
        body
    }
}
