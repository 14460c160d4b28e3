//! One request and its streamed response over a pooled connection, measured into a record.

use std::fmt;
use std::future::Future;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode, Uri};

use super::config::{Api, ClientConfig, Redactor};
use super::error_body;
use super::failure::{
    Deadlines, Failure, Waited, Which, error_chain, error_excerpt, ms_since, next_chunk,
    read_body_prefix, signed_ms,
};
use super::pool::{Lease, Origin, Pool, ServerKeepAlive};
use super::record::{ErrorKind, RequestError, RequestRecord};
use super::request::{RequestTemplate, default_request_id_prefix};
use super::request_id::{RequestIdFormat, empty_body_hint};
use super::scan;
use super::setup_error::ClientError;
use super::sse::{DEFAULT_MAX_EVENT_BYTES, EventKind, Events, SseParser};
use super::stream::{self, EventOutcome, StreamFailure, StreamFormat, StreamState, excerpt};
use super::trace_context::{SentIds, TRACEPARENT, TraceContextMode, TraceIds};
use crate::hash::IdHash;
use crate::workload::{ChatMessage, Prompt};

/// After `[DONE]`, how long to wait for the body's end so the connection can be reused.
const DRAIN_WAIT: Duration = Duration::from_millis(500);

/// A connection pool and request builder for one target.
pub struct Client {
    config: ClientConfig,
    url: reqwest::Url,
    /// The request target (path and query) sent on the request line.
    path: Uri,
    /// The whole URL, for HTTP/2's `:scheme` and `:authority`.
    absolute: Uri,
    /// Headers and the fixed part of every body.
    template: RequestTemplate,
    /// Every request's headers, ready to clone: the template's, the host's (HTTP/1) and the
    /// request id's, whose value each request sets. Cloned, a map keeps its hashed slots; built
    /// header by header, each request hashed every name again.
    request_headers: HeaderMap,
    pool: Pool,
    redactor: Redactor,
    request_id_prefix: String,
    /// The hash of `{request_id_prefix}-`, which each request's UUID carries on.
    request_id_hash: IdHash,
    /// The run's half of each request's trace id; `None` when trace context is off.
    trace_ids: Option<super::trace_context::TraceIds>,
    /// Sessions: the header that carries a session's id with each of its turns.
    session_header: Option<HeaderName>,
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

/// Which connection a request ended up on.
#[derive(Debug, Default)]
struct ConnectionUse {
    /// `None` until a connection was had.
    new_connection: Option<bool>,
    retries: u32,
    /// The set-up times of the new connection the request opened.
    setup: Option<super::pool::ConnectionSetup>,
}

/// What one request carries beyond the phase's settings.
#[derive(Default)]
struct Extras {
    /// A header of its own (a session's affinity header).
    header: Option<(HeaderName, HeaderValue)>,
    /// Keep the reply's text (a session's next turn needs it).
    capture_reply: bool,
}

impl Client {
    pub fn new(config: ClientConfig) -> Result<Self, ClientError> {
        let base = config.base_url.trim_end_matches('/');
        let path = config.api.path();
        let url = reqwest::Url::parse(&format!("{base}/{path}"))
            .map_err(|e| ClientError(format!("invalid base_url {:?}: {e}", config.base_url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ClientError(format!(
                "invalid base_url {:?}: expected http:// or https://",
                config.base_url
            )));
        }
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        };
        let path: Uri = target
            .parse()
            .map_err(|e| ClientError(format!("invalid base_url {:?}: {e}", config.base_url)))?;
        let absolute: Uri = url
            .as_str()
            .parse()
            .map_err(|e| ClientError(format!("invalid base_url {:?}: {e}", config.base_url)))?;
        let pool = Pool::new(
            Origin::new(&url, &config)?,
            config.connection,
            config.timeouts.connect,
            config.max_connections,
        );
        let template = RequestTemplate::new(&config)?;
        let request_headers = request_headers(&template.headers, pool.origin(), &config);
        let client = Client {
            redactor: Redactor::new(&config),
            config,
            url,
            path,
            absolute,
            template,
            request_headers,
            pool,
            request_id_prefix: String::new(),
            request_id_hash: IdHash::new(),
            trace_ids: None,
            session_header: None,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
        };
        Ok(client.with_request_id_prefix(default_request_id_prefix()))
    }

