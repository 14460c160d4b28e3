//! servebench through real routers (vLLM's and SGLang's, from PyPI) in front of two simulator
//! replicas on loopback: how a policy spreads requests, and what prefix-aware routing buys.
//!
//! The plan lists the router's and each replica's `/metrics` under `metrics:`, and the checks
//! read the report: its backend table (requests per replica, from the replicas' own
//! counters), the aggregated prefix-cache hit rate and TTFT. The replicas are also scraped
//! independently around the run, and the report must agree with them.

use serde_json::Value;
use servebench::report::ServerMetrics;
use servebench::runner::run;
use servebench::runner::scrape::{Sample, parse_prometheus};
use servebench::sim::{SimConfig, SimHandle, SimPrefixCache, serve};

use crate::real_support::{RealEngines, Router, RouterKind};

/// Two replicas with a prefix cache that holds about six of the eight shared prefixes
/// (512 tokens each): a replica that sees every prefix keeps evicting them, one that sees
/// half of them keeps them all.
fn replica_config(seed: u64) -> SimConfig {
    SimConfig {
        seed: Some(seed),
        max_running: Some(16),
        prefill_tok_s: Some(5_000.0),
        decode_ms_per_token: Some(1.0),
        decode_ms_per_running: Some(0.0),
        jitter: Some(0.0),
        prefix_cache: Some(SimPrefixCache {
            capacity_tokens: 3072,
            block_tokens: Some(16),
        }),
        ..SimConfig::default()
    }
}

struct Replicas {
    handles: Vec<SimHandle>,
    urls: Vec<String>,
}

impl Replicas {
    async fn start() -> Replicas {
        let mut handles = Vec::new();
        let mut urls = Vec::new();
        for seed in [1, 2] {
            let (addr, handle) = serve(replica_config(seed)).await.expect("simulator starts");
            urls.push(format!("http://{addr}"));
            handles.push(handle);
        }
        Replicas { handles, urls }
    }

    async fn scrape(&self) -> Vec<Sample> {
        let http = reqwest::Client::new();
        let mut samples = Vec::new();
        for url in &self.urls {
            let text = http
                .get(format!("{url}/metrics"))
                .send()
                .await
                .and_then(|r| r.error_for_status())
                .expect("replica /metrics answers")
                .text()
                .await
                .unwrap();
            samples.push(parse_prometheus(&text));
        }
        samples
    }

    async fn shutdown(self) {
        for handle in self.handles {
            handle.shutdown().await;
        }
    }
}

fn delta(before: &Sample, after: &Sample, name: &str) -> f64 {
    after.values.get(name).copied().unwrap_or(0.0) - before.values.get(name).copied().unwrap_or(0.0)
}

/// What one run through a router gave: the report's phase and its server metrics (the
/// router as gateway, each replica as a backend), and the replicas' request counts scraped
/// independently of the run, to check the report against.
struct RouterRun {
    phase: Value,
    metrics: ServerMetrics,
    scraped_requests: Vec<f64>,
}

impl RouterRun {
    /// Requests per backend as the report's backend table gives them, in replica order.
    fn requests(&self) -> Vec<f64> {
        self.metrics.backends.iter().map(|b| b.requests).collect()
    }

    /// The backends' prefix-cache hits over queries, as the report aggregates them.
    fn prefix_hit_rate(&self) -> f64 {
        self.metrics
            .prefix_cache_hit_avg
            .expect("the report aggregates the replicas' prefix-cache hit rate")
    }

    fn ttft_p50(&self) -> f64 {
        self.phase["ttft"]["p50"].as_f64().expect("ttft.p50")
    }
}

const SPREAD_WORKLOAD: &str = "input_tokens: 64\noutput_tokens: 4\nignore_eos: true";
const SHARED_PREFIX_WORKLOAD: &str = "input_tokens: 600\nshared_prefix: {tokens: 512, groups: 8}\noutput_tokens: 4\nignore_eos: true";

/// The plan's `metrics:` list: the router as gateway, the replicas as backends in order.
fn metrics_entries(router: &Router, replicas: &Replicas) -> String {
    let mut entries = format!(
        "      - {{url: {}, role: gateway, name: router}}\n",
        router.metrics_url
    );
    for (i, url) in replicas.urls.iter().enumerate() {
        entries.push_str(&format!(
            "      - {{url: {url}/metrics, role: backend, name: replica-{i}}}\n"
        ));
    }
    entries
}

