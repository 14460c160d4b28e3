//! Generation requests: the request read and checked, its output planned, faults applied, and
//! the response body (a [`Generation`]) started.

use std::io;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Request, Response, StatusCode};
use tokio::time::Instant;

use super::response::{
    Reply, echo_request_id, empty_response, error_json, error_response, json_response,
    model_not_served, read_body, sse_response, unix_now_s,
};
use crate::hash::is_uuid;
use crate::sim::answers;
use crate::sim::api::{self, Api, GenerationRequest};
use crate::sim::generate::{GenSpec, Generation, MidFault, SimBody, ToolPlan};
use crate::sim::rng::{STREAM_LENGTH, STREAM_STRUCTURED, STREAM_TOOLS, SimRng};
use crate::sim::settings::{DEFAULT_RETRY_AFTER_S, DEFAULT_STALL_S, Settings};
use crate::sim::state::Shared;
use crate::sim::{SimFaultKind, faults};

/// The output lengths and finish reason a request gets.
struct OutputPlan {
    reasoning_tokens: u64,
    content_tokens: u64,
    finish_reason: &'static str,
    /// Structured output, or a generated set's answer: the reply's text in token-sized pieces.
    structured: Option<Vec<String>>,
    /// The reply is held to a `response_format`: each token costs the grammar's time.
    grammar: bool,
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
        Api::Chat | Api::Responses | Api::Messages => {
            api::reasoning_budget(request, settings.reasoning_tokens)
        }
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
        structured: None,
        grammar: false,
    })
}

/// The tool a chat request's reply calls, if any: `tool_choice` `required` (or a named
/// function) always calls, `none` never, `auto` (or unset) a seeded `tool_call_fraction` of
/// requests, except right after a tool's result, which is answered in text.
fn plan_tool_call(settings: &Settings, request: &GenerationRequest, seq: u64) -> Option<ToolPlan> {
    let tools: Vec<&api::FunctionDef> = request
        .tools
        .iter()
        .flatten()
        .filter_map(|t| t.function.as_ref())
        .collect();
    if tools.is_empty() {
        return None;
    }
    let mut rng = SimRng::new(settings.seed, seq, STREAM_TOOLS);
    let named = |name: &str| tools.iter().find(|t| t.name == name).copied();
    let chosen = match &request.tool_choice {
        Some(serde_json::Value::String(choice)) if choice == "none" => return None,
        Some(serde_json::Value::String(choice)) if choice == "required" => None,
        Some(serde_json::Value::Object(choice)) => {
            let name = choice
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(|n| n.as_str())?;
            Some(named(name)?)
        }
        _ => {
            let after_result = request
                .messages
                .as_ref()
                .and_then(|m| m.last())
                .is_some_and(|m| m.role.as_deref() == Some("tool"));
            if after_result || rng.next_f64() >= settings.tool_call_fraction {
                return None;
            }
            None
        }
    };
    let tool = match chosen {
        Some(tool) => tool,
        None => tools[rng.range_inclusive(0, tools.len() as u64 - 1) as usize],
    };
    // The first declared parameter takes the generated words.
    let key = tool
        .parameters
        .as_ref()
        .and_then(|p| p.get("properties"))
        .and_then(|p| p.as_object())
        .and_then(|p| p.keys().next().cloned())
        .unwrap_or_else(|| "input".to_string());
    Some(ToolPlan {
        id: format!(
            "call_{:016x}",
            crate::sim::rng::mix64(settings.seed ^ seq ^ 0x7001)
        ),
        name: tool.name.clone(),
        key,
    })
}

pub(super) async fn generate(
    shared: Arc<Shared>,
    reset: &AtomicBool,
    request: Request<Incoming>,
    api: Api,
) -> Reply {
    let received = Instant::now();
    let request_id = match checked_request_id(&shared, reset, &request) {
        Ok(id) => id,
        Err(reply) => return *reply,
    };
    let seq = shared.next_seq.fetch_add(1, Relaxed) + 1;
    shared.counters.requests_total.fetch_add(1, Relaxed);
    let headers: Option<Vec<(String, String)>> = shared.requests.as_ref().map(|_| {
        request
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
            .collect()
    });
    let (parsed, prompt_ids) = match read_request(request, api, &shared.settings).await {
        Ok(read) => read,
        Err(response) => return Ok(response),
    };
    if let Some(headers) = headers {
        log_request(&shared, seq, headers, &parsed);
    }
    // A request for an adapter that is not resident waits for its load, as on vLLM.
    let adapter = adapter_loaded(&shared, &parsed).await;
    let prompt_tokens = prompt_ids.len() as u64;
    let settings = &shared.settings;
    let (output, tool_call) = match plan_reply(settings, &parsed, api, prompt_tokens, seq) {
        Ok(planned) => planned,
        Err(message) => return Ok(error_response(StatusCode::BAD_REQUEST, &message)),
    };
    let stream = parsed.stream.unwrap_or(false);
    let total_tokens = output.reasoning_tokens + output.content_tokens;
    let (mid_fault, missing_done) = match inject_fault(
        &shared,
        reset,
        seq,
        request_id.as_deref(),
        (stream, api),
        total_tokens,
    ) {
        Injected::Reply(reply) => return reply,
        Injected::InBody {
            mid_fault,
            missing_done,
        } => (mid_fault, missing_done),
    };
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
        adapter,
        received,
        created_unix_s: unix_now_s(),
        prompt_ids: if keep_ids { prompt_ids } else { Vec::new() },
        cache_salt: parsed.cache_salt.clone(),
        prompt_tokens,
        reasoning_tokens: output.reasoning_tokens,
        content_tokens: output.content_tokens,
        finish_reason: output.finish_reason,
        structured: output.structured,
        grammar: output.grammar,
        tool_call,
        fault: mid_fault,
        missing_done,
    };
    let body = SimBody::Generation(Box::new(Generation::new(shared.clone(), spec)));
    respond(body, stream, request_id.as_deref()).await
}