    /// Use `prefix` for request ids (`{prefix}-{request_index}`) instead of a random one, e.g.
    /// the run id plus the phase name.
    pub fn with_request_id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.request_id_prefix = prefix.into();
        self.trace_ids = (self.config.trace_context == TraceContextMode::W3c)
            .then(|| TraceIds::new(&self.request_id_prefix));
        self.request_id_hash = IdHash::new()
            .update(self.request_id_prefix.as_bytes())
            .update(b"-");
        self
    }

    /// Send each session's id in this header (`{prefix}-s{session}`), so a gateway can keep
    /// a session on one replica.
    pub fn with_session_header(mut self, name: Option<HeaderName>) -> Self {
        self.session_header = name;
        self
    }

    /// Cap on one SSE event's size (default 1 MiB); larger events are `malformed_event`.
    pub fn with_max_event_bytes(mut self, max_event_bytes: usize) -> Self {
        self.max_event_bytes = max_event_bytes.max(1);
        self
    }

    /// Open connections until `count` wait idle in the pool; how many were opened, or
    /// why one could not be.
    pub async fn warm_connections(&self, count: usize) -> Result<usize, String> {
        match self.pool.warm(count).await {
            (opened, None) => Ok(opened),
            (_, Some(e)) => Err(super::failure::Failure::connect(e, self.url.as_str()).message),
        }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// The URL requests are sent to.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// The readable id of the request with this index (its header value derives from it).
    pub fn request_id(&self, request_index: u64) -> String {
        self.request_ids(request_index).0
    }

    /// The readable id of the request with this index, and its id header's value: the id
    /// itself, its UUID (`uuid_for` of it, from the prefix's hash carried on), or none.
    pub(super) fn request_ids(&self, request_index: u64) -> (String, Option<String>) {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(request_index);
        let mut id = String::with_capacity(self.request_id_prefix.len() + 1 + digits.len());
        id.push_str(&self.request_id_prefix);
        id.push('-');
        id.push_str(digits);
        let sent = self.config.request_id.header_value_with(&id, || {
            self.request_id_hash.update(digits.as_bytes()).uuid()
        });
        (id, sent)
    }

    /// The names of the request headers servers commonly validate that every request carries:
    /// the request id, the key's header, and the target's own headers.
    fn validated_headers(&self) -> Vec<&str> {
        let mut names = Vec::new();
        if self.config.request_id.format != RequestIdFormat::Off {
            names.push(self.config.request_id.header.as_str());
        }
        if self.config.api_key.is_some() {
            names.push(
                self.config
                    .api_key_header
                    .as_deref()
                    .unwrap_or("authorization"),
            );
        }
        names.extend(self.config.headers.iter().map(|(name, _)| name.as_str()));
        names
    }

    /// The JSON body for one prompt.
    pub fn request_body(&self, prompt: &Prompt) -> String {
        self.template.body(prompt)
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
        let body = self.template.body_bytes(prompt);
        let inputs = self.inputs(prompt);
        let counts = (prompt.planned_prompt_tokens, inputs);
        self.send_body(
            request_index,
            body,
            counts,
            origin,
            cancel,
            Extras::default(),
        )
        .await
        .0
    }

    /// [`Client::send`] taking the prompt by value: it is dropped once the body is built, so a
    /// long prompt is held once (in its body) while its request is in flight.
    pub async fn send_owned(
        &self,
        request_index: u64,
        prompt: Prompt,
        origin: Instant,
    ) -> RequestRecord {
        let body = self.template.body_bytes(&prompt);
        let counts = (prompt.planned_prompt_tokens, self.inputs(&prompt));
        drop(prompt);
        let pending = std::future::pending();
        self.send_body(
            request_index,
            body,
            counts,
            origin,
            pending,
            Extras::default(),
        )
        .await
        .0
    }

    /// One turn of a session: the prompt (its history already in it) sent with the session's
    /// affinity header, if any; the record and the reply (text and tool calls), which the next
    /// turn carries.
    pub async fn send_turn(
        &self,
        request_index: u64,
        prompt: Prompt,
        origin: Instant,
    ) -> (RequestRecord, ChatMessage) {
        let body = self.template.body_bytes(&prompt);
        let counts = (prompt.planned_prompt_tokens, self.inputs(&prompt));
        let turn = prompt.session;
        drop(prompt);
        let header = match (&self.session_header, turn) {
            (Some(name), Some(turn)) => {
                let id = format!("{}-s{}", self.request_id_prefix, turn.session);
                HeaderValue::from_str(&id)
                    .ok()
                    .map(|value| (name.clone(), value))
            }
            _ => None,
        };
        let extras = Extras {
            header,
            capture_reply: true,
        };
        let (mut record, reply) = self
            .send_body(
                request_index,
                body,
                counts,
                origin,
                std::future::pending(),
                extras,
            )
            .await;
        if let Some(turn) = turn {
            (record.session, record.turn) = (Some(turn.session), Some(u64::from(turn.turn)));
        }
        let reply = reply.unwrap_or_else(|| ChatMessage::new("assistant", ""));
        (record, reply)
    }

    /// Embeddings and rerank: the texts or documents the request carries.
    fn inputs(&self, prompt: &Prompt) -> Option<u64> {
        (!self.config.api.generates()).then(|| prompt.input.inputs())
    }

    /// One request with its serialized body; `counts` are the prompt's planned token count
    /// and, for embeddings and rerank, its number of inputs. The reply's text comes back when
    /// `extras` asks for it.
    async fn send_body<C>(
        &self,
        request_index: u64,
        body: Vec<u8>,
        (planned, inputs): (Option<u64>, Option<u64>),
        origin: Instant,
        cancel: C,
        extras: Extras,
    ) -> (RequestRecord, Option<ChatMessage>)
    where
        C: Future<Output = ()>,
    {
        let (request_id, sent_id) = self.request_ids(request_index);
        let trace = self.trace_ids.map(|ids| ids.traceparent(request_index));
        let (traceparent, trace_id) = trace.unzip();
        let sent_ids = SentIds {
            id: sent_id
                .as_deref()
                .and_then(|id| HeaderValue::from_str(id).ok()),
            traceparent,
        };
        let mut state = StreamState {
            reply: extras.capture_reply.then(String::new),
            format: match self.config.api {
                Api::Responses => StreamFormat::Responses,
                Api::Messages => StreamFormat::Messages,
                _ => StreamFormat::Chunks,
            },
            chunk_memo: scan::StreamMemo::take(),
            ..StreamState::default()
        };
        let mut used = ConnectionUse::default();
        let start = Instant::now();
        let header = extras.header.as_ref();
        let outcome = {
            // Pinned in place: `select!` would move the whole exchange into its own state.
            let exchange = std::pin::pin!(self.exchange(
                &sent_ids,
                Bytes::from(body),
                (start, inputs, header),
                &mut state,
                &mut used,
            ));
            tokio::select! {
                biased;
                outcome = exchange => outcome,
                () = cancel => Err(Failure::new(ErrorKind::Cancelled, "cancelled while in flight")),
            }
        };
        let mut record = RequestRecord {
            request_index,
            sent_request_id: sent_id.filter(|sent| *sent != request_id),
            request_id,
            trace_id,
            start_offset_ms: signed_ms(origin, start),
            time_to_first_output_ms: state.first_output_ms,
            ttft_ms: state.first_content_ms,
            planned_context_tokens: planned,
            prompt_tokens: state.prompt_tokens,
            cached_tokens: state.cached_tokens,
            content_chunks: state.content_chunks,
            reasoning_chunks: state.reasoning_chunks,
            max_inter_chunk_ms: state.max_inter_chunk_ms,
            connection_retries: used.retries,
            new_connection: used.new_connection,
            connect_ms: used.setup.map(|s| s.connect_ms),
            tls_ms: used.setup.and_then(|s| s.tls_ms),
            server_queue_ms: state.server.queue_ms,
            server_prompt_ms: state.server.prompt_ms,
            server_total_ms: state.server.total_ms(),
            inputs,
            ttft_tool_ms: state.first_tool_call_ms,
            tool_call_chunks: state.tool_call_chunks,
            ..RequestRecord::default()
        };
        match outcome {
            Ok(end_ms) => record.e2e_ms = end_ms,
            Err(failure) => {
                record.e2e_ms = ms_since(start, Instant::now());
                record.error = Some(self.request_error(failure));
            }
        }
        let chunks = state.content_chunks + state.reasoning_chunks + state.tool_call_chunks;
        if state.completion_tokens.is_some() || chunks > 0 {
            let (tokens, source) = state.output_tokens();
            record.output_tokens = Some(tokens);
            record.output_token_source = Some(source);
        }
        super::derive_record_fields(&mut record);
        std::mem::take(&mut state.chunk_memo).give_back();
        (record, state.take_reply())
    }

    /// The request and its stream (or JSON body); on success, ms from `start` to its end.
    async fn exchange(
        &self,
        ids: &SentIds,
        body: Bytes,
        (start, inputs, extra_header): (Instant, Option<u64>, Option<&(HeaderName, HeaderValue)>),
        state: &mut StreamState,
        used: &mut ConnectionUse,
    ) -> Result<f64, Failure> {
        let timeouts = &self.config.timeouts;
        let total_deadline = timeouts.total.map(|t| start + t);
        let first_byte_deadline = timeouts.first_byte.map(|t| start + t);
        let mut deadlines = Deadlines::new(first_byte_deadline, total_deadline, start);
        let mut pooled = self.pool.checkout(start);
        if let Some(lease) = pooled.as_mut() {
            deadlines.reuse(lease.timer.take());
        }
        let waited = {
            // Pinned here, so the deadline wait holds a pointer to it rather than a copy; in a
            // block, so the body's reading reuses its room in this future.
            let head = std::pin::pin!(self.response_head(pooled, ids, body, extra_header, used));
            deadlines.wait(head).await
        };
        let (response, mut lease) = match waited {
            Waited::Done(result) => result?,
            Waited::TimedOut(Which::Own) => return Err(Failure::first_byte()),
            Waited::TimedOut(Which::Total) => return Err(Failure::total()),
        };
        // The byte count with the reading, so body bytes that came in the head's read share it.
        let head_read = (lease.bytes_read(), Instant::now());
        deadlines.body(timeouts.idle, head_read.1);
        let keep_alive = ServerKeepAlive::from_headers(response.headers());
        let status = response.status();
        let is_event_stream = response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| {
                v.as_bytes()
                    .trim_ascii_start()
                    .get(..17)
                    .is_some_and(|t| t.eq_ignore_ascii_case(b"text/event-stream"))
            });
        let (parts, mut body) = response.into_parts();
        let unexpected = !status.is_success() || (inputs.is_none() && !is_event_stream);
        let (result, ended) = if unexpected {
            let (bytes, ended) = self.failure_body(&mut body, total_deadline).await;
            let failure = if status.is_success() {
                self.non_stream_failure(&parts.headers, status, bytes)
            } else {
                self.status_failure(&parts.headers, status, bytes, ended)
            };
            (Err(failure), ended)
        } else {
            // The head's header values are slices of hyper's read buffer: held while the body
            // is read, they make each later read of the connection take a new 8 KiB buffer.
            drop(parts);
            match inputs {
                Some(inputs) => {
                    self.read_json(&mut body, status, (start, inputs), &mut deadlines, state)
                        .await
                }
                None => {
                    self.read_stream(&mut body, (start, &lease, head_read), &mut deadlines, state)
                        .await
                }
            }
        };
        if ended {
            lease.timer = deadlines.take_timer();
            // The last read's timestamp: a clock read saved, and seconds of keep-alive left.
            self.pool.checkin(lease, keep_alive, deadlines.last_bytes());
        }
        result
    }

