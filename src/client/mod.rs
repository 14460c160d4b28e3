//! OpenAI-compatible requests and streamed responses: one [`RequestRecord`] per request.
//!
//! [`Client::send`] never fails: every failure (connect, timeouts, HTTP status, broken or
//! malformed stream, error object) becomes `record.error` with a closed [`ErrorKind`], and the
//! record keeps `e2e_ms` and whatever timings were seen. All times come from one monotonic
//! clock ([`Instant`]), read when bytes arrive.

mod record;
pub mod scan;
pub mod sse;
pub mod stream;

pub use record::*;

use std::fmt;
use std::future::Future;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};

use crate::plan::Api;
use crate::workload::{Prompt, PromptInput};
use sse::{DEFAULT_MAX_EVENT_BYTES, EventKind, SseParser};
use stream::{EventOutcome, StreamFailure, StreamState, excerpt};

/// Everything the client needs to talk to one target for one phase.
#[derive(Clone)]
pub struct ClientConfig {
    /// Base URL including `/v1`.
    pub base_url: String,
    pub api: Api,
    pub model: String,
    /// The API key's value, read from the environment by the caller; never logged.
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    pub timeouts: ResolvedTimeouts,
    /// Extra body fields: the target's, then the workload's merged over them.
    pub body: serde_json::Map<String, serde_json::Value>,
    /// Sampling settings from the workload.
    pub sampling: Sampling,
    /// Size of the connection pool (the phase's concurrency).
    pub max_connections: usize,
}

/// Header names whose values are secret: redacted in `Debug` output, error messages and the
/// report's copy of the plan.
pub fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "auth", "key", "token", "secret", "cookie", "password", "session",
    ]
    .iter()
    .any(|s| name.contains(s))
}

/// What stands in for a secret wherever one would have been shown.
pub const REDACTED: &str = "<redacted>";

/// `plan` with the values of its targets' secret headers replaced by [`REDACTED`], and any
/// `vars` value that holds one of them too: what a report may keep of a plan.
pub fn redact_plan(
    plan: &crate::plan::Plan,
    vars: &indexmap::IndexMap<String, serde_json::Value>,
) -> (
    crate::plan::Plan,
    indexmap::IndexMap<String, serde_json::Value>,
) {
    let mut plan = plan.clone();
    let mut secrets = Vec::new();
    for target in plan.targets.values_mut() {
        for (name, value) in target.headers.iter_mut() {
            if is_secret_header(name) && !value.is_empty() {
                secrets.push(std::mem::replace(value, REDACTED.to_string()));
            }
        }
    }
    let vars = vars
        .iter()
        .map(|(name, value)| {
            let text = value.to_string();
            let holds_secret = secrets.iter().any(|s| text.contains(s.as_str()));
            let value = if holds_secret {
                serde_json::Value::String(REDACTED.to_string())
            } else {
                value.clone()
            };
            (name.clone(), value)
        })
        .collect();
    (plan, vars)
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, value)| {
                let shown = if is_secret_header(name) {
                    "<redacted>"
                } else {
                    value.as_str()
                };
                (name.as_str(), shown)
            })
            .collect();
        f.debug_struct("ClientConfig")
            .field("base_url", &self.base_url)
            .field("api", &self.api)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("headers", &headers)
            .field("timeouts", &self.timeouts)
            .field("body", &self.body)
            .field("sampling", &self.sampling)
            .field("max_connections", &self.max_connections)
            .finish()
    }
}

