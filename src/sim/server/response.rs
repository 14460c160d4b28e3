//! Response building blocks shared by the routes: JSON and error bodies, SSE headers, the
//! request body read with a size cap.

use std::io;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde_json::json;

use crate::sim::generate::SimBody;
use crate::sim::settings::Settings;

/// Request bodies above this size are refused.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

pub(super) type Reply = Result<Response<SimBody>, io::Error>;

pub(super) fn json_response(status: StatusCode, value: &serde_json::Value) -> Response<SimBody> {
    let mut response = Response::new(SimBody::full(value.to_string()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A status with no body at all, as a middleware that rejects a header answers.
pub(super) fn empty_response(status: StatusCode) -> Response<SimBody> {
    let mut response = Response::new(SimBody::full(String::new()));
    *response.status_mut() = status;
    response
}

pub(super) fn error_json(status: StatusCode, message: &str) -> serde_json::Value {
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

pub(super) fn error_response(status: StatusCode, message: &str) -> Response<SimBody> {
    json_response(status, &error_json(status, message))
}

/// The 404 a real server (vLLM, the OpenAI API) answers for a model it does not serve, with
/// OpenAI's `model_not_found` code; `None` when the request may go on. A request that names no
/// model gets the served one, as vLLM does.
pub(super) fn model_not_served(
    settings: &Settings,
    requested: Option<&str>,
) -> Option<Response<SimBody>> {
    let requested = requested.filter(|m| !m.is_empty())?;
    let adapter = settings
        .adapters
        .as_ref()
        .is_some_and(|a| a.names.iter().any(|n| n == requested));
    if settings.accept_any_model || requested == settings.model || adapter {
        return None;
    }
    let adapters = settings.adapters.iter().flat_map(|a| a.names.iter());
    let served: Vec<String> = std::iter::once(&settings.model)
        .chain(adapters)
        .map(|name| format!("`{name}`"))
        .collect();
    let message = format!(
        "The model `{requested}` does not exist. This simulator serves {}: name it in the \
         target's `model:`, or set `accept_any_model: true` in its settings.",
        served.join(", ")
    );
    let body = json!({"error": {
        "message": message,
        "type": "invalid_request_error",
        "param": "model",
        "code": "model_not_found",
    }});
    Some(json_response(StatusCode::NOT_FOUND, &body))
}

pub(super) fn unix_now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub(super) async fn read_body(request: Request<Incoming>) -> Result<Bytes, Response<SimBody>> {
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

pub(super) fn echo_request_id(response: &mut Response<SimBody>, request_id: Option<&str>) {
    if let Some(value) = request_id.and_then(|id| HeaderValue::from_str(id).ok()) {
        response.headers_mut().insert("x-request-id", value);
    }
}

pub(super) fn sse_response(body: SimBody, request_id: Option<&str>) -> Response<SimBody> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    echo_request_id(&mut response, request_id);
    response
}
