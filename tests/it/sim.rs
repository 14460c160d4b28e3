//! The simulator over real loopback sockets: wire format, usage, latency model, cache, faults.

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

#[tokio::test]
async fn chat_stream_matches_vllm_format_and_counts() {
    let (base, handle) = start(fast()).await;
    let prompt = "tell me about the weather in three words";
    let (status, events, error) = stream_request(
        &base,
        "/v1/chat/completions",
        chat_body(prompt, json!({"max_tokens": 12, "ignore_eos": true})),
    )
    .await;
    assert_eq!(status, 200);
    assert!(error.is_none());
    assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
    let chunks = parse(&events);
    for chunk in &chunks {
        assert!(
            chunk["id"]
                .as_str()
                .is_some_and(|id| id.starts_with("chatcmpl-"))
        );
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "sim");
        assert!(chunk["created"].as_u64().is_some());
    }
    // Role-only first chunk with content "" (vLLM).
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(chunks[0]["choices"][0]["delta"]["content"], "");
    let content: String = chunks[1..]
        .iter()
        .filter_map(|c| delta_text(c, "content"))
        .collect();
    assert_eq!(count_text_tokens(&content), 12);
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "length");
    let usage_chunk = &chunks[chunks.len() - 1];
    assert_eq!(usage_chunk["choices"], json!([]));
    let usage = &usage_chunk["usage"];
    let planned = count_chat_tokens(["You are brief.", prompt]);
    assert_eq!(usage["prompt_tokens"], planned);
    assert_eq!(usage["completion_tokens"], 12);
    assert_eq!(usage["total_tokens"], planned + 12);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);
    let stats = handle.stats();
    assert_eq!(stats.requests_total, 1);
    assert_eq!(stats.requests_finished, 1);
    assert_eq!(stats.prompt_tokens_total, planned);
    assert_eq!(stats.generation_tokens_total, 12);
    assert_eq!((stats.running, stats.in_flight), (0, 0));
    handle.shutdown().await;
}

#[tokio::test]
async fn completions_stream_and_non_stream() {
    let (base, handle) = start(fast()).await;
    let prompt = "one two three four five";
    let (status, events, _) = stream_request(
        &base,
        "/v1/completions",
        json!({"model": "sim", "prompt": prompt, "max_tokens": 7, "ignore_eos": true,
               "stream": true, "stream_options": {"include_usage": true}}),
    )
    .await;
    assert_eq!(status, 200);
    let chunks = parse(&events);
    assert!(chunks.iter().all(|c| c["object"] == "text_completion"));
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["text"].as_str())
        .collect();
    assert_eq!(count_text_tokens(&text), 7);
    // No role chunk in the completions API: the first event already carries text.
    assert_eq!(
        count_text_tokens(chunks[0]["choices"][0]["text"].as_str().unwrap_or("")),
        1
    );
    let usage = &chunks[chunks.len() - 1]["usage"];
    assert_eq!(usage["prompt_tokens"], 5);
    assert_eq!(usage["completion_tokens"], 7);

    let body: Value = http()
        .post(format!("{base}/v1/completions"))
        .json_body(&json!({"prompt": prompt, "max_tokens": 9, "ignore_eos": true}))
        .send()
        .await
        .expect("response")
        .json_value()
        .await
        .expect("json body");
    assert_eq!(body["object"], "text_completion");
    assert_eq!(
        count_text_tokens(body["choices"][0]["text"].as_str().unwrap_or("")),
        9
    );
    assert_eq!(body["usage"]["completion_tokens"], 9);
    assert_eq!(body["choices"][0]["finish_reason"], "length");

    let body: Value = http()
        .post(format!("{base}/v1/chat/completions"))
        .json_body(
            &json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4,
                      "ignore_eos": true}),
        )
        .send()
        .await
        .expect("response")
        .json_value()
        .await
        .expect("json body");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    let content = body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or("");
    assert_eq!(count_text_tokens(content), 4);
    assert_eq!(body["usage"]["prompt_tokens"], count_chat_tokens(["hi"]));
    handle.shutdown().await;
}

