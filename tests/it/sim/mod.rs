//! The simulator over real loopback sockets, one file per concern; shared request helpers here.

mod control;
mod faults;
mod latency;
mod server;
mod wire;

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};
use servebench::sim::tokenizer::{count_chat_tokens, count_text_tokens};
use servebench::sim::{
    self, ReasoningField, RoleChunk, SimConfig, SimDialect, SimFault, SimFaultKind, SimHandle,
    SimPrefixCache, UsagePlacement,
};

/// All delays zero: tests of format and counts run at full speed.
fn fast() -> SimConfig {
    SimConfig {
        prefill_tok_s: Some(0.0),
        decode_ms_per_token: Some(0.0),
        decode_ms_per_running: Some(0.0),
        jitter: Some(0.0),
        ..SimConfig::default()
    }
}

async fn start(config: SimConfig) -> (String, SimHandle) {
    let (addr, handle) = sim::serve(config).await.expect("simulator starts");
    (format!("http://{addr}"), handle)
}

/// JSON in and out without reqwest's `json` feature.
trait JsonBody {
    fn json_body(self, value: &Value) -> Self;
}

impl JsonBody for reqwest::RequestBuilder {
    fn json_body(self, value: &Value) -> Self {
        self.header("content-type", "application/json")
            .body(value.to_string())
    }
}

trait JsonValue {
    async fn json_value(self) -> Result<Value, String>;
}

impl JsonValue for reqwest::Response {
    async fn json_value(self) -> Result<Value, String> {
        let text = self.text().await.map_err(|e| e.to_string())?;
        serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))
    }
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// One SSE event's data and when it arrived.
#[derive(Debug)]
struct Event {
    data: String,
    at: Instant,
}

/// A minimal SSE reader: events end at a blank line; only `data:` lines matter here.
async fn read_sse(response: reqwest::Response) -> (Vec<Event>, Option<String>) {
    let mut body = response.bytes_stream();
    let mut pending: Vec<u8> = Vec::new();
    let mut events = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(err) => return (events, Some(format!("{err:?}"))),
        };
        let at = Instant::now();
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
            let raw: Vec<u8> = pending.drain(..end + 2).collect();
            let text = String::from_utf8(raw).expect("utf-8 event");
            let data: Vec<&str> = text
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if !data.is_empty() {
                events.push(Event {
                    data: data.join("\n"),
                    at,
                });
            }
        }
    }
    assert!(
        pending.is_empty(),
        "stream ended inside an event: {pending:?}"
    );
    (events, None)
}

async fn stream_request(
    base: &str,
    path: &str,
    body: Value,
) -> (reqwest::StatusCode, Vec<Event>, Option<String>) {
    let response = http()
        .post(format!("{base}{path}"))
        .json_body(&body)
        .send()
        .await
        .expect("response headers");
    let status = response.status();
    let (events, error) = read_sse(response).await;
    (status, events, error)
}

fn parse(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| serde_json::from_str(&e.data).expect("event is JSON"))
        .collect()
}

fn chat_body(content: &str, extra: Value) -> Value {
    let mut body = json!({
        "model": "sim",
        "messages": [{"role": "system", "content": "You are brief."},
                     {"role": "user", "content": content}],
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            body.insert(k.clone(), v.clone());
        }
    }
    body
}

fn delta_text(chunk: &Value, key: &str) -> Option<String> {
    chunk["choices"][0]["delta"][key]
        .as_str()
        .map(str::to_string)
}

fn stream_body() -> Value {
    chat_body("fault", json!({"max_tokens": 8, "ignore_eos": true}))
}
