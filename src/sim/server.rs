//! The simulator's HTTP server: accept loop, routing, request handling and the live handle.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use super::api::{self, Api, GenerationRequest, TokenizeRequest};
use super::cache::PrefixCache;
use super::generate::{GenSpec, Generation, MidFault, SimBody};
use super::keepalive::{Activity, Busy, Tracked};
use super::prometheus::Counters;
use super::rng::{STREAM_LENGTH, SimRng};
use super::settings::{DEFAULT_RETRY_AFTER_S, DEFAULT_STALL_S, Settings};
use super::state::{SendTimes, Shared};
use super::{SimConfig, SimFaultKind, faults};

/// Request bodies above this size are refused.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// A snapshot of the simulator's live counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SimStats {
    pub running: u64,
    pub waiting: u64,
    /// Generation requests received and not yet finished (waiting + running + tail).
    pub in_flight: u64,
    pub max_running_observed: u64,
    pub max_in_flight_observed: u64,
    /// Generation requests received (chat + completions), faulted ones included.
    pub requests_total: u64,
    pub requests_finished: u64,
    pub requests_aborted: u64,
    pub prompt_tokens_total: u64,
    pub generation_tokens_total: u64,
    pub prefix_cache_queries_tokens: u64,
    pub prefix_cache_hits_tokens: u64,
    pub prefix_cache_evicted_blocks: u64,
    pub preemptions: u64,
    pub faults_injected: u64,
}

