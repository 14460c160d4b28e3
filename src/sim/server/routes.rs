//! Routing by path and method, and the small endpoints: models, tokenize, metrics, cache
//! resets, health.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::json;

use super::encode::{Encode, encode};
use super::generation::generate;
use super::response::{Reply, error_response, json_response, read_body, unix_now_s};
use crate::sim::api::{self, Api, TokenizeRequest};
use crate::sim::generate::SimBody;
use crate::sim::state::Shared;

pub(super) async fn route(
    shared: Arc<Shared>,
    reset: Arc<AtomicBool>,
    request: Request<Incoming>,
) -> Reply {
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
        "/v1/responses" => match known(Method::POST) {
            Some(reply) => reply,
            None => generate(shared, &reset, request, Api::Responses).await,
        },
        "/v1/messages" => match known(Method::POST) {
            Some(reply) => reply,
            None => generate(shared, &reset, request, Api::Messages).await,
        },
        "/v1/embeddings" => match known(Method::POST) {
            Some(reply) => reply,
            None => encode(shared, &reset, request, Encode::Embeddings).await,
        },
        // vLLM serves both paths; llama.cpp and Jina use `/v1/rerank`.
        "/v1/rerank" | "/rerank" => match known(Method::POST) {
            Some(reply) => reply,
            None => encode(shared, &reset, request, Encode::Rerank).await,
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
            None => Ok(metrics(&shared)),
        },
        // vLLM's and SGLang's cache-reset endpoints: both just POST, empty body.
        "/reset_prefix_cache" | "/flush_cache" => match known(Method::POST) {
            Some(reply) => reply,
            None => Ok(clear_cache(&shared)),
        },
        // vLLM's version endpoint: the engine's release, for the run's provenance.
        "/version" => match known(Method::GET) {
            Some(reply) => reply,
            None => Ok(version()),
        },
        "/health" => match known(Method::GET) {
            Some(reply) => reply,
            None => Ok(Response::new(SimBody::full(Bytes::new()))),
        },
        "/sim/faults" => Ok(crate::sim::control::handle(&shared.switched, request).await),
        path => Ok(error_response(
            StatusCode::NOT_FOUND,
            &format!("no route for {path}"),
        )),
    }
}

/// The Prometheus text of the simulator's counters, and its adapters'.
fn metrics(shared: &Shared) -> Response<SimBody> {
    let mut text = shared.counters.render(&shared.settings.model);
    if let Some(adapters) = &shared.adapters {
        adapters.render(&mut text);
    }
    if let Some(power) = &shared.power {
        power.render(&mut text);
    }
    let mut response = Response::new(SimBody::full(text));
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

/// The engine's release, as vLLM's `/version` states it.
fn version() -> Response<SimBody> {
    json_response(
        StatusCode::OK,
        &json!({"version": env!("CARGO_PKG_VERSION")}),
    )
}

fn clear_cache(shared: &Shared) -> Response<SimBody> {
    let dropped = shared
        .cache
        .as_ref()
        .map_or(0, |cache| cache.lock().map_or(0, |mut cache| cache.clear()));
    json_response(StatusCode::OK, &json!({"cleared_blocks": dropped}))
}

/// The base model, then each adapter with the base as its `parent`, as vLLM lists LoRA
/// modules.
fn models(shared: &Shared) -> Response<SimBody> {
    let base = &shared.settings.model;
    let entry = |id: &str, parent: Option<&str>| {
        json!({
            "id": id,
            "object": "model",
            "created": unix_now_s(),
            "owned_by": "servebench",
            "root": id,
            "parent": parent,
            "max_model_len": shared.settings.max_model_len,
        })
    };
    let adapters = shared.adapters.iter().flat_map(|a| a.names());
    let data: Vec<_> = std::iter::once(entry(base, None))
        .chain(adapters.map(|name| entry(name, Some(base.as_str()))))
        .collect();
    json_response(StatusCode::OK, &json!({"object": "list", "data": data}))
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
        let ids: Vec<u32> = crate::sim::tokenizer::text_token_ids(content).collect();
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