    /// The response head, on the `pooled` connection or a new one. A reused connection that
    /// fails before any response byte arrived (the server closed it as the request went out) is
    /// replaced once by a new one; a new connection's failure is the server's.
    async fn response_head(
        &self,
        pooled: Option<Lease>,
        ids: &SentIds,
        body: Bytes,
        extra_header: Option<&(HeaderName, HeaderValue)>,
        used: &mut ConnectionUse,
    ) -> Result<(Response<Incoming>, Lease), Failure> {
        let mut lease = match pooled {
            Some(lease) => lease,
            None => self.connect().await?,
        };
        loop {
            used.new_connection = Some(lease.fresh);
            used.setup = lease.setup.take();
            let read_before = lease.bytes_read();
            let mut request = self.request(ids, body.clone());
            if let Some((name, value)) = extra_header {
                request.headers_mut().insert(name.clone(), value.clone());
            }
            let sent = lease.sender.send(request).await;
            match sent {
                Ok(response) => return Ok((response, lease)),
                // A shared HTTP/2 connection's byte count moves with the other streams.
                Err(_)
                    if !lease.fresh
                        && !lease.is_multiplexed()
                        && lease.bytes_read() == read_before =>
                {
                    used.retries += 1;
                    used.new_connection = None;
                    lease = self.connect().await?;
                }
                Err(err) => return Err(Failure::before_response(&err, self.url.as_str())),
            }
        }
    }