async fn reasoning_stream(field: ReasoningField, key: &str) {
    let config = SimConfig {
        reasoning_tokens: Some(6),
        dialect: Some(SimDialect {
            reasoning_field: Some(field),
            ..SimDialect::default()
        }),
        ..fast()
    };
    let (base, handle) = start(config).await;
    let (_, events, _) = stream_request(
        &base,
        "/v1/chat/completions",
        chat_body("think first", json!({"max_tokens": 10, "ignore_eos": true})),
    )
    .await;
    let chunks = parse(&events);
    let kinds: Vec<&str> = chunks
        .iter()
        .filter_map(|c| {
            if delta_text(c, key).is_some_and(|t| !t.is_empty()) {
                Some("r")
            } else if delta_text(c, "content").is_some_and(|t| !t.is_empty()) {
                Some("c")
            } else {
                None
            }
        })
        .collect();
    assert_eq!(
        kinds,
        [vec!["r"; 6], vec!["c"; 4]].concat(),
        "reasoning first"
    );
    let usage = &chunks[chunks.len() - 1]["usage"];
    assert_eq!(usage["completion_tokens"], 10, "reasoning + content");
    assert_eq!(usage["completion_tokens_details"]["reasoning_tokens"], 6);

    // Not streamed: the reasoning sits beside the content in the message.
    let response = http()
        .post(format!("{base}/v1/chat/completions"))
        .json_body(&json!({"messages": [{"role": "user", "content": "think"}],
                           "max_tokens": 10, "ignore_eos": true}))
        .send()
        .await
        .expect("response");
    let body = response.json_value().await.expect("json");
    let message = &body["choices"][0]["message"];
    assert_eq!(count_text_tokens(message[key].as_str().unwrap_or("")), 6);
    assert_eq!(
        count_text_tokens(message["content"].as_str().unwrap_or("")),
        4
    );
    assert_eq!(body["usage"]["completion_tokens"], 10);

    // Thinking switched off by the request: content only.
    for off in [
        json!({"chat_template_kwargs": {"enable_thinking": false}}),
        json!({"chat_template_kwargs": {"thinking_mode": "disabled"}}),
    ] {
        let mut extra = json!({"max_tokens": 5, "ignore_eos": true});
        if let (Some(map), Some(off)) = (extra.as_object_mut(), off.as_object()) {
            map.extend(off.clone());
        }
        let (_, events, _) = stream_request(
            &base,
            "/v1/chat/completions",
            chat_body("no thinking", extra),
        )
        .await;
        let chunks = parse(&events);
        assert!(chunks.iter().all(|c| delta_text(c, key).is_none()));
        let usage = &chunks[chunks.len() - 1]["usage"];
        assert_eq!(usage["completion_tokens_details"]["reasoning_tokens"], 0);
    }
    handle.shutdown().await;
}

#[tokio::test]
async fn reasoning_dialects() {
    reasoning_stream(ReasoningField::ReasoningContent, "reasoning_content").await;
    reasoning_stream(ReasoningField::Reasoning, "reasoning").await;
}

#[tokio::test]
async fn role_chunk_and_usage_placement_variants() {
    let dialect = |role, usage, timings| SimConfig {
        dialect: Some(SimDialect {
            role_chunk: Some(role),
            usage: Some(usage),
            llama_timings: Some(timings),
            ..SimDialect::default()
        }),
        ..fast()
    };
    // llama.cpp chat: role chunk with content null, separate usage, timings on the last chunk.
    let (base, handle) = start(dialect(RoleChunk::Null, UsagePlacement::Separate, true)).await;
    let body = chat_body("hi", json!({"max_tokens": 3, "ignore_eos": true}));
    let (_, events, _) = stream_request(&base, "/v1/chat/completions", body.clone()).await;
    let chunks = parse(&events);
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(chunks[0]["choices"][0]["delta"]["content"].is_null());
    let last = &chunks[chunks.len() - 1];
    assert_eq!(last["usage"]["completion_tokens"], 3);
    assert_eq!(last["timings"]["predicted_n"], 3);
    handle.shutdown().await;

    // No role chunk; usage attached to the finish chunk (llama.cpp completions style).
    let (base, handle) = start(dialect(RoleChunk::None, UsagePlacement::FinishChunk, false)).await;
    let (_, events, _) = stream_request(&base, "/v1/chat/completions", body.clone()).await;
    let chunks = parse(&events);
    assert!(chunks[0]["choices"][0]["delta"]["role"].is_null());
    assert!(delta_text(&chunks[0], "content").is_some_and(|t| !t.is_empty()));
    let last = &chunks[chunks.len() - 1];
    assert_eq!(last["choices"][0]["finish_reason"], "length");
    assert_eq!(last["usage"]["completion_tokens"], 3);
    assert!(last.get("timings").is_none());
    handle.shutdown().await;

    // Usage never sent.
    let (base, handle) = start(dialect(RoleChunk::Empty, UsagePlacement::None, false)).await;
    let (_, events, _) = stream_request(&base, "/v1/chat/completions", body.clone()).await;
    assert!(parse(&events).iter().all(|c| c.get("usage").is_none()));
    assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
    handle.shutdown().await;

    // Default dialect without include_usage: no usage either.
    let (base, handle) = start(fast()).await;
    let mut no_usage = body;
    if let Some(map) = no_usage.as_object_mut() {
        map.remove("stream_options");
    }
    let (_, events, _) = stream_request(&base, "/v1/chat/completions", no_usage).await;
    assert!(parse(&events).iter().all(|c| c.get("usage").is_none()));
    handle.shutdown().await;
}