impl ClientConfig {
    /// The configuration for one phase: `target`'s settings, the API key read from the
    /// environment variable it names, `workload`'s sampling, and the target's body with the
    /// workload's merged over it. `base_url` is the target's (or the started simulator's);
    /// `max_connections` is the phase's concurrency (or its open-loop in-flight cap).
    pub fn for_target(
        target: &crate::plan::Target,
        base_url: String,
        workload: &crate::plan::Workload,
        max_connections: usize,
    ) -> Result<ClientConfig, ClientError> {
        let api_key = match &target.api_key_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(key) if !key.is_empty() => Some(key),
                Ok(_) | Err(std::env::VarError::NotPresent) => {
                    return Err(ClientError(format!(
                        "the API key variable {var} is not set; export it or remove api_key_env"
                    )));
                }
                Err(std::env::VarError::NotUnicode(_)) => {
                    return Err(ClientError(format!(
                        "the API key variable {var} does not hold valid UTF-8"
                    )));
                }
            },
        };
        let model = match (&target.model, &target.simulator) {
            (Some(model), _) => model.clone(),
            (None, Some(_)) => "sim".to_string(),
            (None, None) => {
                return Err(ClientError("the target names no model".to_string()));
            }
        };
        let mut body = target.body.clone();
        merge_body(&mut body, &workload.body);
        Ok(ClientConfig {
            base_url,
            api: target.api,
            model,
            api_key,
            headers: target
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            timeouts: ResolvedTimeouts::from_plan(target.timeout.as_ref()),
            body,
            sampling: Sampling {
                temperature: workload.temperature,
                ignore_eos: workload.ignore_eos,
                min_tokens: workload.min_tokens,
                seed: workload.seed,
            },
            max_connections: max_connections.max(1),
        })
    }
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

#[derive(Debug, Clone, Default)]
pub struct ResolvedTimeouts {
    pub connect: Option<Duration>,
    pub first_byte: Option<Duration>,
    pub idle: Option<Duration>,
    pub total: Option<Duration>,
}

