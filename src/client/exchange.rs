//! One request and its streamed response over a pooled connection, measured into a record.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, Uri};

use super::cancel::{CancelPoint, time_due};
use super::config::{Api, ClientConfig, Redactor};
use super::failure::{Deadlines, Failure, Waited, Which, ms_since, signed_ms};
use super::pool::{Lease, Origin, Pool, ServerKeepAlive};
use super::record::{ErrorKind, RequestRecord};
use super::request::{RequestTemplate, default_request_id_prefix};
use super::request_id::{RequestIdFormat, RequestNames};
use super::scan;
use super::setup_error::ClientError;
use super::sse::DEFAULT_MAX_EVENT_BYTES;
use super::stream::{StreamFormat, StreamState};
use super::trace_context::{SentIds, TRACEPARENT, TraceContextMode};
use crate::workload::{ChatMessage, Prompt};

mod body;
mod failures;

/// A connection pool and request builder for one target.
#[derive(Clone)]
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
    /// Shared with the clients of the phase's other windows, so a warmup's connections serve
    /// the measured window.
    pool: Arc<Pool>,
    redactor: Redactor,
    names: RequestNames,
    /// Sessions: the header that carries a session's id with each of its turns.
    session_header: Option<HeaderName>,
    max_event_bytes: usize,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("config", &self.config)
            .field("url", &self.url.as_str())
            .field("request_id_prefix", &self.names.prefix())
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
    /// The prompt's right answer, kept in the record with its reply.
    expected: Option<std::sync::Arc<str>>,
}