/// Fresh replicas (cold caches), a router with `policy` in front, one closed-loop phase.
async fn run_through_router(
    engines: &RealEngines,
    kind: RouterKind,
    policy: &str,
    workload: &str,
    requests: u64,
) -> RouterRun {
    let replicas = Replicas::start().await;
    let router = Router::start(engines, kind, policy, &replicas.urls).await;
    let dir = tempfile::tempdir().unwrap();
    let plan = format!(
        "version: 1\nname: router-{policy}\nseed: 5\n\
         targets:\n  router:\n    base_url: {}/v1\n    model: sim\n    tokenizer: {{source: simulator}}\n\
         \x20   metrics:\n{}\
         workloads:\n  w: {{{}}}\n\
         phases:\n  - {{name: through-router, target: router, workload: w, concurrency: 4, requests: {requests}}}\n",
        router.root,
        metrics_entries(&router, &replicas),
        workload.replace('\n', ", "),
    );
    let plan_path = dir.path().join("plan.yaml");
    std::fs::write(&plan_path, plan).unwrap();
    let out = dir.path().join("out");
    let before = replicas.scrape().await;
    run(crate::common::quiet_run_options(plan_path, &out))
        .await
        .expect("the run completes");
    let after = replicas.scrape().await;
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    crate::common::assert_valid_report(&report);
    let scraped_requests = before
        .iter()
        .zip(&after)
        .map(|(b, a)| delta(b, a, "vllm:request_success_total"))
        .collect();
    let phase = report["phases"][0].clone();
    let metrics: ServerMetrics = serde_json::from_value(phase["server_metrics"].clone())
        .unwrap_or_else(|e| panic!("{kind:?}: no server metrics in the report ({e}): {phase}"));
    drop(router);
    replicas.shutdown().await;
    RouterRun {
        phase,
        metrics,
        scraped_requests,
    }
}

/// What every run must show: no errors, no endpoint warnings, one row per replica in the
/// report's backend table, rows that sum to the phase's requests and agree with the
/// replicas' own counters.
fn check_backend_table(kind: RouterKind, policy: &str, r: &RouterRun, requests: u64) {
    assert_eq!(
        r.phase["errors"], 0,
        "{kind:?} {policy}: {}",
        r.phase["errors_by_kind"]
    );
    assert_eq!(r.phase["requests"], requests, "{kind:?} {policy}");
    assert!(
        r.metrics.warnings.is_empty(),
        "{kind:?} {policy}: {:?}",
        r.metrics.warnings
    );
    // The router's own per-worker counter, matched to the replicas by host and port.
    let source = r
        .metrics
        .backend_requests_from
        .as_deref()
        .unwrap_or_default();
    assert!(
        source.starts_with("gateway: "),
        "{kind:?} {policy}: counted from {source:?}"
    );
    let names: Vec<&str> = r.metrics.backends.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["replica-0", "replica-1"], "{kind:?} {policy}");
    assert_eq!(
        r.requests().iter().sum::<f64>(),
        requests as f64,
        "{kind:?} {policy}: the backend table says {:?}",
        r.requests()
    );
    assert_eq!(
        r.requests(),
        r.scraped_requests,
        "{kind:?} {policy}: the report's backend table and the replicas' own counters differ"
    );
    let shares: f64 = r.metrics.backends.iter().filter_map(|b| b.share).sum();
    assert!(
        (shares - 1.0).abs() < 1e-9,
        "{kind:?} {policy}: shares sum to {shares}"
    );
}

async fn round_robin_spreads_evenly(kind: RouterKind) {
    let Some(engines) = RealEngines::find(kind.package()) else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let requests = 40;
    let result = run_through_router(&engines, kind, "round_robin", SPREAD_WORKLOAD, requests).await;
    check_backend_table(kind, "round_robin", &result, requests);
    let per_replica = result.requests();
    println!(
        "{kind:?} round_robin: requests per replica {per_replica:?}, skew {:?}",
        result.metrics.backend_skew
    );
    let fair = requests as f64 / per_replica.len() as f64;
    for served in &per_replica {
        assert!(
            (served - fair).abs() <= 0.1 * fair,
            "{kind:?} round_robin: replicas served {per_replica:?}, want {fair} ± 10% each"
        );
    }
    let skew = result.metrics.backend_skew.expect("a skew figure");
    assert!(skew <= 1.1, "{kind:?} round_robin: skew {skew}");
}

