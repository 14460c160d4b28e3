//! Reruns that measure the same thing: two runs of one plan against one simulator (its prefix
//! cache on) keep the same cached-token ratio under the default salt; with `salt: none` the
//! second is served from the cache and `compare` puts its latency change down to that.

use std::path::{Path, PathBuf};

use servebench::metrics::conditions::ConditionChange;
use servebench::plan::{
    Api, Dataset, DatasetFormat, SharedPrefix, TokenCount, TokenizerSource, TokenizerSpec, Trace,
    Workload,
};
use servebench::report::compare::gate::Gate;
use servebench::report::compare::{CompareOptions, compare_with};
use servebench::report::{PhaseResult, Report, SaltUsed};
use servebench::runner::RunOptions;
use servebench::sim::tokenizer::{count_chat_tokens, count_text_tokens};
use servebench::workload::{Prompt, PromptInput, PromptSource, WorkloadContext};

async fn simulator() -> (std::net::SocketAddr, servebench::sim::SimHandle) {
    let config: servebench::sim::SimConfig = serde_json::from_value(serde_json::json!({
        "seed": 5,
        "max_running": 8,
        "prefill_tok_s": 4000,
        "decode_ms_per_token": 1,
        "jitter": 0.0,
        "prefix_cache": {"capacity_tokens": 1_000_000, "block_tokens": 16},
    }))
    .expect("simulator settings");
    servebench::sim::serve(config).await.expect("simulator")
}

fn plan(dir: &Path, addr: std::net::SocketAddr, salt: &str, input_tokens: u32) -> PathBuf {
    let path = dir.join(format!("plan-{salt}-{input_tokens}.yaml"));
    let salt_line = if salt == "default" {
        String::new()
    } else {
        format!("    salt: {salt}\n")
    };
    std::fs::write(
        &path,
        format!(
            "version: 1\nname: rerun\nseed: 3\ntargets:\n  sim:\n    base_url: http://{addr}/v1\n    \
             model: sim\n    tokenizer: {{source: simulator}}\nworkloads:\n  chat:\n    \
             input_tokens: {input_tokens}\n    output_tokens: 4\n{salt_line}\
             defaults: {{target: sim, workload: chat}}\nphases:\n  - {{name: c2, concurrency: 2, requests: 16}}\n"
        ),
    )
    .expect("plan");
    path
}

async fn run(plan: &Path, out: &Path, salt: Option<&str>) -> Report {
    let options = RunOptions {
        salt: salt.map(str::to_string),
        ..crate::common::quiet_run_options(plan.to_path_buf(), out)
    };
    servebench::runner::run(options)
        .await
        .expect("run")
        .report
        .expect("report")
}

fn only_phase(report: &Report) -> &PhaseResult {
    &report.phases[0]
}

