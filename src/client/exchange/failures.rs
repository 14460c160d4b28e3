//! A failed response made into the record's error: its status, body excerpt and the
//! server's error code, secrets redacted.

use std::time::Instant;

use hyper::StatusCode;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName};

use super::super::error_body;
use super::super::failure::{Failure, error_excerpt, read_body_prefix};
use super::super::record::{ErrorKind, RequestError};
use super::super::request_id::empty_body_hint;
use super::super::stream::{self, excerpt};
use super::Client;

impl Client {
    /// A non-2xx response: its status and a short excerpt of its body.
    pub(super) fn status_failure(
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
        if self.config.endpoint.tls.client_cert.is_none() {
            message.push_str(super::super::tls::client_certificate_hint(
                status.as_u16(),
                &text,
            ));
        }
        Failure {
            kind,
            status: Some(status.as_u16()),
            message,
            // An empty body that did not end in time is unknown, not empty.
            body: (ended || !bytes.is_empty()).then_some(bytes),
            unreached: None,
        }
    }

    /// A 2xx response that is not an event stream: an error object, or a server that ignored
    /// `stream: true`.
    pub(super) fn non_stream_failure(
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
            unreached: None,
        }
    }

    /// The start of a failed response's body, secrets redacted, and whether the body ended.
    pub(super) async fn failure_body(
        &self,
        body: &mut Incoming,
        total_deadline: Option<Instant>,
    ) -> (Vec<u8>, bool) {
        let (bytes, ended) = read_body_prefix(body, total_deadline).await;
        (self.redactor.bytes(bytes), ended)
    }

    /// A failure as the record keeps it: secrets redacted from every text, the body cut to
    /// its first 2 KB, the server's code and type read from the whole body.
    pub(super) fn request_error(&self, failure: Failure) -> RequestError {
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
            unreached: failure.unreached,
        }
    }
}

/// A header's value as text, when it is text.
fn header_text(headers: &HeaderMap, name: HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}