impl ResolvedTimeouts {
    /// The plan's timeouts as durations.
    pub fn from_plan(timeouts: Option<&crate::plan::Timeouts>) -> Self {
        match timeouts {
            None => ResolvedTimeouts::default(),
            Some(t) => ResolvedTimeouts {
                connect: t.connect.map(|d| d.0),
                first_byte: t.first_byte.map(|d| d.0),
                idle: t.idle.map(|d| d.0),
                total: t.total.map(|d| d.0),
            },
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sampling {
    pub temperature: Option<f64>,
    pub ignore_eos: Option<bool>,
    pub min_tokens: Option<u32>,
    pub seed: Option<u64>,
}

/// The client could not be set up (bad URL, bad header); requests themselves never error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClientError(pub String);

/// How long an error response body may take to read for its excerpt.
const ERROR_BODY_WAIT: Duration = Duration::from_secs(2);
/// How much of an error (or non-stream) body is read.
const ERROR_BODY_MAX_BYTES: usize = 64 * 1024;
/// After `[DONE]`, how long to wait for the body's end so the connection can be reused.
const DRAIN_WAIT: Duration = Duration::from_millis(500);

/// A connection pool and request builder for one target.
pub struct Client {
    config: ClientConfig,
    http: reqwest::Client,
    url: reqwest::Url,
    /// The body's fixed fields (model, stream, sampling, extra body), serialized without the
    /// enclosing braces; each request prepends its prompt and `max_tokens`.
    fixed_body: String,
    /// Whether the extra body sets `max_tokens` itself.
    body_sets_max_tokens: bool,
    /// Whether the extra body sets `messages` or `prompt` itself.
    body_sets_input: bool,
    request_id_prefix: String,
    max_event_bytes: usize,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("config", &self.config)
            .field("url", &self.url.as_str())
            .field("request_id_prefix", &self.request_id_prefix)
            .finish()
    }
}

impl Client {
    /// `message` with the API key and secret header values cut out: a server may echo them
    /// (a 401 body quoting the request's headers).
    fn redact(&self, mut message: String) -> String {
        for secret in self.secrets() {
            if message.contains(secret) {
                message = message.replace(secret, REDACTED);
            }
            // An excerpt cut inside a secret ends in its first characters and `…`.
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
    fn redact_bytes(&self, body: Vec<u8>) -> Vec<u8> {
        let mut body = body;
        for secret in self.secrets() {
            let secret = secret.as_bytes();
            while let Some(at) = memchr::memmem::find(&body, secret) {
                body.splice(at..at + secret.len(), REDACTED.bytes());
            }
        }
        body
    }

    /// The API key and the secret header values, longest first.
    fn secrets(&self) -> Vec<&str> {
        let mut secrets: Vec<&str> = self
            .config
            .api_key
            .iter()
            .map(String::as_str)
            .chain(
                self.config
                    .headers
                    .iter()
                    .filter(|(name, _)| is_secret_header(name))
                    .map(|(_, value)| value.as_str()),
            )
            .filter(|s| !s.is_empty())
            .collect();
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets
    }

    pub fn new(config: ClientConfig) -> Result<Self, ClientError> {
        let base = config.base_url.trim_end_matches('/');
        let path = match config.api {
            Api::Chat => "chat/completions",
            Api::Completions => "completions",
        };
        let url = reqwest::Url::parse(&format!("{base}/{path}"))
            .map_err(|e| ClientError(format!("invalid base_url {:?}: {e}", config.base_url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ClientError(format!(
                "invalid base_url {:?}: expected http:// or https://",
                config.base_url
            )));
        }

        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        if let Some(key) = &config.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ClientError("the API key holds characters not allowed in a header".into())
            })?;
            value.set_sensitive(true);
            headers.insert(header::AUTHORIZATION, value);
        }
        for (name, value) in &config.headers {
            let header_name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ClientError(format!("invalid header name {name:?}")))?;
            let mut header_value = HeaderValue::from_str(value).map_err(|_| {
                ClientError(format!(
                    "header {name:?} has a value not allowed in a header"
                ))
            })?;
            if is_secret_header(name) {
                header_value.set_sensitive(true);
            }
            headers.insert(header_name, header_value);
        }

        let mut builder = reqwest::Client::builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(config.max_connections.max(1))
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_keepalive(Duration::from_secs(30))
            .default_headers(headers)
            // A benchmark measures the endpoint itself, not a proxy from the environment.
            .no_proxy();
        if let Some(connect) = config.timeouts.connect {
            builder = builder.connect_timeout(connect);
        }
        let http = builder
            .build()
            .map_err(|e| ClientError(format!("cannot set up the HTTP client: {e}")))?;

        let fixed = fixed_body_fields(&config);
        let body_sets_max_tokens = fixed.contains_key("max_tokens");
        let body_sets_input = fixed.contains_key("messages") || fixed.contains_key("prompt");
        let fixed_body = serde_json::to_string(&fixed)
            .map_err(|e| ClientError(format!("cannot serialize the request body: {e}")))?;
        let fixed_body = fixed_body[1..fixed_body.len() - 1].to_string();

        Ok(Client {
            config,
            http,
            url,
            fixed_body,
            body_sets_max_tokens,
            body_sets_input,
            request_id_prefix: default_request_id_prefix(),
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
        })
    }

    /// Use `prefix` for request ids (`{prefix}-{request_index}`) instead of a random one, e.g.
    /// the run id plus the phase name.
    pub fn with_request_id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.request_id_prefix = prefix.into();
        self
    }

