//! The simulator's wire format: chat and completions streams, reasoning dialects, usage placement, output lengths.

use super::*;

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
