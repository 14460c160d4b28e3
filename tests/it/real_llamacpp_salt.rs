//! Reruns against a real llama.cpp server (SmolLM2-135M on loopback): under the default salt
//! two runs of one plan keep the same cached-token ratio; with byte-identical prompts asked
//! for, the second run is served from the server's prompt cache and `compare` names it.

use std::path::{Path, PathBuf};

use servebench::metrics::conditions::ConditionChange;
use servebench::report::compare::{CompareOptions, compare_with};
use servebench::report::{Report, SaltUsed};
use servebench::runner::run;

use crate::real_support::{LlamaServer, RealEngines};

/// 128 prompt tokens and 4 output tokens per request fit a 256-token slot.
const CTX_PER_SLOT: u32 = 256;

fn plan(dir: &Path, base_url: &str, salt: &str) -> PathBuf {
    let path = dir.join(format!("rerun-{salt}.yaml"));
    std::fs::write(
        &path,
        format!(
            "version: 1\nname: rerun\nseed: 3\ntargets:\n  llama:\n    base_url: {base_url}\n    \
             tokenizer: {{source: server}}\nworkloads:\n  chat:\n    input_tokens: 128\n    \
             output_tokens: 4\n    temperature: 0\n    ignore_eos: true\n    salt: {salt}\n\
             defaults: {{target: llama, workload: chat}}\n\
             phases:\n  - {{name: c1, concurrency: 1, requests: 8}}\n"
        ),
    )
    .expect("plan");
    path
}

async fn run_plan(plan: &Path, out: &Path) -> Report {
    run(crate::common::quiet_run_options(plan.to_path_buf(), out))
        .await
        .expect("the run completes")
        .report
        .expect("a report")
}

fn cached_ratio(report: &Report) -> f64 {
    report.phases[0]
        .summary
        .cached_token_ratio
        .expect("llama.cpp reports cached prompt tokens")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_reruns_keep_their_cached_ratio_and_identical_prompts_are_named() {
    let Some(engines) = RealEngines::find("llama.cpp (xllamacpp) with SmolLM2-135M") else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let server = LlamaServer::start(&engines, CTX_PER_SLOT).await;
    let dir = tempfile::tempdir().unwrap();

    // The default: llama.cpp takes no `cache_salt`, so the salt leads the text.
    let salted = plan(dir.path(), &server.base_url(), "auto");
    let first = run_plan(&salted, &dir.path().join("a")).await;
    let second = run_plan(&salted, &dir.path().join("b")).await;
    assert_eq!(first.phases[0].header.prompt_salt, Some(SaltUsed::Text));
    let (a, b) = (cached_ratio(&first), cached_ratio(&second));
    assert!(
        (a - b).abs() <= 0.10,
        "the rerun's cached ratio moved: {a:.3} → {b:.3}"
    );
    let identity = &second.provenance.as_ref().expect("provenance").servers[0];
    assert_eq!(identity.engine.as_deref(), Some("llama.cpp"));
    assert_eq!(identity.server_header.as_deref(), Some("llama.cpp"));
    let c = compare_with(
        ("a", &first),
        ("b", &second),
        &[],
        CompareOptions::default(),
    );
    assert!(c.refused.is_empty(), "one plan, one work hash");
    assert!(
        !c.phases[0]
            .conditions
            .iter()
            .any(ConditionChange::explains_latency),
        "{:?}",
        c.phases[0].conditions
    );

    // Byte-identical prompts on purpose: the rerun meets the cache, and compare says so.
    let identical = plan(dir.path(), &server.base_url(), "none");
    let cold = run_plan(&identical, &dir.path().join("c")).await;
    let warm = run_plan(&identical, &dir.path().join("d")).await;
    let (c_ratio, w_ratio) = (cached_ratio(&cold), cached_ratio(&warm));
    let ttft_p50_ms = |r: &Report| {
        r.phases[0]
            .summary
            .distribution(servebench::figure::Figure::Ttft)
            .map(|d| d.p50 * 1e3)
    };
    println!(
        "default salt: cached ratio {a:.3} then {b:.3}; salt: none: {c_ratio:.3} then \
         {w_ratio:.3}, TTFT p50 {:?} ms then {:?} ms",
        ttft_p50_ms(&cold),
        ttft_p50_ms(&warm)
    );
    assert!(
        w_ratio - c_ratio > 0.5,
        "the rerun was not served from the cache: {c_ratio:.3} → {w_ratio:.3}"
    );
    let c = compare_with(("c", &cold), ("d", &warm), &[], CompareOptions::default());
    let phase = &c.phases[0];
    assert!(
        phase
            .conditions
            .iter()
            .any(|x| matches!(x, ConditionChange::CacheRatio { .. })),
        "{:?}",
        phase.conditions
    );
    let ttft = phase
        .metrics
        .iter()
        .find(|m| m.metric == "ttft.p50")
        .expect("ttft.p50 compared");
    assert_ne!(ttft.significant, Some(true));
    assert_eq!(
        ttft.note,
        Some(servebench::report::compare::untested::Untested::CacheMoved)
    );
    let text = servebench::report::render_comparison(&c);
    assert!(text.contains("cache ratio"), "{text}");
}