    /// Cap on one SSE event's size (default 1 MiB); larger events are `malformed_event`.
    pub fn with_max_event_bytes(mut self, max_event_bytes: usize) -> Self {
        self.max_event_bytes = max_event_bytes.max(1);
        self
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// The `x-request-id` a request with this index is sent with.
    pub fn request_id(&self, request_index: u64) -> String {
        format!("{}-{request_index}", self.request_id_prefix)
    }

    /// The JSON body for one prompt.
    pub fn request_body(&self, prompt: &Prompt) -> String {
        let mut body = String::with_capacity(self.fixed_body.len() + 256);
        body.push('{');
        if !self.body_sets_input {
            let (key, value) = match &prompt.input {
                PromptInput::Messages(messages) => ("messages", serde_json::to_string(messages)),
                PromptInput::Text(text) => ("prompt", serde_json::to_string(text)),
            };
            // Serializing strings and string maps cannot fail.
            let value = value.unwrap_or_else(|_| "null".to_string());
            body.push('"');
            body.push_str(key);
            body.push_str("\":");
            body.push_str(&value);
            body.push(',');
        }
        if !self.body_sets_max_tokens {
            body.push_str("\"max_tokens\":");
            body.push_str(&prompt.max_tokens.to_string());
            body.push(',');
        }
        body.push_str(&self.fixed_body);
        if body.ends_with(',') {
            body.pop();
        }
        body.push('}');
        body
    }

    /// Send one streamed request; `origin` is the phase's measured start, from which
    /// `start_offset_ms` is taken. Failures are recorded in the returned record.
    pub async fn send(
        &self,
        request_index: u64,
        prompt: &Prompt,
        origin: Instant,
    ) -> RequestRecord {
        self.send_cancellable(request_index, prompt, origin, std::future::pending())
            .await
    }

    /// [`Client::send`], ended early with `ErrorKind::Cancelled` when `cancel` completes
    /// (e.g. on Ctrl-C); the record keeps what was measured until then.
    pub async fn send_cancellable<C>(
        &self,
        request_index: u64,
        prompt: &Prompt,
        origin: Instant,
        cancel: C,
    ) -> RequestRecord
    where
        C: Future<Output = ()>,
    {
        let body = self.request_body(prompt);
        self.send_body(
            request_index,
            body,
            prompt.planned_prompt_tokens,
            origin,
            cancel,
        )
        .await
    }

    /// [`Client::send`] taking the prompt by value: it is dropped once the body is built, so a
    /// long prompt is held once (in its body) while its request is in flight.
    pub async fn send_owned(
        &self,
        request_index: u64,
        prompt: Prompt,
        origin: Instant,
    ) -> RequestRecord {
        let body = self.request_body(&prompt);
        let planned = prompt.planned_prompt_tokens;
        drop(prompt);
        self.send_body(request_index, body, planned, origin, std::future::pending())
            .await
    }

    /// One request with its serialized body; `planned` is the prompt's planned token count.
    async fn send_body<C>(
        &self,
        request_index: u64,
        body: String,
        planned: Option<u64>,
        origin: Instant,
        cancel: C,
    ) -> RequestRecord
    where
        C: Future<Output = ()>,
    {
        let request_id = self.request_id(request_index);
        let mut state = StreamState::default();
        let start = Instant::now();
        let outcome = {
            let exchange = self.exchange(&request_id, body, start, &mut state);
            tokio::select! {
                biased;
                outcome = exchange => outcome,
                () = cancel => Err(Failure::new(ErrorKind::Cancelled, "cancelled while in flight")),
            }
        };
        let end = Instant::now();
        let mut record = RequestRecord {
            request_index,
            request_id,
            start_offset_ms: signed_ms(origin, start),
            time_to_first_output_ms: state.first_output_ms,
            ttft_ms: state.first_content_ms,
            planned_context_tokens: planned,
            prompt_tokens: state.prompt_tokens,
            cached_tokens: state.cached_tokens,
            content_chunks: state.content_chunks,
            reasoning_chunks: state.reasoning_chunks,
            max_inter_chunk_ms: state.max_inter_chunk_ms,
            ..RequestRecord::default()
        };
        match outcome {
            Ok(end_ms) => record.e2e_ms = end_ms,
            Err(failure) => {
                record.e2e_ms = ms_since(start, end);
                record.error = Some(RequestError {
                    kind: failure.kind,
                    status: failure.status,
                    message: self.redact(failure.message),
                });
            }
        }
        if state.completion_tokens.is_some() || state.content_chunks + state.reasoning_chunks > 0 {
            let (tokens, source) = state.output_tokens();
            record.output_tokens = Some(tokens);
            record.output_token_source = Some(source);
        }
        crate::metrics::derive_record_fields(&mut record);
        record
    }

    /// The request and its stream; on success, ms from `start` to the end of the stream.
    async fn exchange(
        &self,
        request_id: &str,
        body: String,
        start: Instant,
        state: &mut StreamState,
    ) -> Result<f64, Failure> {
        let timeouts = &self.config.timeouts;
        let total_deadline = timeouts.total.map(|t| start + t);

        let request = self
            .http
            .post(self.url.clone())
            .header("x-request-id", request_id)
            .body(body)
            .send();
        let first_byte_deadline = timeouts.first_byte.map(|t| start + t);
        let response = match wait(request, first_byte_deadline, total_deadline).await {
            Waited::Done(Ok(response)) => response,
            Waited::Done(Err(err)) => return Err(Failure::from_reqwest(&err)),
            Waited::TimedOut(Which::Own) => {
                return Err(Failure::new(
                    ErrorKind::FirstByteTimeout,
                    "no response headers within the first-byte timeout",
                ));
            }
            Waited::TimedOut(Which::Total) => return Err(Failure::total()),
        };

        let status = response.status();
        if !status.is_success() {
            return Err(self.status_failure(response, total_deadline).await);
        }
        let is_event_stream = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.trim_start()
                    .get(..17)
                    .is_some_and(|t| t.eq_ignore_ascii_case("text/event-stream"))
            });
        if !is_event_stream {
            return Err(self.non_stream_failure(response, total_deadline).await);
        }

