//! servebench through real routers (vLLM's and SGLang's, from PyPI) in front of two simulator
//! replicas on loopback: how a policy spreads requests, and what prefix-aware routing buys.
//!
//! Requests per replica and prefix-cache hits come from each replica's own `/metrics`
//! (vLLM's names), scraped before and after the run, never from the router's say-so.

use serde_json::Value;
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

/// What one run through a router gave: the phase, and per replica (requests, prefix hits,
/// prefix queries) over the run.
struct RouterRun {
    phase: Value,
    per_replica: Vec<(f64, f64, f64)>,
}

impl RouterRun {
    fn requests(&self) -> Vec<f64> {
        self.per_replica.iter().map(|r| r.0).collect()
    }

    fn prefix_hit_rate(&self) -> f64 {
        let hits: f64 = self.per_replica.iter().map(|r| r.1).sum();
        let queries: f64 = self.per_replica.iter().map(|r| r.2).sum();
        hits / queries.max(1.0)
    }

    fn ttft_p50(&self) -> f64 {
        self.phase["ttft"]["p50"].as_f64().expect("ttft.p50")
    }
}

const SPREAD_WORKLOAD: &str = "input_tokens: 64\noutput_tokens: 4\nignore_eos: true";
const SHARED_PREFIX_WORKLOAD: &str = "input_tokens: 600\nshared_prefix: {tokens: 512, groups: 8}\noutput_tokens: 4\nignore_eos: true";

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
         workloads:\n  w: {{{}}}\n\
         phases:\n  - {{name: through-router, target: router, workload: w, concurrency: 4, requests: {requests}}}\n",
        router.root,
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
    let per_replica = before
        .iter()
        .zip(&after)
        .map(|(b, a)| {
            (
                delta(b, a, "vllm:request_success_total"),
                delta(b, a, "vllm:prefix_cache_hits_total"),
                delta(b, a, "vllm:prefix_cache_queries_total"),
            )
        })
        .collect();
    let phase = report["phases"][0].clone();
    drop(router);
    replicas.shutdown().await;
    RouterRun { phase, per_replica }
}

async fn round_robin_spreads_evenly(kind: RouterKind) {
    let Some(engines) = RealEngines::find(kind.package()) else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let requests = 40;
    let result = run_through_router(&engines, kind, "round_robin", SPREAD_WORKLOAD, requests).await;
    assert_eq!(
        result.phase["errors"], 0,
        "{kind:?}: {}",
        result.phase["errors_by_kind"]
    );
    assert_eq!(result.phase["requests"], requests);
    let per_replica = result.requests();
    assert_eq!(
        per_replica.iter().sum::<f64>(),
        requests as f64,
        "{kind:?}: the replicas served {per_replica:?}"
    );
    let fair = requests as f64 / per_replica.len() as f64;
    for served in &per_replica {
        assert!(
            (served - fair).abs() <= 0.1 * fair,
            "{kind:?} round_robin: replicas served {per_replica:?}, want {fair} ± 10% each"
        );
    }
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
        assert_eq!(
            r.phase["errors"], 0,
            "{kind:?} {policy}: {}",
            r.phase["errors_by_kind"]
        );
        assert_eq!(
            r.requests().iter().sum::<f64>(),
            requests as f64,
            "{kind:?} {policy}: replicas served {:?}",
            r.requests()
        );
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