#[tokio::test]
async fn several_tokens_per_event() {
    let config = SimConfig {
        chunk_tokens: Some(3),
        ..fast()
    };
    let (base, handle) = start(config).await;
    let (_, events, _) = stream_request(
        &base,
        "/v1/chat/completions",
        chat_body("hi", json!({"max_tokens": 10, "ignore_eos": true})),
    )
    .await;
    let sizes: Vec<u64> = parse(&events)
        .iter()
        .filter_map(|c| delta_text(c, "content"))
        .filter(|t| !t.is_empty())
        .map(|t| count_text_tokens(&t))
        .collect();
    assert_eq!(sizes, vec![3, 3, 3, 1]);
    handle.shutdown().await;
}

async fn cached_tokens(base: &str, prompt: &str) -> u64 {
    let body: Value = http()
        .post(format!("{base}/v1/completions"))
        .json_body(&json!({"prompt": prompt, "max_tokens": 1}))
        .send()
        .await
        .expect("response")
        .json_value()
        .await
        .expect("json");
    body["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .expect("cached_tokens")
}

fn words(prefix: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("{prefix}{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn prefix_cache_hits_and_evicts() {
    let config = SimConfig {
        prefix_cache: Some(SimPrefixCache {
            capacity_tokens: 256,
            block_tokens: Some(16),
        }),
        ..fast()
    };
    let (base, handle) = start(config).await;
    let shared = words("shared", 64);
    let first = format!("{shared} {}", words("a", 20));
    let second = format!("{shared} {}", words("b", 20));
    assert_eq!(cached_tokens(&base, &first).await, 0, "cold cache");
    // The shared 64-token prefix is four whole blocks.
    assert_eq!(cached_tokens(&base, &second).await, 64);
    // The repeated prompt hits every whole block of its 84 tokens.
    assert_eq!(cached_tokens(&base, &first).await, 80);
    // A working set of 4 × 160 tokens against a 256-token cache evicts the first prompt.
    for i in 0..4 {
        assert_eq!(
            cached_tokens(&base, &words(&format!("w{i}x"), 160)).await,
            0
        );
    }
    assert_eq!(cached_tokens(&base, &first).await, 0, "evicted");
    let stats = handle.stats();
    assert!(stats.prefix_cache_evicted_blocks > 0);
    assert_eq!(stats.prefix_cache_hits_tokens, 144);
    let metrics = http()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    assert!(metrics.contains("vllm:prefix_cache_hits_total{model_name=\"sim\"} 144.0"));
    let queries = 84 * 4 + 160 * 4;
    assert!(metrics.contains(&format!(
        "vllm:prefix_cache_queries_total{{model_name=\"sim\"}} {queries}.0"
    )));
    handle.shutdown().await;
}

#[tokio::test]
async fn cached_prefix_lowers_ttft() {
    // 800 tokens at 4000 tok/s = 200 ms of prefill when nothing is cached.
    let config = SimConfig {
        prefill_tok_s: Some(4000.0),
        prefix_cache: Some(SimPrefixCache {
            capacity_tokens: 100_000,
            block_tokens: None,
        }),
        ..fast()
    };
    let (base, handle) = start(config).await;
    let prompt = words("p", 800);
    let time = |prompt: String| {
        let base = base.clone();
        async move {
            let started = Instant::now();
            let (_, events, _) = stream_request(
                &base,
                "/v1/completions",
                json!({"prompt": prompt, "max_tokens": 1, "stream": true}),
            )
            .await;
            events[0].at - started
        }
    };
    let cold = time(prompt.clone()).await;
    let warm = time(prompt).await;
    assert!(cold >= Duration::from_millis(190), "{cold:?}");
    assert!(warm < cold / 2, "cold {cold:?} warm {warm:?}");
    handle.shutdown().await;
}

#[tokio::test]
async fn queueing_grows_ttft_beyond_max_running() {
    // Each request decodes 5 tokens at 20 ms: ~80 ms in a slot after its first token.
    let config = SimConfig {
        max_running: Some(2),
        decode_ms_per_token: Some(20.0),
        ..fast()
    };
    let (base, handle) = start(config).await;
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let base = base.clone();
        tasks.push(tokio::spawn(async move {
            let started = Instant::now();
            let (_, events, _) = stream_request(
                &base,
                "/v1/completions",
                json!({"prompt": "queue me", "max_tokens": 5, "ignore_eos": true,
                       "stream": true}),
            )
            .await;
            events[0].at - started
        }));
    }
    let mut ttfts = Vec::new();
    for task in tasks {
        ttfts.push(task.await.expect("task"));
    }
    ttfts.sort();
    // Two start at once; the last two wait for two full generations (~160 ms).
    assert!(ttfts[1] < Duration::from_millis(100), "{ttfts:?}");
    assert!(ttfts[5] > Duration::from_millis(140), "{ttfts:?}");
    let stats = handle.stats();
    assert_eq!(stats.max_running_observed, 2);
    assert_eq!(stats.max_in_flight_observed, 6);
    assert_eq!((stats.running, stats.waiting), (0, 0));
    handle.shutdown().await;
}

#[tokio::test]
async fn decode_time_grows_with_running() {
    let config = SimConfig {
        decode_ms_per_token: Some(2.0),
        decode_ms_per_running: Some(2.0),
        ..fast()
    };
    let (base, handle) = start(config).await;
    let run = |n: usize| {
        let base = base.clone();
        async move {
            let mut tasks = Vec::new();
            for _ in 0..n {
                let base = base.clone();
                tasks.push(tokio::spawn(async move {
                    let (_, events, _) = stream_request(
                        &base,
                        "/v1/completions",
                        json!({"prompt": "x", "max_tokens": 21, "ignore_eos": true,
                               "stream": true}),
                    )
                    .await;
                    let tokens: Vec<&Event> =
                        events.iter().filter(|e| e.data != "[DONE]").collect();
                    tokens[tokens.len() - 2].at - tokens[0].at
                }));
            }
            let mut total = Duration::ZERO;
            for task in tasks {
                total += task.await.expect("task");
            }
            total / n as u32
        }
    };
    // 20 decode steps: ~40 ms alone, ~(2 + 2×3) × 20 = 160 ms with four running.
    let alone = run(1).await;
    let batched = run(4).await;
    assert!(alone >= Duration::from_millis(38), "{alone:?}");
    assert!(batched > alone * 2, "alone {alone:?} batched {batched:?}");
    handle.shutdown().await;
}

fn fault(kind: SimFaultKind) -> SimFault {
    SimFault {
        kind,
        probability: None,
        every: None,
        at: vec![1],
        status: None,
        seconds: None,
        after_tokens: None,
    }
}

async fn start_with_fault(fault: SimFault) -> (String, SimHandle) {
    start(SimConfig {
        faults: vec![fault],
        ..fast()
    })
    .await
}

fn stream_body() -> Value {
    chat_body("fault", json!({"max_tokens": 8, "ignore_eos": true}))
}

#[tokio::test]
async fn fault_status_and_rate_limit() {
    let (base, handle) = start_with_fault(SimFault {
        status: Some(503),
        ..fault(SimFaultKind::Status)
    })
    .await;
    let response = http()
        .post(format!("{base}/v1/chat/completions"))
        .json_body(&stream_body())
        .send()
        .await
        .expect("response");
    assert_eq!(response.status(), 503);
    let body: Value = response.json_value().await.expect("error body");
    assert_eq!(body["error"]["code"], 503);
    // Request 2 is not listed: served normally.
    let (status, events, _) = stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert_eq!(status, 200);
    assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
    handle.shutdown().await;

    let (base, handle) = start_with_fault(SimFault {
        at: vec![],
        every: Some(2),
        seconds: Some(3.0),
        ..fault(SimFaultKind::RateLimit)
    })
    .await;
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let response = http()
            .post(format!("{base}/v1/completions"))
            .json_body(&json!({"prompt": "x", "max_tokens": 1}))
            .send()
            .await
            .expect("response");
        if response.status() == 429 {
            assert_eq!(
                response.headers().get("retry-after").map(|v| v.as_bytes()),
                Some(&b"3"[..])
            );
        }
        statuses.push(response.status().as_u16());
    }
    assert_eq!(statuses, vec![200, 429, 200, 429]);
    assert_eq!(handle.stats().faults_injected, 2);
    handle.shutdown().await;
}