        let mut response = response;
        let mut parser = SseParser::new(self.max_event_bytes);
        loop {
            let idle_deadline = timeouts.idle.map(|t| Instant::now() + t);
            let chunk = match wait(response.chunk(), idle_deadline, total_deadline).await {
                Waited::Done(Ok(chunk)) => chunk,
                Waited::Done(Err(err)) => {
                    return Err(Failure::new(
                        ErrorKind::StreamBroken,
                        format!(
                            "stream broke after {} events: {}",
                            state.events,
                            error_chain(&err)
                        ),
                    ));
                }
                Waited::TimedOut(Which::Own) => {
                    return Err(Failure::new(
                        ErrorKind::IdleTimeout,
                        format!(
                            "no bytes within the idle timeout after {} events",
                            state.events
                        ),
                    ));
                }
                Waited::TimedOut(Which::Total) => return Err(Failure::total()),
            };
            let now = Instant::now();
            let now_ms = ms_since(start, now);
            let Some(chunk) = chunk else {
                // End of body: a last event without its blank line still counts.
                let mut failure = None;
                parser
                    .finish(|kind, data| on_data(state, kind, data, now_ms, &mut failure))
                    .map_err(|e| Failure::new(ErrorKind::MalformedEvent, e.to_string()))?;
                if let Some(failure) = failure {
                    return Err(failure.into());
                }
                if state.done {
                    return Ok(now_ms);
                }
                return Err(Failure::new(
                    ErrorKind::MissingDone,
                    format!("stream ended after {} events without [DONE]", state.events),
                ));
            };
            let mut failure = None;
            parser
                .feed(&chunk, |kind, data| {
                    on_data(state, kind, data, now_ms, &mut failure)
                })
                .map_err(|e| Failure::new(ErrorKind::MalformedEvent, e.to_string()))?;
            if let Some(failure) = failure {
                return Err(failure.into());
            }
            if state.done {
                // Read the body's end so the connection goes back to the pool.
                let drain_deadline = Instant::now() + DRAIN_WAIT;
                while let Waited::Done(Ok(Some(_))) =
                    wait(response.chunk(), Some(drain_deadline), None).await
                {}
                return Ok(now_ms);
            }
        }
    }

    /// A non-2xx response: its status and a short excerpt of its body.
    async fn status_failure(
        &self,
        response: reqwest::Response,
        total_deadline: Option<Instant>,
    ) -> Failure {
        let status = response.status();
        let retry_after = response
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = self.redact_bytes(read_body_prefix(response, total_deadline).await);
        let body = error_excerpt(&body);
        let (kind, mut message) = if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            (ErrorKind::RateLimited, format!("HTTP {status}"))
        } else {
            (ErrorKind::HttpStatus, format!("HTTP {status}"))
        };
        if let Some(retry_after) = retry_after {
            message.push_str(&format!(
                "; retry-after: {}",
                excerpt(retry_after.as_bytes())
            ));
        }
        if !body.is_empty() {
            message.push_str(": ");
            message.push_str(&body);
        }
        Failure {
            kind,
            status: Some(status.as_u16()),
            message,
        }
    }

    /// A 2xx response that is not an event stream: an error object, or a server that ignored
    /// `stream: true`.
    async fn non_stream_failure(
        &self,
        response: reqwest::Response,
        total_deadline: Option<Instant>,
    ) -> Failure {
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none")
            .to_string();
        let body = self.redact_bytes(read_body_prefix(response, total_deadline).await);
        let value: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
        let is_error = value.as_ref().is_some_and(|v| {
            v.get("error").is_some_and(|e| !e.is_null())
                || v.get("object").and_then(|o| o.as_str()) == Some("error")
        });
        if is_error {
            Failure {
                kind: ErrorKind::ErrorObject,
                status: Some(status),
                message: stream::error_message(&body),
            }
        } else {
            Failure {
                kind: ErrorKind::MalformedEvent,
                status: Some(status),
                message: format!(
                    "expected an event stream, got content-type {}: {}",
                    excerpt(content_type.as_bytes()),
                    excerpt(&body)
                ),
            }
        }
    }
}