/// A running simulator; dropping the handle does not stop it, `shutdown` does.
pub struct SimHandle {
    shared: Arc<Shared>,
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl SimHandle {
    /// Stop accepting, close connections, and wait for the server task to end.
    pub async fn shutdown(self) {
        let _ = self.shared.stop.send(true);
        let _ = self.task.await;
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The instant the simulator started; offsets of [`SendTimes`] are taken from it.
    pub fn started(&self) -> std::time::Instant {
        self.shared.started.into_std()
    }

    pub fn stats(&self) -> SimStats {
        let c = &self.shared.counters;
        SimStats {
            running: c.running.load(Relaxed),
            waiting: c.waiting.load(Relaxed),
            in_flight: c.in_flight.load(Relaxed),
            max_running_observed: c.max_running.load(Relaxed),
            max_in_flight_observed: c.max_in_flight.load(Relaxed),
            requests_total: c.requests_total.load(Relaxed),
            requests_finished: c.finished_stop.load(Relaxed) + c.finished_length.load(Relaxed),
            requests_aborted: c.finished_abort.load(Relaxed),
            prompt_tokens_total: c.prompt_tokens.load(Relaxed),
            generation_tokens_total: c.generation_tokens.load(Relaxed),
            prefix_cache_queries_tokens: c.prefix_queries.load(Relaxed),
            prefix_cache_hits_tokens: c.prefix_hits.load(Relaxed),
            prefix_cache_evicted_blocks: c.evicted_blocks.load(Relaxed),
            preemptions: c.preemptions.load(Relaxed),
            faults_injected: c.faults_injected.load(Relaxed),
        }
    }

    /// Restart the `max_*_observed` peaks from the current values (e.g. between phases).
    pub fn reset_peaks(&self) {
        let c = &self.shared.counters;
        c.max_running.store(c.running.load(Relaxed), Relaxed);
        c.max_in_flight.store(c.in_flight.load(Relaxed), Relaxed);
    }

    /// Send timestamps of every finished request so far (empty unless `record_timestamps`).
    pub fn timestamps(&self) -> Vec<SendTimes> {
        match &self.shared.timestamps {
            Some(log) => log
                .lock()
                .unwrap_or_else(|poison| poison.into_inner())
                .clone(),
            None => Vec::new(),
        }
    }

    /// Send timestamps of the request with this `x-request-id`.
    pub fn timestamps_for(&self, request_id: &str) -> Option<SendTimes> {
        let log = self.shared.timestamps.as_ref()?;
        let log = log.lock().unwrap_or_else(|poison| poison.into_inner());
        log.iter()
            .rev()
            .find(|t| t.request_id.as_deref() == Some(request_id))
            .cloned()
    }
}

/// Start a simulator on `127.0.0.1:0`.
pub async fn serve(config: SimConfig) -> io::Result<(SocketAddr, SimHandle)> {
    serve_on(config, SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await
}

/// Start a simulator on `addr`, serving in the background on the current tokio runtime.
pub async fn serve_on(config: SimConfig, addr: SocketAddr) -> io::Result<(SocketAddr, SimHandle)> {
    let settings = Settings::resolve(&config)
        .map_err(|err| io::Error::new(io::ErrorKind::InvalidInput, err.to_string()))?;
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let now = Instant::now();
    let (stop, stop_rx) = watch::channel(false);
    let shared = Arc::new(Shared {
        slots: Arc::new(Semaphore::new(settings.max_running as usize)),
        cache: settings
            .prefix_cache
            .as_ref()
            .map(|c| Mutex::new(PrefixCache::new(c.capacity_tokens, c.block_tokens))),
        timestamps: settings.record_timestamps.then(|| Mutex::new(Vec::new())),
        settings,
        counters: Counters::new(),
        started: now,
        next_seq: AtomicU64::new(0),
        prefill_busy_until: Mutex::new(now),
        reset_ids: Mutex::new(Default::default()),
        stop,
    });
    let task = tokio::spawn(accept_loop(listener, shared.clone(), stop_rx));
    Ok((
        local,
        SimHandle {
            shared,
            addr: local,
            task,
        },
    ))
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Small SSE writes must not wait on Nagle + delayed ACK.
                    let _ = stream.set_nodelay(true);
                    connections.spawn(serve_connection(stream, shared.clone()));
                }
                // e.g. out of file descriptors: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    connections.shutdown().await;
}

/// The accepted socket; when `reset` is set, closing it sends RST instead of FIN.
struct ConnIo {
    inner: TcpStream,
    reset: Arc<AtomicBool>,
}

impl Drop for ConnIo {
    fn drop(&mut self) {
        if self.reset.load(Relaxed) {
            let _ = self.inner.set_zero_linger();
        }
    }
}

impl AsyncRead for ConnIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for ConnIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let reset = Arc::new(AtomicBool::new(false));
    let io = TokioIo::new(ConnIo {
        inner: stream,
        reset: reset.clone(),
    });
    let activity = Arc::new(Activity::new());
    let service = {
        let (shared, activity) = (shared.clone(), activity.clone());
        service_fn(move |request| {
            let busy = Busy::start(activity.clone());
            let (shared, reset) = (shared.clone(), reset.clone());
            async move {
                let mut response = route(shared.clone(), reset, request).await?;
                if shared.settings.close_after_response {
                    // What llama.cpp's server announces, though it closes after each response.
                    response
                        .headers_mut()
                        .insert("keep-alive", HeaderValue::from_static("timeout=5, max=100"));
                }
                Ok::<_, io::Error>(response.map(|body| Tracked { body, _busy: busy }))
            }
        })
    };
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        // Idle keep-alive connections stay open unless `keep_alive_timeout` says otherwise: a
        // benchmark may pause between phases.
        .header_read_timeout(None)
        .keep_alive(true)
        .serve_connection(io, service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        () = activity.close_due(&shared.settings) => {}
    }
    // Unannounced: no `Connection: close` header, the socket just closes once idle. The
    // grace lets a response's last bytes go out; a connection still idle after it is dropped.
    connection.as_mut().graceful_shutdown();
    let flushed = tokio::time::timeout(CLOSE_GRACE, connection.as_mut()).await;
    if flushed.is_err() && activity.is_busy() {
        // A request that slipped in before the close is served to its end.
        let _ = connection.await;
    }
}

/// How long a connection being closed may take to flush before its socket is dropped.
const CLOSE_GRACE: Duration = Duration::from_millis(200);

type Reply = Result<Response<SimBody>, io::Error>;

fn json_response(status: StatusCode, value: &serde_json::Value) -> Response<SimBody> {
    let mut response = Response::new(SimBody::full(value.to_string()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn error_json(status: StatusCode, message: &str) -> serde_json::Value {
    let kind = match status.as_u16() {
        400 => "BadRequestError",
        404 => "NotFoundError",
        405 => "MethodNotAllowed",
        429 => "RateLimitError",
        503 => "ServiceUnavailableError",
        _ => "InternalServerError",
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": status.as_u16()}})
}

fn error_response(status: StatusCode, message: &str) -> Response<SimBody> {
    json_response(status, &error_json(status, message))
}

async fn route(shared: Arc<Shared>, reset: Arc<AtomicBool>, request: Request<Incoming>) -> Reply {
    let method = request.method().clone();
    let known = |allowed: Method| {
        if method == allowed {
            None
        } else {
            Some(Ok(error_response(
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("use {allowed} for {}", request.uri().path()),
            )))
        }
    };
    match request.uri().path() {
        "/v1/chat/completions" => match known(Method::POST) {
            Some(reply) => reply,
            None => generate(shared, &reset, request, Api::Chat).await,
        },
        "/v1/completions" => match known(Method::POST) {
            Some(reply) => reply,
            None => generate(shared, &reset, request, Api::Completions).await,
        },
        "/tokenize" => match known(Method::POST) {
            Some(reply) => reply,
            None => Ok(tokenize(&shared, request).await),
        },
        "/v1/models" => match known(Method::GET) {
            Some(reply) => reply,
            None => Ok(models(&shared)),
        },
        "/metrics" => match known(Method::GET) {
            Some(reply) => reply,
            None => {
                let text = shared.counters.render(&shared.settings.model);
                let mut response = Response::new(SimBody::full(text));
                response.headers_mut().insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
                );
                Ok(response)
            }
        },
        // vLLM's and SGLang's cache-reset endpoints: both just POST, empty body.
        "/reset_prefix_cache" | "/flush_cache" => match known(Method::POST) {
            Some(reply) => reply,
            None => Ok(clear_cache(&shared)),
        },
        "/health" => match known(Method::GET) {
            Some(reply) => reply,
            None => Ok(Response::new(SimBody::full(Bytes::new()))),
        },
        path => Ok(error_response(
            StatusCode::NOT_FOUND,
            &format!("no route for {path}"),
        )),
    }
}

fn clear_cache(shared: &Shared) -> Response<SimBody> {
    let dropped = shared
        .cache
        .as_ref()
        .map_or(0, |cache| cache.lock().map_or(0, |mut cache| cache.clear()));
    json_response(StatusCode::OK, &json!({"cleared_blocks": dropped}))
}

fn models(shared: &Shared) -> Response<SimBody> {
    json_response(
        StatusCode::OK,
        &json!({"object": "list", "data": [{
            "id": shared.settings.model,
            "object": "model",
            "created": unix_now_s(),
            "owned_by": "servebench",
            "root": shared.settings.model,
            "max_model_len": shared.settings.max_model_len,
        }]}),
    )
}

fn unix_now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

async fn read_body(request: Request<Incoming>) -> Result<Bytes, Response<SimBody>> {
    match Limited::new(request.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) => Err(error_response(
            StatusCode::BAD_REQUEST,
            &format!("could not read the request body: {err}"),
        )),
    }
}

async fn tokenize(shared: &Shared, request: Request<Incoming>) -> Response<SimBody> {
    let body = match read_body(request).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let parsed: TokenizeRequest = match serde_json::from_slice(&body) {
        Ok(parsed) => parsed,
        Err(err) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                &format!("invalid JSON body: {err}"),
            );
        }
    };
    if let Some(content) = &parsed.content {
        let ids: Vec<u32> = super::tokenizer::text_token_ids(content).collect();
        return json_response(StatusCode::OK, &json!({ "tokens": ids }));
    }
    let ids = if let Some(messages) = &parsed.messages {
        api::chat_ids(messages, parsed.add_generation_prompt.unwrap_or(true))
    } else if let Some(prompt) = &parsed.prompt {
        match api::prompt_ids(prompt) {
            Ok(ids) => ids,
            Err(message) => return error_response(StatusCode::BAD_REQUEST, &message),
        }
    } else {
        return error_response(
            StatusCode::BAD_REQUEST,
            "send `prompt` or `messages` (vLLM) or `content` (llama.cpp)",
        );
    };
    json_response(
        StatusCode::OK,
        &json!({
            "count": ids.len(),
            "max_model_len": shared.settings.max_model_len,
            "tokens": ids,
            "token_strs": null,
        }),
    )
}

/// The output lengths and finish reason a request gets.
struct OutputPlan {
    reasoning_tokens: u64,
    content_tokens: u64,
    finish_reason: &'static str,
}

fn plan_output(
    settings: &Settings,
    request: &GenerationRequest,
    api: Api,
    prompt_tokens: u64,
    seq: u64,
) -> Result<OutputPlan, String> {
    if request.n.is_some_and(|n| n != 1) {
        return Err("the simulator serves only `n: 1`".to_string());
    }
    if prompt_tokens >= settings.max_model_len {
        return Err(format!(
            "This model's maximum context length is {} tokens. However, your request has {} input tokens.",
            settings.max_model_len, prompt_tokens
        ));
    }
    let room = settings.max_model_len - prompt_tokens;
    let cap = request
        .max_completion_tokens
        .or(request.max_tokens)
        .unwrap_or(room);
    if cap == 0 {
        return Err("max_tokens must be at least 1".to_string());
    }
    if cap > room {
        return Err(format!(
            "This model's maximum context length is {} tokens. However, you requested {} tokens ({} in the messages, {} in the completion).",
            settings.max_model_len,
            prompt_tokens + cap,
            prompt_tokens,
            cap
        ));
    }
    let min_tokens = request.min_tokens.unwrap_or(0);
    if min_tokens > cap {
        return Err(format!(
            "min_tokens ({min_tokens}) must be less than or equal to max_tokens ({cap})"
        ));
    }
    let budget = match api {
        Api::Chat => api::reasoning_budget(request, settings.reasoning_tokens),
        Api::Completions => 0,
    };
    let (total, finish_reason) = if request.ignore_eos.unwrap_or(false) {
        (cap, "length")
    } else {
        let mean = u64::from(settings.mean_output_tokens);
        let natural = SimRng::new(settings.seed, seq, STREAM_LENGTH)
            .range_inclusive(mean.div_ceil(2), mean + mean / 2)
            .max(1);
        let wanted = (budget + natural).max(min_tokens);
        if wanted > cap {
            (cap, "length")
        } else {
            (wanted, "stop")
        }
    };
    let reasoning_tokens = budget.min(total);
    Ok(OutputPlan {
        reasoning_tokens,
        content_tokens: total - reasoning_tokens,
        finish_reason,
    })
}

async fn generate(
    shared: Arc<Shared>,
    reset: &AtomicBool,
    request: Request<Incoming>,
    api: Api,
) -> Reply {
    let received = Instant::now();
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    if let Some(id) = &request_id {
        let resent = shared
            .reset_ids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(id);
        if resent {
            reset.store(true, Relaxed);
            return Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "simulated reset before headers, again",
            ));
        }
    }
    let seq = shared.next_seq.fetch_add(1, Relaxed) + 1;
    shared.counters.requests_total.fetch_add(1, Relaxed);
    let body = match read_body(request).await {
        Ok(body) => body,
        Err(response) => return Ok(response),
    };
    let parsed: GenerationRequest = match serde_json::from_slice(&body) {
        Ok(parsed) => parsed,
        Err(err) => {
            let message = format!("invalid JSON body: {err}");
            return Ok(error_response(StatusCode::BAD_REQUEST, &message));
        }
    };
    let prompt_ids = match api {
        Api::Chat => match parsed.messages.as_deref() {
            Some(messages) if !messages.is_empty() => api::chat_ids(messages, true),
            _ => {
                let message = "`messages` must be a non-empty list";
                return Ok(error_response(StatusCode::BAD_REQUEST, message));
            }
        },
        Api::Completions => match parsed.prompt.as_ref().map(api::prompt_ids) {
            Some(Ok(ids)) if !ids.is_empty() => ids,
            Some(Err(message)) => return Ok(error_response(StatusCode::BAD_REQUEST, &message)),
            _ => {
                let message = "`prompt` must be a non-empty string";
                return Ok(error_response(StatusCode::BAD_REQUEST, message));
            }
        },
    };
    let prompt_tokens = prompt_ids.len() as u64;
    let settings = &shared.settings;
    let output = match plan_output(settings, &parsed, api, prompt_tokens, seq) {
        Ok(output) => output,
        Err(message) => return Ok(error_response(StatusCode::BAD_REQUEST, &message)),
    };
    let stream = parsed.stream.unwrap_or(false);
    let total_tokens = output.reasoning_tokens + output.content_tokens;
    let mut mid_fault = None;
    let mut missing_done = false;
    if let Some(fault) = faults::select(&settings.faults, settings.seed, seq) {
        let after_tokens = fault.after_tokens.map_or(total_tokens / 2, u64::from);
        let seconds = fault.seconds;
        let counters = &shared.counters;
        match fault.kind {
            SimFaultKind::Status => {
                counters.faults_injected.fetch_add(1, Relaxed);
                let status = fault
                    .status
                    .and_then(|code| StatusCode::from_u16(code).ok())
                    .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                return Ok(error_response(status, "simulated server error"));
            }
            SimFaultKind::RateLimit => {
                counters.faults_injected.fetch_add(1, Relaxed);
                let retry_after_s = seconds.unwrap_or(DEFAULT_RETRY_AFTER_S).ceil().min(1e9) as u64;
                let mut response =
                    error_response(StatusCode::TOO_MANY_REQUESTS, "simulated rate limit");
                response
                    .headers_mut()
                    .insert("retry-after", HeaderValue::from(retry_after_s));
                return Ok(response);
            }
            SimFaultKind::ResetBeforeHeaders => {
                counters.faults_injected.fetch_add(1, Relaxed);
                if let Some(id) = &request_id {
                    let mut ids = shared.reset_ids.lock().unwrap_or_else(|p| p.into_inner());
                    ids.insert(id.clone());
                }
                reset.store(true, Relaxed);
                return Err(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "simulated reset before headers",
                ));
            }
            SimFaultKind::ErrorObject => {
                counters.faults_injected.fetch_add(1, Relaxed);
                let error = error_json(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "simulated error inside a 200 response",
                );
                if !stream {
                    return Ok(json_response(StatusCode::OK, &error));
                }
                let text = format!("data: {error}\n\ndata: [DONE]\n\n");
                return Ok(sse_response(SimBody::full(text), request_id.as_deref()));
            }
            SimFaultKind::DisconnectMidStream => {
                mid_fault = Some((MidFault::Disconnect, after_tokens));
            }
            SimFaultKind::Stall => {
                let stall = super::generate::seconds(seconds.unwrap_or(DEFAULT_STALL_S));
                mid_fault = Some((MidFault::Stall(stall), after_tokens));
            }
            SimFaultKind::MalformedEvent => {
                mid_fault = Some((MidFault::Malformed, after_tokens));
            }
            SimFaultKind::MissingDone => {
                if stream {
                    counters.faults_injected.fetch_add(1, Relaxed);
                    missing_done = true;
                }
            }
        }
    }
    let keep_ids = settings.prefix_cache.is_some();
    let spec = GenSpec {
        api,
        stream,
        include_usage: parsed
            .stream_options
            .as_ref()
            .and_then(|options| options.include_usage)
            .unwrap_or(false),
        seq,
        request_id: request_id.clone(),
        received,
        created_unix_s: unix_now_s(),
        prompt_ids: if keep_ids { prompt_ids } else { Vec::new() },
        prompt_tokens,
        reasoning_tokens: output.reasoning_tokens,
        content_tokens: output.content_tokens,
        finish_reason: output.finish_reason,
        fault: mid_fault,
        missing_done,
    };
    let body = SimBody::Generation(Box::new(Generation::new(shared.clone(), spec)));
    if stream {
        return Ok(sse_response(body, request_id.as_deref()));
    }
    // A disconnect fault surfaces here as an error: hyper closes without a response.
    let bytes = body.collect().await?.to_bytes();
    let mut response = Response::new(SimBody::full(bytes));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    echo_request_id(&mut response, request_id.as_deref());
    Ok(response)
}

fn echo_request_id(response: &mut Response<SimBody>, request_id: Option<&str>) {
    if let Some(value) = request_id.and_then(|id| HeaderValue::from_str(id).ok()) {
        response.headers_mut().insert("x-request-id", value);
    }
}

fn sse_response(body: SimBody, request_id: Option<&str>) -> Response<SimBody> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    echo_request_id(&mut response, request_id);
    response
}