#[tokio::test]
async fn fault_reset_before_headers() {
    let (base, handle) = start_with_fault(fault(SimFaultKind::ResetBeforeHeaders)).await;
    let result = http()
        .post(format!("{base}/v1/chat/completions"))
        .json_body(&stream_body())
        .send()
        .await;
    let err = result.expect_err("no response at all");
    assert!(!err.is_status() && !err.is_timeout(), "{err:?}");
    // The simulator still serves the next request.
    let (status, _, _) = stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert_eq!(status, 200);
    handle.shutdown().await;
}

#[tokio::test]
async fn fault_disconnect_mid_stream() {
    let (base, handle) = start_with_fault(SimFault {
        after_tokens: Some(3),
        ..fault(SimFaultKind::DisconnectMidStream)
    })
    .await;
    let (status, events, error) =
        stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert_eq!(status, 200);
    assert!(error.is_some(), "the body ends with an error");
    let content: String = parse(&events)
        .iter()
        .filter_map(|c| delta_text(c, "content"))
        .collect();
    assert_eq!(
        count_text_tokens(&content),
        3,
        "tokens before the cut arrive"
    );
    assert!(events.iter().all(|e| e.data != "[DONE]"));
    // The slot is released.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let stats = handle.stats();
    assert_eq!(
        (stats.running, stats.in_flight, stats.requests_aborted),
        (0, 0, 1)
    );
    handle.shutdown().await;
}

