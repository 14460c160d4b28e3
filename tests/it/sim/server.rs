//! The simulator as a server: /metrics, tokenize/models/health, send timestamps, settings, the sim command, shutdown.

use super::*;

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
    let (typed, samples) = prometheus_text(&text);
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

/// A Prometheus metric or label name.
fn metric_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// The families `# TYPE` names and each sample's value by series, checking every line is
/// well formed Prometheus text and every sample follows its family's `TYPE`.
fn prometheus_text(
    text: &str,
) -> (
    std::collections::HashSet<String>,
    std::collections::HashMap<String, f64>,
) {
    let mut typed = std::collections::HashSet::new();
    let mut samples = std::collections::HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            let name = parts.next().unwrap_or("");
            let kind = parts.next().unwrap_or("");
            assert!(metric_name_ok(name), "{line}");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            typed.insert(name.to_string());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            assert!(
                metric_name_ok(rest.split(' ').next().unwrap_or("")),
                "{line}"
            );
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("sample line");
        let value: f64 = value.parse().expect("numeric sample");
        let name = series.split('{').next().unwrap_or("");
        assert!(metric_name_ok(name), "{line}");
        if let Some(labels) = series.strip_prefix(name)
            && !labels.is_empty()
        {
            assert!(labels.starts_with('{') && labels.ends_with('}'), "{line}");
            for pair in labels[1..labels.len() - 1].split(',') {
                let (key, val) = pair.split_once('=').expect("label pair");
                assert!(metric_name_ok(key), "{line}");
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
    (typed, samples)
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
        .stderr(std::process::Stdio::piped())
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
    let stderr = child.wait_with_output().expect("wait").stderr;
    let (model, first_status) = outcome.expect("simulator answered");
    assert_eq!(model, "yaml-model");
    assert_eq!(first_status, 503);
    // Its first line says which name it serves, and the setting that serves any other.
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(
        stderr.contains(
            "serving model `yaml-model` (404 `model_not_found` for another; \
             `accept_any_model: true` in --config serves any)"
        ),
        "{stderr}"
    );
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

/// Like vLLM, a model the simulator does not serve gets 404 with OpenAI's `model_not_found`
/// on every generating endpoint; a request naming no model gets the served one, and
/// `accept_any_model` serves any name.
#[tokio::test]
async fn an_unknown_model_is_refused_like_a_real_server_unless_any_is_accepted() {
    let chat = |model: Option<&str>| {
        let mut body = json!({"messages": [{"role": "user", "content": "a b"}], "max_tokens": 2});
        if let Some(model) = model {
            body["model"] = json!(model);
        }
        body
    };
    let post = |base: String, path: &'static str, body: Value| async move {
        let response = http()
            .post(format!("{base}{path}"))
            .json_body(&body)
            .send()
            .await
            .expect("response");
        let status = response.status().as_u16();
        (status, response.json_value().await.expect("json"))
    };
    let (base, handle) = start(SimConfig {
        model: Some("tiny".into()),
        ..fast()
    })
    .await;
    let (status, body) = post(base.clone(), "/v1/chat/completions", chat(Some("gpt-4"))).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "model_not_found");
    assert_eq!(body["error"]["param"], "model");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`gpt-4` does not exist")
            && message.contains("serves `tiny`")
            && message.contains("set `accept_any_model: true`"),
        "the setting that accepts any name is named: {message}"
    );
    for (path, request) in [
        (
            "/v1/completions",
            json!({"model": "gpt-4", "prompt": "a b", "max_tokens": 2}),
        ),
        ("/v1/responses", json!({"model": "gpt-4", "input": "a b"})),
        ("/v1/embeddings", json!({"model": "gpt-4", "input": "a b"})),
        (
            "/v1/rerank",
            json!({"model": "gpt-4", "query": "a", "documents": ["b"]}),
        ),
    ] {
        let (status, body) = post(base.clone(), path, request).await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (404, &json!("model_not_found")),
            "{path}: {body}"
        );
    }
    assert_eq!(
        post(base.clone(), "/v1/chat/completions", chat(Some("tiny")))
            .await
            .0,
        200
    );
    assert_eq!(
        post(base.clone(), "/v1/chat/completions", chat(None))
            .await
            .0,
        200
    );
    handle.shutdown().await;

    let (base, handle) = start(SimConfig {
        model: Some("tiny".into()),
        accept_any_model: Some(true),
        ..fast()
    })
    .await;
    let (status, body) = post(base, "/v1/chat/completions", chat(Some("gpt-4"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["model"], "tiny",
        "the served name, as a server reports it"
    );
    handle.shutdown().await;
}
