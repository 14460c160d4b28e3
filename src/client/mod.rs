//! OpenAI-compatible requests and streamed responses: one [`RequestRecord`] per request.
//!
//! [`Client::send`] never fails: every failure (connect, timeouts, HTTP status, broken or
//! malformed stream, error object) becomes `record.error` with a closed [`ErrorKind`], and the
//! record keeps `e2e_ms` and whatever timings were seen. All times come from one monotonic
//! clock ([`Instant`](std::time::Instant)), read when bytes arrive. The client takes plain
//! values ([`ClientConfig`]); resolving them from a plan is the runner's job.
//!
//! Files: `endpoint.rs` (a target's resolved connection settings and its side traffic), `config.rs` (settings, secrets), `pool.rs` (connections), `socket.rs` (TCP, Unix, TLS), `request.rs` (headers and
//! body), `tls.rs` (roots, client certificates, certificate errors), `exchange.rs` (one request and its stream), `failure.rs` (deadlines and error kinds), `stream.rs`/`scan.rs`/
//! `sse.rs` (parsing), `messages.rs`/`responses.rs`/`typed_event.rs` (typed-event APIs), `error_body.rs` (an error body's code and type), `record.rs` (what a
//! request produced), `cancel.rs` (the requests dropped on purpose).

mod cancel;
mod config;
mod endpoint;
pub mod error_body;
mod exchange;
mod failure;
mod json_text;
mod messages;
mod pool;
mod proxy;
mod record;
mod request;
mod request_id;
mod responses;
pub mod scan;
mod setup_error;
mod socket;
pub mod spec_decode;
pub mod sse;
pub mod stream;
mod tls;
mod trace_context;
mod typed_event;
pub mod url_secrets;