/// The request's `x-request-id`; or the reply instead, when the id is not the UUID the
/// simulator requires or names a request that was reset before its headers.
fn checked_request_id(
    shared: &Shared,
    reset: &AtomicBool,
    request: &Request<Incoming>,
) -> Result<Option<String>, Box<Reply>> {
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    if shared.settings.require_uuid_request_id
        && request_id.as_deref().is_some_and(|id| !is_uuid(id))
    {
        return Err(Box::new(Ok(empty_response(StatusCode::BAD_REQUEST))));
    }
    if let Some(id) = &request_id
        && was_reset(shared, id)
    {
        reset.store(true, Relaxed);
        return Err(Box::new(Err(io::Error::new(
            io::ErrorKind::ConnectionReset,
            "simulated reset before headers, again",
        ))));
    }
    Ok(request_id)
}

/// The request's output and, for chat, the tool its reply calls.
fn plan_reply(
    settings: &Settings,
    request: &GenerationRequest,
    api: Api,
    prompt_tokens: u64,
    seq: u64,
) -> Result<(OutputPlan, Option<ToolPlan>), String> {
    let mut output = plan_output(settings, request, api, prompt_tokens, seq)?;
    let tool_call = match api {
        Api::Chat => plan_tool_call(settings, request, seq),
        Api::Completions | Api::Responses | Api::Messages => None,
    };
    if tool_call.is_some() {
        output.finish_reason = "tool_calls";
    } else if let Some(format) = request
        .response_format
        .as_ref()
        .filter(|_| api != Api::Messages)
    {
        plan_structured(settings, request, format, seq, &mut output);
    } else if let Some(right) = last_prompt_text(request).and_then(|p| answers::answer(&p)) {
        // A generated scored set's prompt: its answer, right for a seeded `correct_share`.
        let mut rng = SimRng::new(settings.seed, seq, STREAM_STRUCTURED);
        let text = if rng.next_f64() < settings.correct_share {
            right
        } else {
            answers::wrong(&right)
        };
        set_fixed_reply(
            request,
            crate::sim::generate::structured::pieces(&text),
            &mut output,
        );
    }
    Ok((output, tool_call))
}

/// The text of the prompt's last user message (chat, Responses, Messages) or a completion's
/// prompt.
fn last_prompt_text(request: &GenerationRequest) -> Option<String> {
    if let Some(messages) = &request.messages {
        return messages
            .iter()
            .rev()
            .find(|m| m.role.as_deref() == Some("user"))
            .map(api::ChatMessage::text);
    }
    match request.prompt.as_ref()? {
        api::PromptInput::Text(text) => Some(text.clone()),
        _ => None,
    }
}

/// A reply of fixed text, one token a piece, cut at `max_tokens` as any reply is.
fn set_fixed_reply(request: &GenerationRequest, mut pieces: Vec<String>, output: &mut OutputPlan) {
    let cap = request
        .max_completion_tokens
        .or(request.max_tokens)
        .unwrap_or(u64::MAX);
    let room = cap.saturating_sub(output.reasoning_tokens).max(1);
    if pieces.len() as u64 > room {
        pieces.truncate(room as usize);
        output.finish_reason = "length";
    } else {
        output.finish_reason = "stop";
    }
    output.content_tokens = pieces.len() as u64;
    output.structured = Some(pieces);
}