impl Client {
    pub fn new(config: ClientConfig) -> Result<Self, ClientError> {
        let base = config.endpoint.base_url.trim_end_matches('/');
        let path = config.api.path();
        let url = reqwest::Url::parse(&format!("{base}/{path}")).map_err(|e| {
            ClientError(format!(
                "invalid base_url {:?}: {e}",
                config.endpoint.base_url
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ClientError(format!(
                "invalid base_url {:?}: expected http:// or https://",
                config.endpoint.base_url
            )));
        }
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        };
        let path: Uri = target.parse().map_err(|e| {
            ClientError(format!(
                "invalid base_url {:?}: {e}",
                config.endpoint.base_url
            ))
        })?;
        let absolute: Uri = url.as_str().parse().map_err(|e| {
            ClientError(format!(
                "invalid base_url {:?}: {e}",
                config.endpoint.base_url
            ))
        })?;
        let pool = Arc::new(Pool::new(
            Origin::new(&url, &config)?,
            config.connection,
            config.timeouts.connect,
            config.max_connections,
        ));
        let template = RequestTemplate::new(&config)?;
        let request_headers = request_headers(&template.headers, pool.origin(), &config);
        let trace_context = config.trace_context == TraceContextMode::W3c;
        Ok(Client {
            redactor: Redactor::new(&config),
            config,
            url,
            path,
            absolute,
            template,
            request_headers,
            pool,
            names: RequestNames::new(default_request_id_prefix(), trace_context),
            session_header: None,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
        })
    }

    /// Use `prefix` for request ids (`{prefix}-{request_index}`) instead of a random one, e.g.
    /// the run id plus the phase name.
    pub fn with_request_id_prefix(mut self, prefix: impl Into<String>) -> Self {
        let trace_context = self.config.trace_context == TraceContextMode::W3c;
        self.names = RequestNames::new(prefix.into(), trace_context);
        self
    }

    /// A client for another window of the same phase (`window`, e.g. `warmup`): the same
    /// connections and requests, its own request ids (`{prefix}-{window}-{index}`) and trace
    /// ids, so no request of one window shares an id with one of another.
    pub fn for_window(&self, window: &str) -> Client {
        let prefix = format!("{}-{window}", self.names.prefix());
        self.clone().with_request_id_prefix(prefix)
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

    /// Open connections until `count` wait idle in the pool; how many wait (a warmup's
    /// included), or why one could not be opened.
    pub async fn warm_connections(&self, count: usize) -> Result<usize, String> {
        match self.pool.warm(count).await {
            (ready, None) => Ok(ready),
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

    /// The readable id of the request with this index, and its id header's value.
    pub(super) fn request_ids(&self, request_index: u64) -> (String, Option<String>) {
        self.names
            .ids(&self.config.endpoint.request_id, request_index)
    }

    /// The names of the request headers servers commonly validate that every request carries:
    /// the request id, the key's header, and the target's own headers.
    fn validated_headers(&self) -> Vec<&str> {
        let mut names = Vec::new();
        if self.config.endpoint.request_id.format != RequestIdFormat::Off {
            names.push(self.config.endpoint.request_id.header.as_str());
        }
        if self.config.endpoint.api_key.is_some() {
            names.push(
                self.config
                    .endpoint
                    .api_key_header
                    .as_deref()
                    .unwrap_or("authorization"),
            );
        }
        names.extend(
            self.config
                .endpoint
                .headers
                .iter()
                .map(|(name, _)| name.as_str()),
        );
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
        let extras = Extras {
            expected: prompt.expected.clone(),
            ..Extras::default()
        };
        self.send_body(request_index, body, counts, origin, cancel, extras)
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
        let extras = Extras {
            expected: prompt.expected.clone(),
            ..Extras::default()
        };
        drop(prompt);
        let pending = std::future::pending();
        self.send_body(request_index, body, counts, origin, pending, extras)
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
        let expected = prompt.expected.clone();
        drop(prompt);
        let header = match (&self.session_header, turn) {
            (Some(name), Some(turn)) => {
                let id = format!("{}-s{}", self.names.prefix(), turn.session);
                HeaderValue::from_str(&id)
                    .ok()
                    .map(|value| (name.clone(), value))
            }
            _ => None,
        };
        let extras = Extras {
            header,
            capture_reply: true,
            expected,
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
        let request_bytes = Some(body.len() as u64);
        let (request_id, sent_id) = self.request_ids(request_index);
        let trace = self.names.traceparent(request_index);
        let (traceparent, trace_id) = trace.unzip();
        let sent_ids = SentIds {
            id: sent_id
                .as_deref()
                .and_then(|id| HeaderValue::from_str(id).ok()),
            traceparent,
        };
        let keep = self.config.keep_replies;
        let mut state = self.stream_state(extras.capture_reply || keep);
        let mut used = ConnectionUse::default();
        let start = Instant::now();
        let cancel_point = self
            .config
            .cancel
            .and_then(|c| c.point_for(request_index, start, origin));
        if let Some(CancelPoint::Deltas(n)) = cancel_point {
            state.cancel_after_deltas = Some(n);
        }
        let mut cancelled_in_time = false;
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
                // The exchange is dropped with its connection: the server sees the disconnect.
                () = time_due(cancel_point, start) => {
                    cancelled_in_time = true;
                    Ok(ms_since(start, Instant::now()))
                }
            }
        };
        let cancelled = cancelled_in_time || state.cancelled;
        let mut record = RequestRecord {
            request_index,
            sent_request_id: sent_id.filter(|sent| *sent != request_id),
            request_id,
            trace_id,
            start_offset_ms: signed_ms(origin, start),
            planned_context_tokens: planned,
            inputs,
            request_bytes,
            ..measured_record(&state, &used)
        };
        self.settle(&mut record, outcome, cancelled, start);
        super::derive_record_fields(&mut record);
        std::mem::take(&mut state.chunk_memo).give_back();
        let reply = state.take_reply();
        if keep {
            record.reply = Some(
                reply
                    .as_ref()
                    .map(|m| m.content.clone())
                    .unwrap_or_default(),
            );
            record.finish_reason = state.finish_reason.take();
            record.expected = extras.expected.as_deref().map(str::to_string);
        }
        (record, reply)
    }

    /// A request's stream state: the API's event format, and room for the reply's text when
    /// it is to be kept.
    fn stream_state(&self, capture_reply: bool) -> StreamState {
        StreamState {
            reply: capture_reply.then(String::new),
            format: match self.config.api {
                Api::Responses => StreamFormat::Responses,
                Api::Messages => StreamFormat::Messages,
                _ => StreamFormat::Chunks,
            },
            chunk_memo: scan::StreamMemo::take(),
            ..StreamState::default()
        }
    }

    /// The record's end: its time to the end (or to its cancellation) or its error.
    fn settle(
        &self,
        record: &mut RequestRecord,
        outcome: Result<f64, Failure>,
        cancelled: bool,
        start: Instant,
    ) {
        match outcome {
            Ok(end_ms) if cancelled => {
                record.e2e_ms = end_ms;
                record.cancelled_ms = Some(end_ms);
            }
            Ok(end_ms) => record.e2e_ms = end_ms,
            Err(failure) => {
                record.e2e_ms = ms_since(start, Instant::now());
                record.error = Some(self.request_error(failure));
            }
        }
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
        if self.config.endpoint.request_id.format != RequestIdFormat::Off {
            let name = &self.config.endpoint.request_id.header;
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
    if config.endpoint.request_id.format != RequestIdFormat::Off {
        headers.insert(
            config.endpoint.request_id.header.clone(),
            HeaderValue::from_static(""),
        );
    }
    if config.trace_context == TraceContextMode::W3c {
        headers.insert(TRACEPARENT, HeaderValue::from_static(""));
    }
    headers
}

/// The record's figures that the stream and the connection measured.
fn measured_record(state: &StreamState, used: &ConnectionUse) -> RequestRecord {
    let mut record = RequestRecord {
        time_to_first_output_ms: state.first_output_ms,
        ttft_ms: state.first_content_ms,
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
        ttft_tool_ms: state.first_tool_call_ms,
        tool_call_chunks: state.tool_call_chunks,
        ..RequestRecord::default()
    };
    let chunks = state.content_chunks + state.reasoning_chunks + state.tool_call_chunks;
    if state.completion_tokens.is_some() || chunks > 0 {
        let (tokens, source) = state.output_tokens();
        record.output_tokens = Some(tokens);
        record.output_token_source = Some(source);
    }
    if let Some((tokens, source)) = state.reasoning_tokens() {
        record.reasoning_tokens = Some(tokens);
        record.reasoning_token_source = Some(source);
    }
    record.spec_decoding = state.spec_decoding.clone();
    record
}