    /// Boxed: a new connection is rare, and its set-up state is larger than the rest of a
    /// request's, which every request would otherwise carry (and copy) inline.
    fn connect(&self) -> std::pin::Pin<Box<impl Future<Output = Result<Lease, Failure>> + '_>> {
        Box::pin(async move {
            self.pool
                .connect()
                .await
                .map_err(|e| Failure::connect(e, self.url.as_str()))
        })
    }

    fn request(&self, ids: &SentIds, body: Bytes) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = Method::POST;
        // HTTP/2 carries scheme and authority in the URI's pseudo-headers; a proxy is sent the
        // whole URL.
        *request.uri_mut() = if self.pool.origin().absolute_uri() {
            self.absolute.clone()
        } else {
            self.path.clone()
        };
        let headers = request.headers_mut();
        *headers = self.request_headers.clone();
        // The placeholder's room in the clone takes the length hyper adds, which would grow
        // the map (a reallocation and a copy of every header, per request).
        headers.remove(header::CONTENT_LENGTH);
        if self.config.request_id.format != RequestIdFormat::Off {
            let name = &self.config.request_id.header;
            match (&ids.id, headers.get_mut(name)) {
                (Some(value), Some(slot)) => *slot = value.clone(),
                _ => drop(headers.remove(name)),
            }
        }
        if let (Some(value), Some(slot)) = (&ids.traceparent, headers.get_mut(TRACEPARENT)) {
            *slot = value.clone();
        }
        request
    }

    /// Read an event stream to `[DONE]` (and the body's end); whether the body ended comes back
    /// with the result, so the connection can go back to the pool.
    async fn read_stream(
        &self,
        body: &mut Incoming,
        (start, lease, head_read): (Instant, &Lease, (u64, Instant)),
        deadlines: &mut Deadlines,
        state: &mut StreamState,
    ) -> (Result<f64, Failure>, bool) {
        let mut parser = SseParser::new(self.max_event_bytes);
        // The connection's byte count when the clock was last read, and that reading.
        let mut stamped = head_read;
        loop {
            let chunk = match deadlines.wait(next_chunk(body)).await {
                Waited::Done(Ok(chunk)) => chunk,
                Waited::Done(Err(err)) => {
                    let message = format!(
                        "stream broke after {} events: {}",
                        state.events,
                        error_chain(&err)
                    );
                    return (Err(Failure::new(ErrorKind::StreamBroken, message)), false);
                }
                Waited::TimedOut(Which::Own) => {
                    let message = format!(
                        "no bytes within the idle timeout after {} events",
                        state.events
                    );
                    return (Err(Failure::new(ErrorKind::IdleTimeout, message)), false);
                }
                Waited::TimedOut(Which::Total) => return (Err(Failure::total()), false),
            };
            // Frames cut from what one socket read brought share that read's timestamp: they
            // arrived together, and a clock read per frame cost more than its scan. A shared
            // HTTP/2 connection's count moves with other streams too, so it reads more often.
            let read = lease.bytes_read();
            let now = if stamped.0 == read {
                stamped.1
            } else {
                stamped = (read, Instant::now());
                stamped.1
            };
            deadlines.saw_bytes(now);
            let now_ms = ms_since(start, now);
            let Some(chunk) = chunk else {
                return (finish_stream(&mut parser, state, now_ms), true);
            };
            let mut events = StreamEvents {
                state: &mut *state,
                now_ms,
                failure: None,
            };
            let fed = parser.feed_to(&chunk, &mut events);
            let failure = events.failure;
            if let Err(e) = fed {
                return (
                    Err(Failure::new(ErrorKind::MalformedEvent, e.to_string())),
                    false,
                );
            }
            if let Some(failure) = failure {
                return (Err(failure.into()), false);
            }
            if state.done {
                // Let go of the read's bytes first: while any part of hyper's read buffer is
                // held, its next read (the body's end) takes a new 8 KiB buffer.
                drop(chunk);
                deadlines.drain_until(now + DRAIN_WAIT);
                return (Ok(now_ms), drain(body, deadlines).await);
            }
        }
    }

    /// An embeddings or rerank response: the whole JSON body, its usage, and as many results
    /// as the request sent inputs (rerank's `top_n` may return fewer).
    async fn read_json(
        &self,
        body: &mut Incoming,
        status: hyper::StatusCode,
        (start, inputs): (Instant, u64),
        deadlines: &mut Deadlines,
        state: &mut StreamState,
    ) -> (Result<f64, Failure>, bool) {
        let mut bytes = Vec::new();
        loop {
            match deadlines.wait(next_chunk(body)).await {
                Waited::Done(Ok(Some(chunk))) if bytes.len() + chunk.len() > MAX_JSON_BYTES => {
                    let message = format!("response body over {} MiB", MAX_JSON_BYTES >> 20);
                    return (Err(Failure::new(ErrorKind::MalformedEvent, message)), false);
                }
                Waited::Done(Ok(Some(chunk))) => {
                    deadlines.saw_bytes(Instant::now());
                    bytes.extend_from_slice(&chunk);
                }
                Waited::Done(Ok(None)) => break,
                Waited::Done(Err(err)) => {
                    let message = format!(
                        "body broke after {} bytes: {}",
                        bytes.len(),
                        error_chain(&err)
                    );
                    return (Err(Failure::new(ErrorKind::StreamBroken, message)), false);
                }
                Waited::TimedOut(Which::Own) => {
                    let message = format!(
                        "no bytes within the idle timeout after {} bytes",
                        bytes.len()
                    );
                    return (Err(Failure::new(ErrorKind::IdleTimeout, message)), false);
                }
                Waited::TimedOut(Which::Total) => return (Err(Failure::total()), false),
            }
        }
        let end_ms = ms_since(start, Instant::now());
        let malformed = |message: String| Failure::new(ErrorKind::MalformedEvent, message);
        let value: serde_json::Value = match serde_json::from_slice(&bytes) {
            Ok(value) => value,
            Err(e) => {
                let message = format!("the body is not JSON ({e}): {}", excerpt(&bytes));
                return (Err(malformed(message)), true);
            }
        };
        if value.get("error").is_some_and(|e| !e.is_null())
            || value.get("object").and_then(|o| o.as_str()) == Some("error")
        {
            let failure = Failure {
                kind: ErrorKind::ErrorObject,
                status: Some(status.as_u16()),
                message: stream::error_message(&bytes),
                body: Some(self.redactor.bytes(bytes)),
            };
            return (Err(failure), true);
        }
        state.prompt_tokens = json_usage(&value);
        let (key, exact) = match self.config.api {
            Api::Rerank => ("results", false),
            _ => ("data", true),
        };
        let results = value.get(key).and_then(|v| v.as_array()).map(Vec::len);
        let expected = if exact { "exactly" } else { "1 to" };
        match results {
            Some(n) if n as u64 == inputs || (!exact && n > 0 && (n as u64) < inputs) => {
                (Ok(end_ms), true)
            }
            _ => {
                let found = results.map_or("none".to_string(), |n| n.to_string());
                let message = format!(
                    "expected {expected} {inputs} entries in `{key}`, found {found}: {}",
                    excerpt(&bytes)
                );
                (Err(malformed(message)), true)
            }
        }
    }

    /// A non-2xx response: its status and a short excerpt of its body.
    fn status_failure(
        &self,
        headers: &HeaderMap,
        status: StatusCode,
        bytes: Vec<u8>,
        ended: bool,
    ) -> Failure {
        let retry_after = header_text(headers, header::RETRY_AFTER);
        let text = error_excerpt(&bytes);
        let kind = if status == hyper::StatusCode::TOO_MANY_REQUESTS {
            ErrorKind::RateLimited
        } else {
            ErrorKind::HttpStatus
        };
        let mut message = format!("HTTP {status}");
        if let Some(retry_after) = retry_after {
            message.push_str(&format!(
                "; retry-after: {}",
                excerpt(retry_after.as_bytes())
            ));
        }
        if !text.is_empty() {
            message.push_str(": ");
            message.push_str(&text);
        } else if ended {
            message.push_str(&empty_body_hint(status.as_u16(), &self.validated_headers()));
        }
        if self.config.tls.client_cert.is_none() {
            message.push_str(super::tls::client_certificate_hint(status.as_u16(), &text));
        }
        Failure {
            kind,
            status: Some(status.as_u16()),
            message,
            // An empty body that did not end in time is unknown, not empty.
            body: (ended || !bytes.is_empty()).then_some(bytes),
        }
    }

    /// A 2xx response that is not an event stream: an error object, or a server that ignored
    /// `stream: true`.
    fn non_stream_failure(
        &self,
        headers: &HeaderMap,
        status: StatusCode,
        bytes: Vec<u8>,
    ) -> Failure {
        let content_type = header_text(headers, header::CONTENT_TYPE).unwrap_or("none");
        let value: Option<serde_json::Value> = serde_json::from_slice(&bytes).ok();
        let is_error = value.as_ref().is_some_and(|v| {
            v.get("error").is_some_and(|e| !e.is_null())
                || v.get("object").and_then(|o| o.as_str()) == Some("error")
        });
        let (kind, message) = if is_error {
            (ErrorKind::ErrorObject, stream::error_message(&bytes))
        } else {
            let message = format!(
                "expected an event stream, got content-type {}: {}",
                excerpt(content_type.as_bytes()),
                excerpt(&bytes)
            );
            (ErrorKind::MalformedEvent, message)
        };
        Failure {
            kind,
            status: Some(status.as_u16()),
            message,
            body: is_error.then_some(bytes),
        }
    }

    /// The start of a failed response's body, secrets redacted, and whether the body ended.
    async fn failure_body(
        &self,
        body: &mut Incoming,
        total_deadline: Option<Instant>,
    ) -> (Vec<u8>, bool) {
        let (bytes, ended) = read_body_prefix(body, total_deadline).await;
        (self.redactor.bytes(bytes), ended)
    }

    /// A failure as the record keeps it: secrets redacted from every text, the body cut to
    /// its first 2 KB, the server's code and type read from the whole body.
    fn request_error(&self, failure: Failure) -> RequestError {
        let body = failure.body.map(|b| self.redactor.bytes(b));
        let server = body
            .as_deref()
            .map(error_body::server_error)
            .unwrap_or_default();
        RequestError {
            kind: failure.kind,
            status: failure.status,
            message: self.redactor.text(failure.message),
            body: body
                .as_deref()
                .map(|b| self.redactor.text(error_body::kept_body(b))),
            code: server.code.map(|c| self.redactor.text(c)),
            error_type: server.error_type.map(|t| self.redactor.text(t)),
        }
    }
}