#[tokio::test]
async fn fault_stall_mid_stream() {
    let (base, handle) = start_with_fault(SimFault {
        seconds: Some(0.3),
        after_tokens: Some(4),
        ..fault(SimFaultKind::Stall)
    })
    .await;
    let (_, events, error) = stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert!(error.is_none());
    let gaps: Vec<Duration> = events.windows(2).map(|w| w[1].at - w[0].at).collect();
    let longest = gaps.iter().max().copied().unwrap_or_default();
    assert!(longest >= Duration::from_millis(280), "{gaps:?}");
    let content: String = parse(&events)
        .iter()
        .filter_map(|c| delta_text(c, "content"))
        .collect();
    assert_eq!(
        count_text_tokens(&content),
        8,
        "the stream resumes and completes"
    );
    handle.shutdown().await;
}

#[tokio::test]
async fn fault_malformed_event() {
    let (base, handle) = start_with_fault(fault(SimFaultKind::MalformedEvent)).await;
    let (_, events, _) = stream_request(&base, "/v1/chat/completions", stream_body()).await;
    let bad: Vec<&Event> = events
        .iter()
        .filter(|e| e.data != "[DONE]" && serde_json::from_str::<Value>(&e.data).is_err())
        .collect();
    assert_eq!(bad.len(), 1, "exactly one event is not JSON");
    assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
    handle.shutdown().await;
}

#[tokio::test]
async fn fault_missing_done() {
    let (base, handle) = start_with_fault(fault(SimFaultKind::MissingDone)).await;
    let (status, events, error) =
        stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert_eq!(status, 200);
    assert!(error.is_none(), "the stream ends cleanly");
    assert!(events.iter().all(|e| e.data != "[DONE]"));
    let chunks = parse(&events);
    assert_eq!(chunks[chunks.len() - 1]["usage"]["completion_tokens"], 8);
    handle.shutdown().await;
}