/// A structured-output reply: JSON from the request's schema (a seeded `invalid_share`
/// broken), as many tokens as it has pieces, cut at `max_tokens` as any reply is.
fn plan_structured(
    settings: &Settings,
    request: &GenerationRequest,
    format: &serde_json::Value,
    seq: u64,
    output: &mut OutputPlan,
) {
    use crate::sim::generate::structured::{pieces, reply_text, schema_of};
    let mut rng = SimRng::new(settings.seed, seq, STREAM_STRUCTURED);
    let broken = rng.next_f64() < settings.invalid_share;
    let pieces = pieces(&reply_text(schema_of(format), &mut rng, broken));
    set_fixed_reply(request, pieces, output);
    output.grammar = true;
}

/// The adapter the request named, once it is resident: a request for one that is not waits
/// for its load, as on vLLM.
async fn adapter_loaded(shared: &Shared, parsed: &GenerationRequest) -> Option<String> {
    let adapter_ready = shared
        .adapters
        .as_ref()
        .and_then(|pool| pool.ready_at(parsed.model.as_deref()?, Instant::now()));
    let adapter = adapter_ready.and(parsed.model.clone());
    if let Some(ready) = adapter_ready {
        tokio::time::sleep_until(ready).await;
    }
    adapter
}

/// The request as `record_requests` keeps it: its headers, its history's messages, tool
/// calls and tool results (up to the log's limit).
fn log_request(
    shared: &Shared,
    seq: u64,
    headers: Vec<(String, String)>,
    parsed: &GenerationRequest,
) {
    let Some(log) = &shared.requests else {
        return;
    };
    let history = parsed.messages.iter().flatten();
    let messages = history
        .clone()
        .map(|m| (m.role.clone().unwrap_or_default(), m.text()))
        .collect();
    let history_tool_calls = history
        .clone()
        .flat_map(|m| m.tool_calls.iter().flatten())
        .map(|call| call.id.clone().unwrap_or_default())
        .collect();
    let tool_results = history
        .filter(|m| m.role.as_deref() == Some("tool"))
        .map(|m| m.tool_call_id.clone().unwrap_or_default())
        .collect();
    let mut log = log.lock().unwrap_or_else(|poison| poison.into_inner());
    if log.len() < crate::sim::state::MAX_RECORDED_REQUESTS {
        log.push(crate::sim::SeenRequest {
            seq,
            headers,
            messages,
            model: parsed.model.clone(),
            reply: None,
            tools: parsed.tools.as_ref().map_or(0, Vec::len),
            history_tool_calls,
            tool_results,
            reply_tool_call: None,
        });
    }
}

/// A resend of a request that was reset before its headers: it is reset again.
fn was_reset(shared: &Shared, request_id: &str) -> bool {
    shared
        .reset_ids
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .contains(request_id)
}

/// The parsed body and its prompt token ids, or the 400 response for a bad request (404 for
/// a model not served).
async fn read_request(
    request: Request<Incoming>,
    api: Api,
    settings: &Settings,
) -> Result<(GenerationRequest, Vec<u32>), Response<SimBody>> {
    let body = read_body(request).await?;
    let invalid = |err: serde_json::Error| {
        let message = format!("invalid JSON body: {err}");
        error_response(StatusCode::BAD_REQUEST, &message)
    };
    let parsed: GenerationRequest = match api {
        Api::Responses => serde_json::from_slice::<api::ResponsesRequest>(&body)
            .map_err(invalid)?
            .into_generation(),
        Api::Messages => serde_json::from_slice::<api::MessagesRequest>(&body)
            .map_err(invalid)?
            .into_generation(),
        Api::Chat | Api::Completions => serde_json::from_slice(&body).map_err(invalid)?,
    };
    if let Some(response) = model_not_served(settings, parsed.model.as_deref()) {
        return Err(response);
    }
    let prompt_ids = match api {
        Api::Responses => match parsed.messages.as_deref() {
            Some(messages) if !messages.is_empty() => api::chat_ids(messages, true),
            _ => {
                let message = "`input` must be a non-empty string or list of messages";
                return Err(error_response(StatusCode::BAD_REQUEST, message));
            }
        },
        Api::Chat | Api::Messages => match parsed.messages.as_deref() {
            Some(messages) if !messages.is_empty() => {
                let mut ids = api::chat_ids(messages, true);
                match crate::sim::images::image_ids(messages) {
                    Ok(images) => ids.extend(images),
                    Err(message) => return Err(error_response(StatusCode::BAD_REQUEST, &message)),
                }
                ids
            }
            _ => {
                let message = "`messages` must be a non-empty list";
                return Err(error_response(StatusCode::BAD_REQUEST, message));
            }
        },
        Api::Completions => match parsed.prompt.as_ref().map(api::prompt_ids) {
            Some(Ok(ids)) if !ids.is_empty() => ids,
            Some(Err(message)) => return Err(error_response(StatusCode::BAD_REQUEST, &message)),
            _ => {
                let message = "`prompt` must be a non-empty string";
                return Err(error_response(StatusCode::BAD_REQUEST, message));
            }
        },
    };
    Ok((parsed, prompt_ids))
}