fn cached_ratio(report: &Report) -> f64 {
    only_phase(report)
        .summary
        .cached_token_ratio
        .expect("the simulator reports cached tokens")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_with_the_default_salt_keep_the_same_cached_ratio() {
    let _exclusive = crate::common::exclusive_run().await;
    let (addr, _sim) = simulator().await;
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(dir.path(), addr, "default", 256);
    let first = run(&plan, &dir.path().join("a"), None).await;
    let second = run(&plan, &dir.path().join("b"), None).await;
    let (a, b) = (cached_ratio(&first), cached_ratio(&second));
    assert!((a - b).abs() <= 0.10, "cached ratio moved: {a} → {b}");
    // The simulator takes `cache_salt`, so the text is the same and only the field differs:
    // equal ratios mean the field reached its cache.
    assert_eq!(
        only_phase(&second).header.prompt_salt,
        Some(SaltUsed::CacheSalt)
    );
    let (pa, pb) = (
        first.provenance.as_ref().unwrap(),
        second.provenance.as_ref().unwrap(),
    );
    assert_ne!(pa.salt, pb.salt, "each run draws its own salt");
    assert_eq!(
        pb.servers[0].engine.as_deref(),
        Some("servebench-sim"),
        "the server named itself"
    );
    assert!(pb.servers[0].engine_version.is_some(), "from /version");
    // Same asked-for work, so compare sets them side by side and names no cache change.
    assert_eq!(
        only_phase(&first).header.work_sha256,
        only_phase(&second).header.work_sha256
    );
    let c = compare_with(
        ("a", &first),
        ("b", &second),
        &[],
        CompareOptions::default(),
    );
    assert!(c.refused.is_empty());
    assert!(
        !c.phases[0]
            .conditions
            .iter()
            .any(ConditionChange::explains_latency)
    );
    assert!(
        c.provenance.is_empty(),
        "one host, one server: {:?}",
        c.provenance
    );
    // Another engine version is shown, not refused.
    let mut upgraded = second.clone();
    upgraded.provenance.as_mut().unwrap().servers[0].engine_version = Some("9.9.9".into());
    let c = compare_with(
        ("a", &first),
        ("b", &upgraded),
        &[],
        CompareOptions::default(),
    );
    assert_eq!(c.phases.len(), 1);
    assert_eq!(c.provenance.len(), 1, "{:?}", c.provenance);
    assert_eq!(c.provenance[0].label, "sim: engine version");
    assert_eq!(c.provenance[0].new.as_deref(), Some("9.9.9"));
    assert!(servebench::report::render_comparison(&c).contains("What differs between the runs"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_salt_on_purpose_meets_the_cache() {
    let _exclusive = crate::common::exclusive_run().await;
    let (addr, _sim) = simulator().await;
    let dir = tempfile::tempdir().unwrap();
    // `cache_salt` with one fixed salt: the second run sends what the first sent.
    let plan = plan(dir.path(), addr, "cache_salt", 256);
    let first = run(&plan, &dir.path().join("a"), Some("fixed")).await;
    let second = run(&plan, &dir.path().join("b"), Some("fixed")).await;
    assert!(cached_ratio(&first) < 0.10, "a cold first run");
    assert!(
        cached_ratio(&second) > 0.80,
        "served from the cache: {}",
        cached_ratio(&second)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn byte_identical_prompts_are_cached_and_no_latency_change_is_called_significant() {
    let _exclusive = crate::common::exclusive_run().await;
    let (addr, _sim) = simulator().await;
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(dir.path(), addr, "none", 256);
    let first = run(&plan, &dir.path().join("a"), None).await;
    let second = run(&plan, &dir.path().join("b"), None).await;
    assert_eq!(only_phase(&second).header.prompt_salt, Some(SaltUsed::None));
    let (a, b) = (cached_ratio(&first), cached_ratio(&second));
    assert!(a < 0.10 && b > 0.80, "cold then cached: {a} → {b}");

    let c = compare_with(
        ("a", &first),
        ("b", &second),
        &[],
        CompareOptions::default(),
    );
    let phase = &c.phases[0];
    assert!(
        phase
            .conditions
            .iter()
            .any(|x| matches!(x, ConditionChange::CacheRatio { .. })),
        "the cache is named: {:?}",
        phase.conditions
    );
    let latency = |m: &&servebench::report::compare::MetricChange| {
        ["ttft.", "e2e.", "tpot."]
            .iter()
            .any(|p| m.metric.starts_with(p))
    };
    assert!(phase.metrics.iter().filter(latency).count() > 0);
    for m in phase.metrics.iter().filter(latency) {
        assert_ne!(m.significant, Some(true), "{} called significant", m.metric);
    }
    let text = servebench::report::render_comparison(&c);
    assert!(text.contains("cache ratio"), "{text}");
    assert!(text.contains("salt: none"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_refuses_phases_that_asked_for_different_work_unless_forced() {
    let _exclusive = crate::common::exclusive_run().await;
    let (addr, _sim) = simulator().await;
    let dir = tempfile::tempdir().unwrap();
    let short = run(
        &plan(dir.path(), addr, "text", 128),
        &dir.path().join("a"),
        None,
    )
    .await;
    let long = run(
        &plan(dir.path(), addr, "text", 256),
        &dir.path().join("b"),
        None,
    )
    .await;
    // Text salt: the prompts still hit their planned sizes.
    for report in [&short, &long] {
        let check = &only_phase(report).prompt_tokens;
        let error = check.relative_error.expect("served prompt tokens");
        assert!(error.abs() < 0.02, "{check:?}");
    }
    let refused = compare_with(("a", &short), ("b", &long), &[], CompareOptions::default());
    assert!(refused.phases.is_empty());
    assert_eq!(refused.refused[0].phase, "c2");
    assert!(servebench::report::render_comparison(&refused).contains("--force"));
    let forced = compare_with(
        ("a", &short),
        ("b", &long),
        &[],
        CompareOptions { force: true },
    );
    assert!(forced.phases[0].forced);
    assert!(servebench::report::render_comparison(&forced).contains("Forced"));

    // A change gate on a phase that asked for different work cannot pass: its change is not
    // a change of the same thing. A value gate still holds on the new run alone.
    let gates: Vec<Gate> = ["ttft.p50 < +1000%", "error_rate <= 0"]
        .iter()
        .map(|g| g.parse().unwrap())
        .collect();
    let gated = compare_with(
        ("a", &short),
        ("b", &long),
        &gates,
        CompareOptions::default(),
    );
    assert!(!gated.passed);
    let change = &gated.gates[0];
    assert!(!change.passed);
    assert!(
        change
            .problem
            .as_deref()
            .unwrap()
            .contains("different work"),
        "{change:?}"
    );
    assert!(gated.gates[1].passed, "{:?}", gated.gates[1]);
    let forced = compare_with(
        ("a", &short),
        ("b", &long),
        &gates,
        CompareOptions { force: true },
    );
    assert!(forced.gates[0].problem.is_none(), "{:?}", forced.gates[0]);
}

fn salted_context(api: Api, salt: Option<&str>) -> WorkloadContext {
    WorkloadContext {
        api,
        tokenizer: TokenizerSpec {
            source: TokenizerSource::Simulator,
            path: None,
            chat_template: None,
        },
        plan_dir: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/workload"),
        seed: 5,
        base_url: "http://127.0.0.1:9/v1".into(),
        model: "sim".into(),
        text_salt: salt.map(str::to_string),
    }
}

fn text_of(prompt: &Prompt) -> String {
    match &prompt.input {
        PromptInput::Messages(m) => m
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        PromptInput::Text(t) => t.clone(),
        PromptInput::Batch { texts, .. } => texts.join("\n"),
    }
}

fn served_tokens(prompt: &Prompt) -> u64 {
    match &prompt.input {
        PromptInput::Messages(m) => count_chat_tokens(m.iter().map(|m| m.content.as_str())),
        PromptInput::Text(t) => count_text_tokens(t),
        PromptInput::Batch { texts, .. } => texts.iter().map(|t| count_text_tokens(t)).sum(),
    }
}

#[test]
fn a_text_salt_leads_every_prompt_and_keeps_sizes_and_shared_prefixes() {
    for (what, workload) in salt_workloads() {
        for api in [Api::Chat, Api::Completions] {
            assert_salted_prompts(what, &workload, api);
        }
    }
}

/// A synthetic workload with a shared prefix, one without (the nonce carries the salt: no
/// token more, so the smallest prompt a plan could ask for before salts still fits), a
/// dataset and a trace.
fn salt_workloads() -> [(&'static str, Workload); 4] {
    let target = 300u64;
    let synthetic = Workload {
        input_tokens: Some(TokenCount::Fixed(target as u32)),
        shared_prefix: Some(SharedPrefix {
            tokens: 100,
            groups: 1,
        }),
        ..Workload::default()
    };
    let dataset = Workload {
        dataset: Some(Dataset {
            path: "prompts.jsonl".into(),
            format: DatasetFormat::Jsonl,
            min_input_tokens: None,
            max_input_tokens: None,
            sample: None,
            multi_turn: false,
            generate: None,
            rows: None,
            seed: None,
        }),
        ..Workload::default()
    };
    let trace = Workload {
        trace: Some(Trace {
            path: "trace.jsonl".into(),
            format: Default::default(),
            time_scale: 1.0,
            block_tokens: Some(100),
        }),
        ..Workload::default()
    };
    let small = Workload {
        input_tokens: Some(TokenCount::Fixed(16)),
        ..Workload::default()
    };
    [
        ("small", small),
        ("synthetic", synthetic),
        ("dataset", dataset),
        ("trace", trace),
    ]
}

/// The workload's prompts for `api` under no salt and two: the same salt gives the same
/// prompt, another salt another; sizes hold and (synthetic) the shared prefix stays shared.
fn assert_salted_prompts(what: &str, workload: &Workload, api: Api) {
    let source = |salt| PromptSource::new(workload, &salted_context(api, salt)).unwrap();
    let (plain, a, a_again, b) = (
        source(None),
        source(Some("a")),
        source(Some("a")),
        source(Some("b")),
    );
    for i in 0..4 {
        let (p, pa, pb) = (plain.prompt(i), a.prompt(i), b.prompt(i));
        assert_eq!(pa, a_again.prompt(i), "{what}: one salt, one prompt");
        assert_ne!(text_of(&pa), text_of(&pb), "{what}: salts differ");
        assert_ne!(text_of(&pa), text_of(&p), "{what}: salted");
        for prompt in [&p, &pa, &pb] {
            // The salt is counted: prompts still hit their planned sizes.
            assert_eq!(
                Some(served_tokens(prompt)),
                prompt.planned_prompt_tokens,
                "{what} {api:?}"
            );
        }
        if what != "dataset" {
            assert_eq!(pa.planned_prompt_tokens, p.planned_prompt_tokens);
        }
        // Another run's prompt differs from the first word of the user's text.
        let first_word = |p: &Prompt| text_of(p).split_whitespace().next().map(str::to_string);
        if what != "dataset" {
            assert_ne!(first_word(&pa), first_word(&pb), "{what} {api:?}");
        }
    }
    if what == "synthetic" {
        // One group: every prompt of a run starts with the same salt and prefix.
        let head = |p: &Prompt| -> Vec<String> {
            text_of(p)
                .split_whitespace()
                .take(100)
                .map(str::to_string)
                .collect()
        };
        assert_eq!(head(&a.prompt(0)), head(&a.prompt(1)));
        assert_ne!(head(&a.prompt(0)), head(&b.prompt(0)));
    }
}

#[test]
fn a_body_cache_salt_the_run_would_replace_is_refused() {
    let plan = |salt: &str| {
        serde_json::json!({
            "version": 1,
            "name": "own-salt",
            "targets": {"t": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}},
            "workloads": {"w": {"input_tokens": 32, "salt": salt, "body": {"cache_salt": "mine"}}},
            "defaults": {"target": "t", "workload": "w"},
            "phases": [{"name": "a", "concurrency": 1, "requests": 1}],
        })
    };
    let options = servebench::plan::ExpandOptions::default();
    let refused = match servebench::plan::prepare_from_value(plan("auto"), "plan", &options) {
        Ok(_) => panic!("a body cache_salt under `salt: auto` was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(refused.contains("cache_salt"), "{refused}");
    assert!(servebench::plan::prepare_from_value(plan("none"), "plan", &options).is_ok());
}