#[tokio::test]
async fn fault_error_object_in_200() {
    let (base, handle) = start_with_fault(SimFault {
        at: vec![1, 2],
        ..fault(SimFaultKind::ErrorObject)
    })
    .await;
    let (status, events, _) = stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert_eq!(status, 200);
    let first: Value = serde_json::from_str(&events[0].data).expect("json");
    assert!(first["error"]["message"].is_string());
    let response = http()
        .post(format!("{base}/v1/completions"))
        .json_body(&json!({"prompt": "x"}))
        .send()
        .await
        .expect("response");
    assert_eq!(response.status(), 200);
    let body: Value = response.json_value().await.expect("json");
    assert!(body["error"]["message"].is_string());
    assert!(body.get("choices").is_none());
    handle.shutdown().await;
}

#[tokio::test]
async fn fault_probability_is_seeded() {
    let config = |seed| SimConfig {
        seed: Some(seed),
        faults: vec![SimFault {
            at: vec![],
            probability: Some(0.5),
            ..fault(SimFaultKind::Status)
        }],
        ..fast()
    };
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (base, handle) = start(config(11)).await;
        let mut statuses = Vec::new();
        for _ in 0..24 {
            let response = http()
                .post(format!("{base}/v1/completions"))
                .json_body(&json!({"prompt": "x", "max_tokens": 1}))
                .send()
                .await
                .expect("response");
            statuses.push(response.status().as_u16());
        }
        handle.shutdown().await;
        runs.push(statuses);
    }
    assert_eq!(runs[0], runs[1]);
    let failures = runs[0].iter().filter(|s| **s == 500).count();
    assert!((4..=20).contains(&failures), "{:?}", runs[0]);
}

#[tokio::test]
async fn metrics_are_prometheus_text() {
    let (base, handle) = start(fast()).await;
    let _ = stream_request(&base, "/v1/chat/completions", stream_body()).await;
    let response = http()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .expect("metrics");
    assert!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/plain"))
    );
    let text = response.text().await.expect("text");
    let name_ok = |name: &str| {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    let mut typed = std::collections::HashSet::new();
    let mut samples = std::collections::HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            let name = parts.next().unwrap_or("");
            let kind = parts.next().unwrap_or("");
            assert!(name_ok(name), "{line}");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            typed.insert(name.to_string());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            assert!(name_ok(rest.split(' ').next().unwrap_or("")), "{line}");
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("sample line");
        let value: f64 = value.parse().expect("numeric sample");
        let name = series.split('{').next().unwrap_or("");
        assert!(name_ok(name), "{line}");
        if let Some(labels) = series.strip_prefix(name)
            && !labels.is_empty()
        {
            assert!(labels.starts_with('{') && labels.ends_with('}'), "{line}");
            for pair in labels[1..labels.len() - 1].split(',') {
                let (key, val) = pair.split_once('=').expect("label pair");
                assert!(name_ok(key), "{line}");
                assert!(val.starts_with('"') && val.ends_with('"'), "{line}");
            }
        }
        let family = ["_bucket", "_count", "_sum"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|f| typed.contains(*f)))
            .unwrap_or(name);
        assert!(typed.contains(family), "sample before its TYPE: {line}");
        samples.insert(series.to_string(), value);
    }
    let get = |series: &str| samples.get(series).copied();
    assert_eq!(
        get("vllm:num_requests_running{model_name=\"sim\"}"),
        Some(0.0)
    );
    assert_eq!(
        get("vllm:num_requests_waiting{model_name=\"sim\"}"),
        Some(0.0)
    );
    assert_eq!(
        get("vllm:generation_tokens_total{model_name=\"sim\"}"),
        Some(8.0)
    );
    assert_eq!(
        get("vllm:prompt_tokens_total{model_name=\"sim\"}"),
        Some(count_chat_tokens(["You are brief.", "fault"]) as f64)
    );
    assert_eq!(
        get("vllm:time_to_first_token_seconds_count{model_name=\"sim\"}"),
        Some(1.0)
    );
    assert_eq!(
        get("vllm:time_to_first_token_seconds_bucket{model_name=\"sim\",le=\"+Inf\"}"),
        Some(1.0)
    );
    for name in [
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total",
        "vllm:num_preemptions_total",
    ] {
        assert!(typed.contains(name), "{name}");
    }
    handle.shutdown().await;
}

