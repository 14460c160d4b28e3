//! The request-id header: which header, and the value each request carries in it.
//!
//! Servers validate this header: FastAPI/uvicorn servers with a request-id middleware
//! (llama-cpp-python, others built on starlette-context) answer a non-UUID value with an empty
//! HTTP 400. So the default sends a UUID derived from the readable id, which stays in the record
//! beside it and maps one to one.

use hyper::header::{HeaderName, HeaderValue};

use super::trace_context::TraceIds;
use crate::hash::IdHash;
pub use crate::hash::{is_uuid, uuid_for};

/// The header name used when a target names none.
pub const DEFAULT_REQUEST_ID_HEADER: &str = "x-request-id";

/// What a request's id header carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequestIdFormat {
    /// A UUID derived from the readable id (the default).
    #[default]
    Uuid,
    /// The readable id itself (`<run>-<phase>-<n>`).
    Plain,
    /// No request-id header.
    Off,
}

/// Which header carries the id, and in what form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestIdSettings {
    pub header: HeaderName,
    pub format: RequestIdFormat,
}

impl Default for RequestIdSettings {
    fn default() -> Self {
        RequestIdSettings {
            header: HeaderName::from_static(DEFAULT_REQUEST_ID_HEADER),
            format: RequestIdFormat::Uuid,
        }
    }
}

impl RequestIdSettings {
    /// The header value for a request whose readable id is `readable`; `None` when off.
    pub fn header_value(&self, readable: &str) -> Option<String> {
        self.header_value_with(readable, || uuid_for(readable))
    }

    /// [`RequestIdSettings::header_value`], with `uuid` making `readable`'s UUID (a client
    /// carries its id prefix's hash on, rather than hashing the whole id).
    pub fn header_value_with(
        &self,
        readable: &str,
        uuid: impl FnOnce() -> String,
    ) -> Option<String> {
        match self.format {
            RequestIdFormat::Uuid => Some(uuid()),
            RequestIdFormat::Plain => Some(readable.to_string()),
            RequestIdFormat::Off => None,
        }
    }

    /// The header and value to send, when the value is a valid header value.
    pub fn header(&self, readable: &str) -> Option<(HeaderName, HeaderValue)> {
        let value = HeaderValue::from_str(&self.header_value(readable)?).ok()?;
        Some((self.header.clone(), value))
    }
}

/// How one client names its requests: `{prefix}-{index}`, the UUID derived from it and, with
/// trace context on, the run's half of its trace id.
#[derive(Debug, Clone)]
pub(crate) struct RequestNames {
    prefix: String,
    /// The hash of `{prefix}-`, which each request's UUID carries on.
    hash: IdHash,
    trace_ids: Option<TraceIds>,
}

impl RequestNames {
    pub fn new(prefix: String, trace_context: bool) -> Self {
        RequestNames {
            hash: IdHash::new().update(prefix.as_bytes()).update(b"-"),
            trace_ids: trace_context.then(|| TraceIds::new(&prefix)),
            prefix,
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The readable id of request `index`, and its id header's value: the id itself, its UUID
    /// (`uuid_for` of it, from the prefix's hash carried on), or none.
    pub fn ids(&self, settings: &RequestIdSettings, index: u64) -> (String, Option<String>) {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(index);
        let mut id = String::with_capacity(self.prefix.len() + 1 + digits.len());
        id.push_str(&self.prefix);
        id.push('-');
        id.push_str(digits);
        let sent = settings.header_value_with(&id, || self.hash.update(digits.as_bytes()).uuid());
        (id, sent)
    }

    /// Request `index`'s `traceparent` and trace id; `None` when trace context is off.
    pub fn traceparent(&self, index: u64) -> Option<(HeaderValue, String)> {
        self.trace_ids.map(|ids| ids.traceparent(index))
    }
}

/// What an error message adds when a 4xx came with an empty body: servers that reject a
/// request header they validate often say nothing, so name the headers that were sent.
pub fn empty_body_hint(status: u16, sent_headers: &[&str]) -> String {
    if !(400..500).contains(&status) {
        return String::new();
    }
    let mut hint = String::from(" (empty response body");
    if !sent_headers.is_empty() {
        hint.push_str("; servers commonly validate these request headers: ");
        hint.push_str(&sent_headers.join(", "));
        hint.push_str(
            "; a request-id middleware may want another id form: set the target's \
             `request_id: {format: uuid | plain | off}`",
        );
    }
    hint.push(')');
    hint
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_is_version_4_layout_and_stable() {
        let id = uuid_for("run-c1-7");
        assert!(is_uuid(&id), "{id}");
        assert_eq!(&id[14..15], "4", "{id}");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"), "{id}");
        assert_eq!(id, uuid_for("run-c1-7"));
        assert_ne!(id, uuid_for("run-c1-8"));
    }

    #[test]
    fn uuid_check_rejects_readable_ids() {
        assert!(!is_uuid("sb-1"));
        assert!(!is_uuid("run-20261203T000000Z-c1-12"));
        assert!(!is_uuid("0123456789abcdef0123456789abcdef0123"));
        assert!(is_uuid("123e4567-e89b-12d3-a456-426614174000"));
    }

    #[test]
    fn formats_and_header() {
        let mut settings = RequestIdSettings::default();
        assert_eq!(settings.header_value("a"), Some(uuid_for("a")));
        settings.format = RequestIdFormat::Plain;
        let (name, value) = settings.header("run-c1-0").expect("header");
        assert_eq!(name, "x-request-id");
        assert_eq!(value, "run-c1-0");
        settings.format = RequestIdFormat::Off;
        assert!(settings.header("run-c1-0").is_none());
    }

    #[test]
    fn hint_only_for_client_errors() {
        assert_eq!(empty_body_hint(500, &["x-request-id"]), "");
        let hint = empty_body_hint(400, &["x-request-id", "authorization"]);
        assert!(hint.contains("empty response body"), "{hint}");
        assert!(hint.contains("x-request-id, authorization"), "{hint}");
    }
}