/// Hand one SSE payload to the stream state; stop on `[DONE]` or a failure.
fn on_data(
    state: &mut StreamState,
    kind: EventKind,
    data: &[u8],
    now_ms: f64,
    failure: &mut Option<StreamFailure>,
) -> ControlFlow<()> {
    if state.done {
        return ControlFlow::Break(()); // nothing after [DONE] counts
    }
    let outcome = match kind {
        EventKind::Data => state.on_event(data, now_ms),
        EventKind::Error => EventOutcome::Failed(StreamFailure {
            kind: ErrorKind::ErrorObject,
            message: stream::error_message(data),
        }),
    };
    match outcome {
        EventOutcome::Continue => ControlFlow::Continue(()),
        EventOutcome::Done => ControlFlow::Break(()),
        EventOutcome::Failed(f) => {
            *failure = Some(f);
            ControlFlow::Break(())
        }
    }
}

/// The fixed body fields: model, streaming, sampling, then the extra body merged over them.
fn fixed_body_fields(config: &ClientConfig) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::{Value, json};
    let mut fixed = serde_json::Map::new();
    fixed.insert("model".into(), Value::String(config.model.clone()));
    fixed.insert("stream".into(), Value::Bool(true));
    fixed.insert("stream_options".into(), json!({ "include_usage": true }));
    let s = &config.sampling;
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
fn default_request_id_prefix() -> String {
    format!("sb-{:08x}", rand::random::<u32>())
}

/// Milliseconds from `from` to `to`, negative when `to` is earlier.
fn signed_ms(from: Instant, to: Instant) -> f64 {
    match to.checked_duration_since(from) {
        Some(d) => d.as_secs_f64() * 1000.0,
        None => -(from.duration_since(to).as_secs_f64() * 1000.0),
    }
}

fn ms_since(start: Instant, now: Instant) -> f64 {
    now.saturating_duration_since(start).as_secs_f64() * 1000.0
}

/// Which deadline fired.
enum Which {
    /// The step's own deadline (first byte, idle).
    Own,
    Total,
}

enum Waited<T> {
    Done(T),
    TimedOut(Which),
}

/// Await `fut` until the earlier of two optional deadlines.
async fn wait<F: Future>(
    fut: F,
    own: Option<Instant>,
    total: Option<Instant>,
) -> Waited<F::Output> {
    let (deadline, which) = match (own, total) {
        (None, None) => return Waited::Done(fut.await),
        (Some(o), None) => (o, Which::Own),
        (None, Some(t)) => (t, Which::Total),
        (Some(o), Some(t)) if t <= o => (t, Which::Total),
        (Some(o), Some(_)) => (o, Which::Own),
    };
    match tokio::time::timeout_at(deadline.into(), fut).await {
        Ok(output) => Waited::Done(output),
        Err(_) => Waited::TimedOut(which),
    }
}