async fn natural_lengths(seed: u64) -> Vec<u64> {
    let config = SimConfig {
        seed: Some(seed),
        mean_output_tokens: Some(40),
        ..fast()
    };
    let (base, handle) = start(config).await;
    let mut lengths = Vec::new();
    for _ in 0..8 {
        let body: Value = http()
            .post(format!("{base}/v1/completions"))
            .json_body(&json!({"prompt": "same prompt", "max_tokens": 1000}))
            .send()
            .await
            .expect("response")
            .json_value()
            .await
            .expect("json");
        let text = body["choices"][0]["text"].as_str().unwrap_or("");
        let tokens = body["usage"]["completion_tokens"].as_u64().expect("usage");
        assert_eq!(count_text_tokens(text), tokens);
        assert_eq!(body["choices"][0]["finish_reason"], "stop");
        lengths.push(tokens);
    }
    handle.shutdown().await;
    lengths
}

#[tokio::test]
async fn same_seed_same_token_counts() {
    let a = natural_lengths(5).await;
    let b = natural_lengths(5).await;
    let c = natural_lengths(6).await;
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!(a.iter().all(|n| (20..=60).contains(n)), "{a:?}");
}

#[tokio::test]
async fn max_and_min_tokens() {
    let config = SimConfig {
        mean_output_tokens: Some(4),
        max_model_len: Some(100),
        ..fast()
    };
    let (base, handle) = start(config).await;
    let post = |body: Value| {
        let base = base.clone();
        async move {
            let response = http()
                .post(format!("{base}/v1/completions"))
                .json_body(&body)
                .send()
                .await
                .expect("response");
            let status = response.status().as_u16();
            (status, response.json_value().await.expect("json"))
        }
    };
    let (status, body) = post(json!({"prompt": "x", "max_tokens": 50, "min_tokens": 30})).await;
    assert_eq!(status, 200);
    assert_eq!(body["usage"]["completion_tokens"], 30);
    let (status, body) = post(json!({"prompt": "x", "max_tokens": 5, "min_tokens": 9})).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("min_tokens"))
    );
    let (status, body) = post(json!({"prompt": "x", "max_tokens": 100})).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("context length"))
    );
    let (status, _) = post(json!({"prompt": 7})).await;
    assert_eq!(status, 400);
    let response = http()
        .post(format!("{base}/v1/chat/completions"))
        .body("{not json")
        .send()
        .await
        .expect("response");
    assert_eq!(response.status(), 400);
    handle.shutdown().await;
}

#[tokio::test]
async fn tokenize_models_health() {
    let (base, handle) = start(SimConfig {
        model: Some("tiny".into()),
        ..fast()
    })
    .await;
    let post = |body: Value| {
        let base = base.clone();
        async move {
            http()
                .post(format!("{base}/tokenize"))
                .json_body(&body)
                .send()
                .await
                .expect("response")
                .json_value()
                .await
                .expect("json")
        }
    };
    let vllm = post(json!({"model": "tiny", "prompt": "a b  c"})).await;
    assert_eq!(vllm["count"], 3);
    assert_eq!(vllm["tokens"].as_array().map(Vec::len), Some(3));
    assert_eq!(vllm["max_model_len"], 32768);
    let chat =
        post(json!({"model": "tiny", "messages": [{"role": "user", "content": "a b"}]})).await;
    assert_eq!(chat["count"], count_chat_tokens(["a b"]));
    let llama = post(json!({"content": "a b  c"})).await;
    assert_eq!(llama["tokens"], vllm["tokens"]);

    let models: Value = http()
        .get(format!("{base}/v1/models"))
        .send()
        .await
        .expect("models")
        .json_value()
        .await
        .expect("json");
    assert_eq!(models["data"][0]["id"], "tiny");
    let health = http()
        .get(format!("{base}/health"))
        .send()
        .await
        .expect("health");
    assert_eq!(health.status(), 200);
    let missing = http()
        .get(format!("{base}/v2/nothing"))
        .send()
        .await
        .expect("404");
    assert_eq!(missing.status(), 404);
    handle.shutdown().await;
}

