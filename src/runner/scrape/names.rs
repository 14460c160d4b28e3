//! The one table of metric names: what vLLM, SGLang, llama.cpp and the vLLM and SGLang
//! routers call the same figures, and which counters say how many requests went where.
//! Metrics not named here are still kept raw (counters by delta) in the report.

/// `(engine, server metric name, normalized name)`. Names ending `_total` are counters (the
/// report keeps their delta over the phase), and so are the `_sum` and `_count` of a histogram
/// listed here (cumulative too: their deltas give how many requests the server timed and
/// their mean); the others are gauges (the report keeps their range).
///
/// Meanings differ at the edges: llama.cpp's prompt counter excludes prompt tokens served from
/// its cache, vLLM's and SGLang's include them; llama.cpp's "deferred" requests are those
/// waiting for a free slot, and it counts no requests. KV-cache usage is a 0–1 fraction
/// everywhere; current llama.cpp builds no longer export it (it went with the unified KV
/// cache), older ones do. A router's `requests` counts what it received; which worker served
/// each is in [`WORKER_REQUEST_COUNTERS`]. The router names are what vllm-router 0.1.17 and
/// sglang-router 0.3.2 (whose gateway calls itself `smg`) export, and vLLM's what its CPU
/// build 0.32.0 exports (`tests/fixtures/metrics/`).
pub const METRIC_NAMES: &[(&str, &str, &str)] = &[
    ("vllm", "vllm:prompt_tokens_total", "prompt_tokens"),
    ("sglang", "sglang:prompt_tokens_total", "prompt_tokens"),
    ("llamacpp", "llamacpp:prompt_tokens_total", "prompt_tokens"),
    ("vllm", "vllm:generation_tokens_total", "generation_tokens"),
    (
        "sglang",
        "sglang:generation_tokens_total",
        "generation_tokens",
    ),
    (
        "llamacpp",
        "llamacpp:tokens_predicted_total",
        "generation_tokens",
    ),
    ("vllm", "vllm:request_success_total", "requests"),
    ("sglang", "sglang:num_requests_total", "requests"),
    ("vllm-router", "vllm_router_requests_total", "requests"),
    ("sglang-router", "smg_router_requests_total", "requests"),
    ("vllm", "vllm:num_requests_running", "requests_running"),
    ("sglang", "sglang:num_running_reqs", "requests_running"),
    (
        "llamacpp",
        "llamacpp:requests_processing",
        "requests_running",
    ),
    ("vllm", "vllm:num_requests_waiting", "requests_waiting"),
    ("sglang", "sglang:num_queue_reqs", "requests_waiting"),
    ("llamacpp", "llamacpp:requests_deferred", "requests_waiting"),
    ("vllm", "vllm:kv_cache_usage_perc", "kv_cache_usage"),
    // vLLM before its V1 engine.
    ("vllm", "vllm:gpu_cache_usage_perc", "kv_cache_usage"),
    ("sglang", "sglang:token_usage", "kv_cache_usage"),
    (
        "llamacpp",
        "llamacpp:kv_cache_usage_ratio",
        "kv_cache_usage",
    ),
    ("vllm-router", "vllm_router_active_workers", "workers"),
    ("sglang-router", "smg_worker_pool_size", "workers"),
    // Prompt tokens served from the prefix cache (equal to the prefix-cache hits).
    (
        "vllm",
        "vllm:prompt_tokens_cached_total",
        "cached_prompt_tokens",
    ),
    // Histograms: the engine's own TTFT (arrival to first token, queue included) and queue.
    (
        "vllm",
        "vllm:time_to_first_token_seconds_sum",
        "ttft_seconds_sum",
    ),
    (
        "vllm",
        "vllm:time_to_first_token_seconds_count",
        "ttft_seconds_count",
    ),
    (
        "sglang",
        "sglang:time_to_first_token_seconds_sum",
        "ttft_seconds_sum",
    ),
    (
        "sglang",
        "sglang:time_to_first_token_seconds_count",
        "ttft_seconds_count",
    ),
    (
        "vllm",
        "vllm:request_queue_time_seconds_sum",
        "queue_seconds_sum",
    ),
    (
        "vllm",
        "vllm:request_queue_time_seconds_count",
        "queue_seconds_count",
    ),
    // Speculative decoding: verify steps, draft tokens proposed and accepted.
    (
        "vllm",
        "vllm:spec_decode_num_drafts_total",
        "spec_decode_drafts",
    ),
    (
        "vllm",
        "vllm:spec_decode_num_draft_tokens_total",
        "spec_decode_draft_tokens",
    ),
    (
        "vllm",
        "vllm:spec_decode_num_accepted_tokens_total",
        "spec_decode_accepted_tokens",
    ),
];

/// A router's per-worker request counter, by its `worker` label (the worker's URL); the
/// first found on the gateway gives the requests per backend. sglang-router 0.3.2 keeps no
/// per-worker request count but its circuit breaker's outcomes (success and failure) per
/// worker, one per request routed there; `sgl_router_processed_requests_total` is older
/// sglang-router releases' name.
pub const WORKER_REQUEST_COUNTERS: &[&str] = &[
    "vllm_router_processed_requests_total",
    "smg_worker_cb_outcomes_total",
    "sgl_router_processed_requests_total",
];

/// Backend counters summed over the backends into the phase figures.
pub const SUMMED_COUNTERS: &[&str] = &[
    "vllm:prefix_cache_hits_total",
    "vllm:prefix_cache_queries_total",
    "vllm:num_preemptions_total",
];

/// Gauges kept besides those in [`METRIC_NAMES`].
const EXTRA_GAUGES: &[&str] = &["sglang:cache_hit_rate"];

pub fn is_counter(name: &str) -> bool {
    name.ends_with("_total") || is_histogram_part(name)
}

/// A histogram's `_sum` or `_count` listed in [`METRIC_NAMES`]: only those are kept, so the
/// report does not grow by every histogram a server exports.
fn is_histogram_part(name: &str) -> bool {
    (name.ends_with("_sum") || name.ends_with("_count"))
        && METRIC_NAMES.iter().any(|(_, listed, _)| *listed == name)
}

pub fn gauge_names() -> impl Iterator<Item = &'static str> {
    METRIC_NAMES
        .iter()
        .map(|(_, name, _)| *name)
        .filter(|name| !is_counter(name))
        .chain(EXTRA_GAUGES.iter().copied())
}

/// The server names of one normalized figure, in the table's order: the first a server
/// exports is the one read.
pub fn server_names(normalized: &str) -> impl Iterator<Item = &'static str> + '_ {
    METRIC_NAMES
        .iter()
        .filter(move |(_, _, n)| *n == normalized)
        .map(|(_, name, _)| *name)
}

/// A backend's own request count under its engine's name, where it keeps one.
pub fn engine_request_counters() -> impl Iterator<Item = &'static str> {
    METRIC_NAMES
        .iter()
        .filter(|(engine, _, normalized)| *normalized == "requests" && !engine.contains("router"))
        .map(|(_, name, _)| *name)
}

/// Prefix-cache (hits, queries) counter pairs, newest vLLM names first.
pub const PREFIX_CACHE_COUNTERS: &[(&str, &str)] = &[
    (
        "vllm:prefix_cache_hits_total",
        "vllm:prefix_cache_queries_total",
    ),
    (
        "vllm:gpu_prefix_cache_hits_total",
        "vllm:gpu_prefix_cache_queries_total",
    ),
];

#[cfg(test)]
mod tests;