async fn cache_aware_beats_random_on_shared_prefixes(kind: RouterKind) {
    let Some(engines) = RealEngines::find(kind.package()) else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let requests = 96;
    let random =
        run_through_router(&engines, kind, "random", SHARED_PREFIX_WORKLOAD, requests).await;
    let aware = run_through_router(
        &engines,
        kind,
        "cache_aware",
        SHARED_PREFIX_WORKLOAD,
        requests,
    )
    .await;
    for (policy, r) in [("random", &random), ("cache_aware", &aware)] {
        check_backend_table(kind, policy, r, requests);
    }
    let summary = format!(
        "{kind:?}: prefix-cache hit rate random {:.3} vs cache_aware {:.3}; TTFT p50 random {:.4} vs cache_aware {:.4}; requests per replica random {:?}, cache_aware {:?}",
        random.prefix_hit_rate(),
        aware.prefix_hit_rate(),
        random.ttft_p50(),
        aware.ttft_p50(),
        random.requests(),
        aware.requests(),
    );
    println!("{summary}");
    assert!(
        aware.prefix_hit_rate() > random.prefix_hit_rate(),
        "{summary}"
    );
    assert!(aware.ttft_p50() < random.ttft_p50(), "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_router_round_robin_spreads_requests_evenly() {
    round_robin_spreads_evenly(RouterKind::Vllm).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sglang_router_round_robin_spreads_requests_evenly() {
    round_robin_spreads_evenly(RouterKind::Sglang).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_router_cache_aware_beats_random_on_shared_prefixes() {
    cache_aware_beats_random_on_shared_prefixes(RouterKind::Vllm).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sglang_router_cache_aware_beats_random_on_shared_prefixes() {
    cache_aware_beats_random_on_shared_prefixes(RouterKind::Sglang).await;
}

/// A session workload through a router with `policy`: the sessions each replica served, as
/// its own request log shows them (a session is known by its first user message, which
/// every turn repeats). Turns per session, sessions, closed-loop concurrency.
async fn sessions_through_router(
    engines: &RealEngines,
    policy: &str,
    (turns, sessions, concurrency): (u64, u64, u64),
) -> Vec<std::collections::BTreeMap<String, u64>> {
    let mut handles = Vec::new();
    let mut urls = Vec::new();
    for seed in [1, 2] {
        let config = SimConfig {
            record_requests: Some(true),
            ..replica_config(seed)
        };
        let (addr, handle) = serve(config).await.expect("simulator starts");
        urls.push(format!("http://{addr}"));
        handles.push(handle);
    }
    let router = Router::start(engines, RouterKind::Vllm, policy, &urls).await;
    let dir = tempfile::tempdir().unwrap();
    let plan = format!(
        "version: 1\nname: affinity-{policy}\nseed: 8\n\
         targets:\n  router: {{base_url: {}/v1, model: sim, tokenizer: {{source: simulator}}}}\n\
         workloads:\n  w:\n    input_tokens: 200\n    output_tokens: 8\n    ignore_eos: true\n\
         \x20   session: {{turns: {turns}, user_tokens: 16, affinity_header: x-session-id}}\n\
         phases:\n  - {{name: sessions, target: router, workload: w, concurrency: {concurrency}, requests: {}}}\n",
        router.root,
        turns * sessions
    );
    let plan_path = dir.path().join("plan.yaml");
    std::fs::write(&plan_path, plan).unwrap();
    let out = dir.path().join("out");
    run(crate::common::quiet_run_options(plan_path, &out))
        .await
        .expect("the run completes");
    let report = servebench::report::read_report(&out.join("report.json")).unwrap();
    let summary = &report.phases[0].summary;
    assert_eq!(summary.requests, turns * sessions, "{policy}");
    assert_eq!(summary.errors, 0, "{policy}: {:?}", summary.errors_by_cause);
    let mut served = Vec::new();
    for handle in &handles {
        let mut sessions = std::collections::BTreeMap::new();
        for seen in handle.requests() {
            let first = seen
                .messages
                .first()
                .map(|(_, text)| text.clone())
                .expect("a turn holds its session's first message");
            // The router passes the affinity header on to the replica.
            let header = seen.headers.iter().any(|(k, _)| k == "x-session-id");
            assert!(header, "{policy}: no x-session-id at the replica");
            *sessions.entry(first).or_insert(0) += 1;
        }
        served.push(sessions);
    }
    drop(router);
    for handle in handles {
        handle.shutdown().await;
    }
    served
}

/// vLLM's router hashes `x-session-id` (also `session-id`, `x-claude-code-session-id`,
/// `x-user-id`, a body's `session_params.session_id` or `user`) under `consistent_hash`: a
/// session's turns all land on one replica, where round robin splits them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_router_consistent_hash_keeps_each_session_on_one_replica() {
    let Some(engines) = RealEngines::find(RouterKind::Vllm.package()) else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let (turns, sessions) = (4, 8);
    let hashed = sessions_through_router(&engines, "consistent_hash", (turns, sessions, 4)).await;
    println!(
        "consistent_hash: sessions per replica {:?}",
        hashed.iter().map(|s| s.len()).collect::<Vec<_>>()
    );
    let mut seen = std::collections::BTreeSet::new();
    for replica in &hashed {
        for (session, count) in replica {
            assert_eq!(*count, turns, "a session's turns were split: {hashed:?}");
            assert!(seen.insert(session.clone()), "a session on both replicas");
        }
    }
    assert_eq!(seen.len() as u64, sessions);
    // The control: one request at a time, round robin alternates replicas turn by turn, so
    // the same check finds every session split.
    let alternated = sessions_through_router(&engines, "round_robin", (turns, 4, 1)).await;
    for replica in &alternated {
        assert_eq!(replica.len(), 4, "{alternated:?}");
        assert!(replica.values().all(|&n| n == turns / 2), "{alternated:?}");
    }
}
