//! The simulator's latency model: prefix cache, queueing beyond max_running, decode slowdown.

use super::*;

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

#[tokio::test]
async fn reset_endpoints_clear_the_prefix_cache() {
    let config = SimConfig {
        prefix_cache: Some(SimPrefixCache {
            capacity_tokens: 4096,
            block_tokens: Some(16),
        }),
        ..fast()
    };
    let (base, handle) = start(config).await;
    let root = base.trim_end_matches("/v1").to_string();
    let prompt = words("p", 40);
    // vLLM's and SGLang's paths both reset; each time the next request is cold again.
    for path in ["/reset_prefix_cache", "/flush_cache"] {
        cached_tokens(&base, &prompt).await;
        assert_eq!(
            cached_tokens(&base, &prompt).await,
            32,
            "warm before {path}"
        );
        let response = http()
            .post(format!("{root}{path}"))
            .send()
            .await
            .expect("response");
        assert_eq!(response.status().as_u16(), 200, "{path}");
        assert_eq!(cached_tokens(&base, &prompt).await, 0, "cold after {path}");
    }
    let get = http()
        .get(format!("{root}/flush_cache"))
        .send()
        .await
        .expect("response");
    assert_eq!(get.status().as_u16(), 405);
    handle.shutdown().await;
}