/// What a drawn fault does: answer in place of the generation, or shape its body.
pub(super) enum Injected {
    Reply(Reply),
    InBody {
        mid_fault: Option<(MidFault, u64)>,
        missing_done: bool,
    },
}

pub(super) fn inject_fault(
    shared: &Shared,
    reset: &AtomicBool,
    seq: u64,
    request_id: Option<&str>,
    (stream, api): (bool, Api),
    total_tokens: u64,
) -> Injected {
    let settings = &shared.settings;
    // Fixed rules first, then the ones switched on over HTTP.
    let switched;
    let fault = match faults::select(&settings.faults, settings.seed, seq) {
        Some(fault) => fault,
        None => {
            switched = shared.switched.select(settings.seed, seq);
            match &switched {
                Some(fault) => fault,
                None => {
                    return Injected::InBody {
                        mid_fault: None,
                        missing_done: false,
                    };
                }
            }
        }
    };
    let after_tokens = fault.after_tokens.map_or(total_tokens / 2, u64::from);
    let seconds = fault.seconds;
    let counters = &shared.counters;
    let (mid_fault, missing_done) = match fault.kind {
        SimFaultKind::Status => {
            counters.faults_injected.fetch_add(1, Relaxed);
            let status = fault
                .status
                .and_then(|code| StatusCode::from_u16(code).ok())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return Injected::Reply(Ok(error_response(status, "simulated server error")));
        }
        SimFaultKind::RateLimit => {
            counters.faults_injected.fetch_add(1, Relaxed);
            let retry_after_s = seconds.unwrap_or(DEFAULT_RETRY_AFTER_S).ceil().min(1e9) as u64;
            let mut response =
                error_response(StatusCode::TOO_MANY_REQUESTS, "simulated rate limit");
            response
                .headers_mut()
                .insert("retry-after", HeaderValue::from(retry_after_s));
            return Injected::Reply(Ok(response));
        }
        SimFaultKind::ResetBeforeHeaders => {
            counters.faults_injected.fetch_add(1, Relaxed);
            if let Some(id) = request_id {
                let mut ids = shared.reset_ids.lock().unwrap_or_else(|p| p.into_inner());
                ids.insert(id.to_string());
            }
            reset.store(true, Relaxed);
            return Injected::Reply(Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "simulated reset before headers",
            )));
        }
        SimFaultKind::ErrorObject => {
            counters.faults_injected.fetch_add(1, Relaxed);
            return Injected::Reply(Ok(error_object(stream, api, request_id)));
        }
        SimFaultKind::DisconnectMidStream => (Some((MidFault::Disconnect, after_tokens)), false),
        SimFaultKind::Stall => {
            let stall = crate::sim::generate::seconds(seconds.unwrap_or(DEFAULT_STALL_S));
            (Some((MidFault::Stall(stall), after_tokens)), false)
        }
        SimFaultKind::MalformedEvent => (Some((MidFault::Malformed, after_tokens)), false),
        SimFaultKind::MissingDone => {
            if stream {
                counters.faults_injected.fetch_add(1, Relaxed);
            }
            (None, stream)
        }
    };
    Injected::InBody {
        mid_fault,
        missing_done,
    }
}

/// An error object inside a 200 response, as a JSON body or a one-event stream (the
/// Responses API's `error` event).
fn error_object(stream: bool, api: Api, request_id: Option<&str>) -> Response<SimBody> {
    let message = "simulated error inside a 200 response";
    let error = error_json(StatusCode::INTERNAL_SERVER_ERROR, message);
    if !stream {
        return json_response(StatusCode::OK, &error);
    }
    let text = match api {
        Api::Responses => {
            let event = serde_json::json!({"type": "error", "code": "server_error",
                "message": message, "param": null});
            format!("event: error\ndata: {event}\n\n")
        }
        Api::Messages => {
            let event = serde_json::json!({"type": "error",
                "error": {"type": "api_error", "message": message}});
            format!("event: error\ndata: {event}\n\n")
        }
        Api::Chat | Api::Completions => format!("data: {error}\n\ndata: [DONE]\n\n"),
    };
    sse_response(SimBody::full(text), request_id)
}

/// A stream is answered at once; a JSON body only once the whole generation has run.
async fn respond(body: SimBody, stream: bool, request_id: Option<&str>) -> Reply {
    if stream {
        return Ok(sse_response(body, request_id));
    }
    // A disconnect fault surfaces here as an error: hyper closes without a response.
    let bytes = body.collect().await?.to_bytes();
    let mut response = Response::new(SimBody::full(bytes));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    echo_request_id(&mut response, request_id);
    Ok(response)
}
