//! What an error response body says: the server's error code and type, and the body itself
//! cut to a size a record can keep.
//!
//! Three body forms are read: OpenAI's `{"error": {"message", "type", "code"}}` (also
//! llama.cpp's, and TGI's `{"error": "…", "error_type": "…"}`), vLLM's and SGLang's top-level
//! `{"object": "error", "message", "type", "code"}`, and FastAPI's `{"detail": …}` where
//! `detail` is a string (no code or type) or a list of validation errors (the first one's
//! `type`).

use serde_json::Value;

/// How much of an error body a record keeps.
pub const ERROR_BODY_KEEP_BYTES: usize = 2048;

/// The server's error code and type, as far as the body says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerError {
    pub code: Option<String>,
    pub error_type: Option<String>,
}

/// The code and type in an error body; both `None` when it is not JSON or names neither.
pub fn server_error(body: &[u8]) -> ServerError {
    match serde_json::from_slice::<Value>(body) {
        Ok(value) => from_value(&value, true),
        Err(_) => ServerError::default(),
    }
}

fn from_value(value: &Value, outer: bool) -> ServerError {
    let Some(object) = value.as_object() else {
        return ServerError::default();
    };
    match object.get("error") {
        // OpenAI and llama.cpp.
        Some(error @ Value::Object(_)) => {
            return ServerError {
                code: error.get("code").and_then(scalar),
                error_type: error.get("type").and_then(scalar),
            };
        }
        // TGI: the message as a string, the type beside it.
        Some(Value::String(_)) => {
            return ServerError {
                code: object.get("code").and_then(scalar),
                error_type: object.get("error_type").and_then(scalar),
            };
        }
        _ => {}
    }
    // vLLM and SGLang.
    let top_level = object.get("object").and_then(Value::as_str) == Some("error")
        || (object.contains_key("message")
            && (object.contains_key("type") || object.contains_key("code")));
    if top_level {
        return ServerError {
            code: object.get("code").and_then(scalar),
            error_type: object.get("type").and_then(scalar),
        };
    }
    // FastAPI.
    match object.get("detail") {
        Some(Value::Array(errors)) => ServerError {
            code: None,
            error_type: errors.first().and_then(|e| e.get("type")).and_then(scalar),
        },
        Some(inner @ Value::Object(_)) if outer => from_value(inner, false),
        _ => ServerError::default(),
    }
}

/// A string as is, a number as its decimal text; blank strings and other values are `None`.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The first [`ERROR_BODY_KEEP_BYTES`] of a body as text (invalid UTF-8 replaced, never cut
/// inside a character), `…` marking a cut.
pub fn kept_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if text.len() <= ERROR_BODY_KEEP_BYTES {
        return text.into_owned();
    }
    let mut cut = ERROR_BODY_KEEP_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (code, type) of a body.
    fn fields(body: &str) -> (Option<String>, Option<String>) {
        let e = server_error(body.as_bytes());
        (e.code, e.error_type)
    }

    fn some(a: &str, b: &str) -> (Option<String>, Option<String>) {
        (Some(a.to_string()), Some(b.to_string()))
    }

    #[test]
    fn openai_form() {
        assert_eq!(
            fields(
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#
            ),
            some("context_length_exceeded", "invalid_request_error")
        );
        // llama.cpp: a numeric code.
        assert_eq!(
            fields(r#"{"error":{"code":400,"message":"bad","type":"invalid_request_error"}}"#),
            some("400", "invalid_request_error")
        );
        // A null code and a missing type.
        assert_eq!(
            fields(r#"{"error":{"message":"x","code":null}}"#),
            (None, None)
        );
        // TGI.
        assert_eq!(
            fields(r#"{"error":"Input validation error","error_type":"validation"}"#),
            (None, Some("validation".to_string()))
        );
    }

    #[test]
    fn vllm_and_sglang_top_level_form() {
        assert_eq!(
            fields(
                r#"{"object":"error","message":"max_tokens is too large","type":"BadRequestError","param":null,"code":400}"#
            ),
            some("400", "BadRequestError")
        );
        assert_eq!(
            fields(r#"{"message":"overloaded","type":"ServiceUnavailable","code":"busy"}"#),
            some("busy", "ServiceUnavailable")
        );
    }

    #[test]
    fn fastapi_detail_forms() {
        assert_eq!(fields(r#"{"detail":"Not Found"}"#), (None, None));
        assert_eq!(
            fields(
                r#"{"detail":[{"type":"missing","loc":["body","model"],"msg":"Field required","input":{}}]}"#
            ),
            (None, Some("missing".to_string()))
        );
        assert_eq!(fields(r#"{"detail":[]}"#), (None, None));
        assert_eq!(
            fields(r#"{"detail":{"error":{"type":"auth","code":7}}}"#),
            some("7", "auth")
        );
    }

    #[test]
    fn other_bodies_name_nothing() {
        for body in ["", "upstream connect error", "[1,2]", r#"{"ok":true}"#, "{"] {
            assert_eq!(
                server_error(body.as_bytes()),
                ServerError::default(),
                "{body}"
            );
        }
    }

    #[test]
    fn kept_body_is_bounded_and_char_safe() {
        assert_eq!(kept_body(b"short"), "short");
        let long = "é".repeat(ERROR_BODY_KEEP_BYTES);
        let kept = kept_body(long.as_bytes());
        assert!(kept.ends_with('…'));
        assert!(kept.len() <= ERROR_BODY_KEEP_BYTES + '…'.len_utf8());
        assert_eq!(kept.chars().count(), ERROR_BODY_KEEP_BYTES / 2 + 1);
        assert_eq!(kept_body(&[0xff, b'a']), "\u{fffd}a");
    }
}