/// The largest embeddings or rerank body read (a batch of 64 inputs of 4,096 dimensions as
/// JSON is about 6 MiB).
const MAX_JSON_BYTES: usize = 256 << 20;

/// Prompt tokens of an embeddings or rerank body: `usage.prompt_tokens` (OpenAI, vLLM,
/// llama.cpp), else `usage.total_tokens` (vLLM rerank), else Cohere's `meta.tokens.input_tokens`
/// or `meta.billed_units.input_tokens`.
fn json_usage(value: &serde_json::Value) -> Option<u64> {
    let at = |path: &[&str]| {
        path.iter()
            .try_fold(value, |v, key| v.get(key))
            .and_then(serde_json::Value::as_u64)
    };
    at(&["usage", "prompt_tokens"])
        .or_else(|| at(&["usage", "total_tokens"]))
        .or_else(|| at(&["meta", "tokens", "input_tokens"]))
        .or_else(|| at(&["meta", "billed_units", "input_tokens"]))
}

/// A header's value as text, when it is text.
fn header_text(headers: &HeaderMap, name: HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The headers every request to `origin` carries: the template's, the host (HTTP/2 carries
/// it in the URI, and forbids connection-specific headers), a placeholder for the body's
/// length, and the request id's header with an empty value, for each request to fill.
fn request_headers(template: &HeaderMap, origin: &Origin, config: &ClientConfig) -> HeaderMap {
    let mut headers = template.clone();
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
    if origin.http2 {
        headers.remove(header::CONNECTION);
    } else {
        headers.insert(header::HOST, origin.host_header.clone());
    }
    if config.request_id.format != RequestIdFormat::Off {
        headers.insert(
            config.request_id.header.clone(),
            HeaderValue::from_static(""),
        );
    }
    if config.trace_context == TraceContextMode::W3c {
        headers.insert(TRACEPARENT, HeaderValue::from_static(""));
    }
    headers
}

/// The body's end after `[DONE]`, waited for until the deadline `deadlines` has in force;
/// whether it came.
async fn drain(body: &mut Incoming, deadlines: &mut Deadlines) -> bool {
    loop {
        match deadlines.wait(next_chunk(body)).await {
            Waited::Done(Ok(Some(_))) => {}
            Waited::Done(Ok(None)) => return true,
            Waited::Done(Err(_)) | Waited::TimedOut(_) => return false,
        }
    }
}

/// End of body: a last event without its blank line still counts; then `[DONE]` must have come.
fn finish_stream(
    parser: &mut SseParser,
    state: &mut StreamState,
    now_ms: f64,
) -> Result<f64, Failure> {
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
    Err(Failure::new(
        ErrorKind::MissingDone,
        format!(
            "stream ended after {} events without {}",
            state.events,
            state.end_marker()
        ),
    ))
}

/// One read's events, taken into the stream state at the read's time.
struct StreamEvents<'s> {
    state: &'s mut StreamState,
    now_ms: f64,
    failure: Option<StreamFailure>,
}

impl Events for StreamEvents<'_> {
    fn whole_events(&mut self, bytes: &[u8]) -> Option<usize> {
        self.state.whole_templated_events(bytes, self.now_ms)
    }

    fn event(&mut self, kind: EventKind, data: &[u8]) -> ControlFlow<()> {
        on_data(self.state, kind, data, self.now_ms, &mut self.failure)
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
        EventKind::Data => match state.format {
            StreamFormat::Chunks => state.on_event(data, now_ms),
            StreamFormat::Responses => super::responses::on_event(state, data, now_ms),
            StreamFormat::Messages => super::messages::on_event(state, data, now_ms),
        },
        EventKind::Error => EventOutcome::Failed(StreamFailure {
            kind: ErrorKind::ErrorObject,
            message: stream::error_message(data),
            body: Some(data.to_vec()),
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