/// Up to `ERROR_BODY_MAX_BYTES` of a body, waiting at most `ERROR_BODY_WAIT` (or the total
/// deadline); whatever arrived by then.
async fn read_body_prefix(mut response: reqwest::Response, total: Option<Instant>) -> Vec<u8> {
    let deadline = Instant::now() + ERROR_BODY_WAIT;
    let deadline = total.map_or(deadline, |t| t.min(deadline));
    let mut body = Vec::new();
    while body.len() < ERROR_BODY_MAX_BYTES {
        match wait(response.chunk(), Some(deadline), None).await {
            Waited::Done(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            Waited::Done(Ok(None) | Err(_)) | Waited::TimedOut(_) => break,
        }
    }
    body
}

/// An error body's message for a record: `error.message` when JSON, else the text.
fn error_excerpt(body: &[u8]) -> String {
    if body.iter().all(u8::is_ascii_whitespace) {
        return String::new();
    }
    stream::error_message(body)
}

/// An error and its sources, joined with ": ".
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    message
}

/// A failed request before it becomes `record.error`.
#[derive(Debug)]
struct Failure {
    kind: ErrorKind,
    status: Option<u16>,
    message: String,
}

impl Failure {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Failure {
            kind,
            status: None,
            message: message.into(),
        }
    }

    fn total() -> Self {
        Failure::new(
            ErrorKind::TotalTimeout,
            "request exceeded the total timeout",
        )
    }

    fn from_reqwest(err: &reqwest::Error) -> Self {
        let kind = if err.is_connect() {
            ErrorKind::Connect
        } else {
            // The request was sent (or the connection dropped) before any response arrived.
            ErrorKind::StreamBroken
        };
        Failure::new(kind, error_chain(err))
    }
}