pub use cancel::{CancelPoint, CancelSettings};
pub use config::{
    Api, ClientConfig, ConnectionSettings, DEFAULT_CONNECTION_IDLE_TIMEOUT, ResolvedTimeouts,
    Sampling, ToolSettings, merge_body,
};
pub use endpoint::{
    Endpoint, HttpVersion, ModelsError, REDACTED, access_headers, is_secret_header,
};
pub use exchange::Client;
pub use pool::{ServerKeepAlive, parse_keep_alive};
pub use record::*;
pub use request_id::{
    DEFAULT_REQUEST_ID_HEADER, RequestIdFormat, RequestIdSettings, empty_body_hint, is_uuid,
    uuid_for,
};
pub use setup_error::ClientError;
pub use spec_decode::SpecDecoding;
pub use tls::TlsSettings;
pub use trace_context::{TRACEPARENT, TraceContextMode, TraceIds, trace_id_of};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{ChatMessage, Prompt, PromptInput};
    use std::time::Instant;

    fn config() -> ClientConfig {
        ClientConfig {
            endpoint: Endpoint {
                base_url: "http://127.0.0.1:9/v1/".into(),
                api_key: Some("sk-very-secret".into()),
                headers: vec![
                    ("X-Api-Key".into(), "hidden-value".into()),
                    ("X-Team".into(), "bench".into()),
                ],
                ..Endpoint::default()
            },
            api: Api::Chat,
            model: "m".into(),
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
            ..ClientConfig::default()
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
            expected: None,
            scheduled_at: None,
            archetype: None,
            model: None,
            session: None,
        };
        let fut = client.send(0, &prompt, Instant::now());
        assert_send(&fut);
    }

    #[test]
    fn each_request_sends_the_uuid_of_its_readable_id() {
        let mut cfg = config();
        for prefix in [None, Some("run-20261205T020000Z-c8"), Some("")] {
            let client = Client::new(cfg.clone()).expect("client");
            let client = match prefix {
                Some(prefix) => client.with_request_id_prefix(prefix),
                None => client,
            };
            for index in [0, 7, 10, 123_456, u64::MAX] {
                let (readable, sent) = client.request_ids(index);
                assert_eq!(readable, client.request_id(index));
                assert!(readable.ends_with(&format!("-{index}")), "{readable}");
                assert_eq!(sent, Some(uuid_for(&readable)), "{readable}");
            }
        }
        cfg.endpoint.request_id.format = RequestIdFormat::Plain;
        let client = Client::new(cfg.clone())
            .expect("client")
            .with_request_id_prefix("p");
        assert_eq!(
            client.request_ids(3),
            ("p-3".to_string(), Some("p-3".to_string()))
        );
        cfg.endpoint.request_id.format = RequestIdFormat::Off;
        let client = Client::new(cfg)
            .expect("client")
            .with_request_id_prefix("p");
        assert_eq!(client.request_ids(3), ("p-3".to_string(), None));
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
        assert_eq!(client.url(), "http://127.0.0.1:9/v1/chat/completions");
        let prompt = Prompt {
            input: PromptInput::Messages(vec![ChatMessage::new("user", "hi \"there\"")]),
            planned_prompt_tokens: None,
            max_tokens: 64,
            expected: None,
            scheduled_at: None,
            archetype: None,
            model: None,
            session: None,
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
        assert_eq!(client.url(), "http://127.0.0.1:9/v1/completions");
        let prompt = Prompt {
            input: PromptInput::Text("once".into()),
            planned_prompt_tokens: None,
            max_tokens: 64,
            expected: None,
            scheduled_at: None,
            archetype: None,
            model: None,
            session: None,
        };
        let text = client.request_body(&prompt);
        let body: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(body["prompt"], "once");
        assert_eq!(body["max_tokens"], 5);
        assert_eq!(text.matches("max_tokens").count(), 1);
    }

    #[test]
    fn embeddings_body_has_only_model_input_and_extra_fields() {
        let mut cfg = config();
        cfg.api = Api::Embeddings;
        cfg.body = serde_json::from_str(r#"{"encoding_format":"float"}"#).expect("json");
        let client = Client::new(cfg).expect("client");
        assert_eq!(client.url(), "http://127.0.0.1:9/v1/embeddings");
        let prompt = |texts: &[&str]| Prompt {
            input: PromptInput::Batch {
                query: None,
                texts: texts.iter().map(|t| t.to_string()).collect(),
            },
            planned_prompt_tokens: None,
            max_tokens: 0,
            expected: None,
            scheduled_at: None,
            archetype: None,
            model: None,
            session: None,
        };
        let body: serde_json::Value =
            serde_json::from_str(&client.request_body(&prompt(&["a b", "c"]))).expect("JSON");
        assert_eq!(
            body,
            serde_json::json!({"model": "m", "input": ["a b", "c"], "encoding_format": "float"})
        );
        let body: serde_json::Value =
            serde_json::from_str(&client.request_body(&prompt(&["a b"]))).expect("JSON");
        assert_eq!(body["input"], "a b");
    }

    #[test]
    fn an_extra_input_field_replaces_only_its_own_apis_input() {
        // `input` means nothing to chat: the messages still go.
        let mut cfg = config();
        cfg.body.insert("input".into(), serde_json::json!("x"));
        let client = Client::new(cfg).expect("client");
        let prompt = Prompt {
            input: PromptInput::Messages(vec![ChatMessage::new("user", "hi")]),
            planned_prompt_tokens: None,
            max_tokens: 4,
            expected: None,
            scheduled_at: None,
            archetype: None,
            model: None,
            session: None,
        };
        let body: serde_json::Value =
            serde_json::from_str(&client.request_body(&prompt)).expect("JSON");
        assert_eq!(body["messages"][0]["content"], "hi");
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
        cfg.endpoint.base_url = "not a url".into();
        assert!(Client::new(cfg).is_err());
        let mut cfg = config();
        cfg.endpoint.headers.push(("bad header".into(), "x".into()));
        let err = Client::new(cfg).expect_err("bad header name");
        assert!(err.to_string().contains("bad header"));
        let mut cfg = config();
        cfg.endpoint.api_key = Some("line\nbreak".into());
        let err = Client::new(cfg).expect_err("bad key");
        assert!(!err.to_string().contains("line"));
    }
}