#[tokio::test]
async fn records_send_timestamps_per_request_id() {
    let config = SimConfig {
        record_timestamps: Some(true),
        decode_ms_per_token: Some(5.0),
        ..fast()
    };
    let (base, handle) = start(config).await;
    let before = Instant::now();
    let response = http()
        .post(format!("{base}/v1/chat/completions"))
        .header("x-request-id", "req-42")
        .json_body(&chat_body(
            "hi",
            json!({"max_tokens": 6, "ignore_eos": true}),
        ))
        .send()
        .await
        .expect("response");
    assert_eq!(
        response.headers().get("x-request-id").map(|v| v.as_bytes()),
        Some(&b"req-42"[..])
    );
    let (events, _) = read_sse(response).await;
    let after = Instant::now();
    let times = handle.timestamps_for("req-42").expect("recorded");
    let first = times.first_content.expect("first content");
    let last = times.last_chunk.expect("last chunk");
    assert!(before <= times.received && times.received <= first && first < last);
    assert!(last <= after);
    // 5 decode steps of 5 ms between first and last token.
    assert!(
        last - first >= Duration::from_millis(20),
        "{:?}",
        last - first
    );
    // Each was written before the client saw it.
    assert!(first <= events[1].at && last <= events[events.len() - 1].at);
    assert_eq!(handle.timestamps().len(), 1);
    handle.shutdown().await;
}

#[tokio::test]
async fn invalid_settings_are_refused() {
    let config = SimConfig {
        max_running: Some(0),
        ..SimConfig::default()
    };
    let err = sim::serve(config).await.err().expect("refused");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("max_running"));
}

#[test]
fn sim_command_serves_and_rejects_bad_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "max_running: 0\nnot_a_field: 1\n").expect("write");
    assert_cmd::Command::cargo_bin("servebench")
        .expect("binary")
        .args(["sim", "--config"])
        .arg(&bad)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("bad.yaml"));

    let good = dir.path().join("sim.yaml");
    std::fs::write(&good, "model: yaml-model\nmax_running: 4\nfaults:\n  - kind: status\n    at: [1]\n    status: 503\n").expect("write");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("servebench"))
        .args([
            "sim",
            "--port",
            &port.to_string(),
            "--seed",
            "3",
            "--config",
        ])
        .arg(&good)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let outcome = runtime.block_on(async {
        let base = format!("http://127.0.0.1:{port}");
        let mut ready = false;
        for _ in 0..100 {
            if http().get(format!("{base}/health")).send().await.is_ok() {
                ready = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if !ready {
            return Err("the simulator never became healthy".to_string());
        }
        let models: Value = http()
            .get(format!("{base}/v1/models"))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json_value()
            .await
            .map_err(|e| e.to_string())?;
        let first = http()
            .post(format!("{base}/v1/completions"))
            .json_body(&json!({"prompt": "x", "max_tokens": 1}))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .status();
        Ok((models["data"][0]["id"].clone(), first.as_u16()))
    });
    let _ = child.kill();
    let _ = child.wait();
    let (model, first_status) = outcome.expect("simulator answered");
    assert_eq!(model, "yaml-model");
    assert_eq!(first_status, 503);
}

#[tokio::test]
async fn shutdown_closes_open_streams() {
    let config = SimConfig {
        decode_ms_per_token: Some(50.0),
        ..fast()
    };
    let (base, handle) = start(config).await;
    let response = http()
        .post(format!("{base}/v1/completions"))
        .json_body(
            &json!({"prompt": "x", "max_tokens": 200, "ignore_eos": true,
                           "stream": true}),
        )
        .send()
        .await
        .expect("headers");
    let mut body = response.bytes_stream();
    assert!(
        body.next().await.is_some_and(|chunk| chunk.is_ok()),
        "first event"
    );
    assert_eq!(handle.stats().running, 1);
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), handle.shutdown())
        .await
        .expect("shutdown does not wait for the stream");
    assert!(started.elapsed() < Duration::from_secs(2));
    let mut ended_with_error = false;
    while let Some(chunk) = body.next().await {
        if chunk.is_err() {
            ended_with_error = true;
        }
    }
    assert!(ended_with_error, "the cut stream is visible to the client");
    assert!(
        http().get(format!("{base}/health")).send().await.is_err(),
        "no longer accepting"
    );
}