impl From<StreamFailure> for Failure {
    fn from(f: StreamFailure) -> Self {
        Failure::new(f.kind, f.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::ChatMessage;

    fn config() -> ClientConfig {
        ClientConfig {
            base_url: "http://127.0.0.1:9/v1/".into(),
            api: Api::Chat,
            model: "m".into(),
            api_key: Some("sk-very-secret".into()),
            headers: vec![
                ("X-Api-Key".into(), "hidden-value".into()),
                ("X-Team".into(), "bench".into()),
            ],
            timeouts: ResolvedTimeouts::default(),
            body: serde_json::from_str(
                r#"{"chat_template_kwargs":{"thinking_mode":"disabled"},"temperature":0.5}"#,
            )
            .expect("json"),
            sampling: Sampling {
                temperature: Some(0.0),
                ignore_eos: Some(true),
                min_tokens: Some(8),
                seed: Some(3),
            },
            max_connections: 4,
        }
    }

    #[test]
    fn send_futures_can_be_spawned() {
        fn assert_send<T: Send>(_: &T) {}
        fn assert_sync<T: Send + Sync>() {}
        assert_sync::<Client>();
        let client = Client::new(config()).expect("client");
        let prompt = Prompt {
            input: PromptInput::Text(String::new()),
            planned_prompt_tokens: None,
            max_tokens: 1,
            scheduled_at: None,
        };
        let fut = client.send(0, &prompt, Instant::now());
        assert_send(&fut);
    }

    #[test]
    fn debug_redacts_secrets() {
        let text = format!("{:?}", config());
        assert!(!text.contains("sk-very-secret"), "{text}");
        assert!(!text.contains("hidden-value"), "{text}");
        assert!(text.contains("bench"));
        let client = Client::new(config()).expect("client");
        let text = format!("{client:?}");
        assert!(!text.contains("sk-very-secret") && !text.contains("hidden-value"));
    }

    #[test]
    fn body_holds_prompt_sampling_and_extra_fields() {
        let client = Client::new(config()).expect("client");
        assert_eq!(
            client.url.as_str(),
            "http://127.0.0.1:9/v1/chat/completions"
        );
        let prompt = Prompt {
            input: PromptInput::Messages(vec![ChatMessage {
                role: "user".into(),
                content: "hi \"there\"".into(),
            }]),
            planned_prompt_tokens: None,
            max_tokens: 64,
            scheduled_at: None,
        };
        let body: serde_json::Value =
            serde_json::from_str(&client.request_body(&prompt)).expect("valid JSON");
        assert_eq!(body["messages"][0]["content"], "hi \"there\"");
        assert_eq!(body["max_tokens"], 64);
        assert_eq!(body["model"], "m");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["ignore_eos"], true);
        assert_eq!(body["min_tokens"], 8);
        assert_eq!(body["seed"], 3);
        // The extra body wins over sampling settings.
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(body["chat_template_kwargs"]["thinking_mode"], "disabled");
    }

    #[test]
    fn completions_body_and_overridden_max_tokens() {
        let mut cfg = config();
        cfg.api = Api::Completions;
        cfg.body.insert("max_tokens".into(), serde_json::json!(5));
        let client = Client::new(cfg).expect("client");
        assert_eq!(client.url.as_str(), "http://127.0.0.1:9/v1/completions");
        let prompt = Prompt {
            input: PromptInput::Text("once".into()),
            planned_prompt_tokens: None,
            max_tokens: 64,
            scheduled_at: None,
        };
        let text = client.request_body(&prompt);
        let body: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(body["prompt"], "once");
        assert_eq!(body["max_tokens"], 5);
        assert_eq!(text.matches("max_tokens").count(), 1);
    }

    #[test]
    fn config_for_target_reads_key_and_merges() {
        let mut target = crate::plan::Target {
            base_url: Some("http://127.0.0.1:1/v1".into()),
            model: Some("m".into()),
            // Any variable that is always set stands in for a key variable.
            api_key_env: Some("PATH".into()),
            ..Default::default()
        };
        target.headers.insert("X-A".into(), "1".into());
        target.body.insert("top_k".into(), serde_json::json!(5));
        let mut workload = crate::plan::Workload {
            temperature: Some(0.0),
            ignore_eos: Some(true),
            ..Default::default()
        };
        workload.body.insert("top_k".into(), serde_json::json!(7));
        let cfg =
            ClientConfig::for_target(&target, "http://x/v1".into(), &workload, 0).expect("config");
        assert_eq!(
            cfg.api_key.as_deref(),
            std::env::var("PATH").ok().as_deref()
        );
        assert_eq!(cfg.body["top_k"], 7);
        assert_eq!(cfg.sampling.ignore_eos, Some(true));
        assert_eq!(cfg.max_connections, 1);
        assert_eq!(cfg.headers, vec![("X-A".to_string(), "1".to_string())]);

        target.api_key_env = Some("SERVEBENCH_SURELY_UNSET_VARIABLE_1".into());
        let err = ClientConfig::for_target(&target, "http://x/v1".into(), &workload, 1)
            .expect_err("unset key variable");
        assert!(
            err.to_string()
                .contains("SERVEBENCH_SURELY_UNSET_VARIABLE_1")
        );
        target.model = None;
        target.api_key_env = None;
        assert!(ClientConfig::for_target(&target, "http://x/v1".into(), &workload, 1).is_err());
    }

    #[test]
    fn body_merge_is_deep_for_objects() {
        let mut base: serde_json::Map<String, serde_json::Value> = serde_json::from_str(
            r#"{"chat_template_kwargs":{"enable_thinking":true},"reasoning_effort":"low","top_k":5}"#,
        )
        .expect("json");
        let over = serde_json::from_str(
            r#"{"chat_template_kwargs":{"thinking_mode":"disabled"},"reasoning_effort":"high"}"#,
        )
        .expect("json");
        merge_body(&mut base, &over);
        assert_eq!(
            serde_json::Value::Object(base),
            serde_json::json!({
                "chat_template_kwargs": {"enable_thinking": true, "thinking_mode": "disabled"},
                "reasoning_effort": "high",
                "top_k": 5
            })
        );
    }

    #[test]
    fn bad_setup_is_a_clear_error() {
        let mut cfg = config();
        cfg.base_url = "not a url".into();
        assert!(Client::new(cfg).is_err());
        let mut cfg = config();
        cfg.headers.push(("bad header".into(), "x".into()));
        let err = Client::new(cfg).expect_err("bad header name");
        assert!(err.to_string().contains("bad header"));
        let mut cfg = config();
        cfg.api_key = Some("line\nbreak".into());
        let err = Client::new(cfg).expect_err("bad key");
        assert!(!err.to_string().contains("line"));
    }
}
