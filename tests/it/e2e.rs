//! The parts together over loopback: the client against the simulator's ground truth, and
//! workloads hitting their planned sizes, caches and schedules in real runs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use servebench::client::Client;
use servebench::figure::Figure;
use servebench::plan::{Api, TokenizerSource, TokenizerSpec, Workload};
use servebench::report::Report;
use servebench::runner::endpoint::client_config;
use servebench::runner::run;
use servebench::sim::{ReasoningField, SimConfig, SimDialect, serve};
use servebench::workload::{PromptSource, WorkloadContext};

fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn workload(yaml: &str) -> Workload {
    serde_saphyr::from_str(yaml).expect("test workload parses")
}

fn prompts(workload: &Workload, api: Api, base_url: &str) -> PromptSource {
    let context = WorkloadContext {
        api,
        tokenizer: TokenizerSpec {
            source: TokenizerSource::Simulator,
            path: None,
            chat_template: None,
        },
        plan_dir: repo_path("."),
        seed: 11,
        base_url: base_url.to_string(),
        model: "sim".to_string(),
        text_salt: None,
    };
    PromptSource::new(workload, &context).expect("workload builds")
}

fn client(base_url: &str, api: Api, workload: &Workload) -> Client {
    let target = servebench::plan::Target {
        api,
        model: Some("sim".into()),
        ..Default::default()
    };
    Client::new(client_config(&target, base_url.to_string(), workload, 4).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_records_match_the_simulators_ground_truth_at_concurrency_one() {
    let _exclusive = crate::common::exclusive_run().await;
    let config = SimConfig {
        prefill_tok_s: Some(50_000.0),
        decode_ms_per_token: Some(3.0),
        jitter: Some(0.0),
        chunk_tokens: Some(2),
        record_timestamps: Some(true),
        ..SimConfig::default()
    };
    let (addr, sim) = serve(config).await.unwrap();
    let base_url = format!("http://{addr}/v1");
    for api in [Api::Chat, Api::Completions] {
        let w =
            workload("input_tokens: {min: 100, max: 900}\noutput_tokens: 40\nignore_eos: true\n");
        let mut source = prompts(&w, api, &base_url);
        let client = client(&base_url, api, &w);
        let mut ttft_errors_ms = Vec::new();
        for index in 0..20 {
            let prompt = source.next_prompt();
            let origin = Instant::now();
            let record = client.send(index, &prompt, origin).await;
            assert!(record.is_ok(), "{:?}", record.error);
            // Token counts are exact: the prompt was built with the simulator's own rules.
            assert_eq!(
                record.prompt_tokens, prompt.planned_prompt_tokens,
                "{api:?} request {index}"
            );
            assert_eq!(record.output_tokens, Some(40));
            assert_eq!(record.content_chunks, 20, "40 tokens in chunks of 2");
            let truth = sim
                .timestamps_for(record.sent_id())
                .expect("the simulator logged the request");
            let client_start = origin + Duration::from_secs_f64(record.start_offset_ms / 1e3);
            let true_ttft_ms = truth
                .first_content
                .unwrap()
                .duration_since(client_start)
                .as_secs_f64()
                * 1e3;
            let error_ms = record.ttft_ms.unwrap() - true_ttft_ms;
            assert!(
                error_ms >= 0.0,
                "the client saw content {error_ms} ms before it was sent"
            );
            ttft_errors_ms.push(error_ms);
        }
        ttft_errors_ms.sort_by(f64::total_cmp);
        let median = ttft_errors_ms[ttft_errors_ms.len() / 2];
        assert!(
            median < 2.0,
            "{api:?}: median TTFT error {median:.3} ms (all: {ttft_errors_ms:?})"
        );
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_reasoning_dialects_put_first_output_before_first_content() {
    for field in [ReasoningField::ReasoningContent, ReasoningField::Reasoning] {
        let config = SimConfig {
            reasoning_tokens: Some(30),
            decode_ms_per_token: Some(1.0),
            dialect: Some(SimDialect {
                reasoning_field: Some(field),
                ..SimDialect::default()
            }),
            ..SimConfig::default()
        };
        let (addr, sim) = serve(config).await.unwrap();
        let base_url = format!("http://{addr}/v1");
        let w = workload("input_tokens: 64\noutput_tokens: 60\nignore_eos: true\n");
        let mut source = prompts(&w, Api::Chat, &base_url);
        let record = client(&base_url, Api::Chat, &w)
            .send(0, &source.next_prompt(), Instant::now())
            .await;
        sim.shutdown().await;
        assert!(record.is_ok(), "{:?}", record.error);
        let (first_output, ttft) = (
            record.time_to_first_output_ms.unwrap(),
            record.ttft_ms.unwrap(),
        );
        assert!(
            first_output < ttft,
            "{field:?}: first output {first_output} ms, TTFT {ttft} ms"
        );
        assert!(
            record.reasoning_chunks > 0 && record.content_chunks > 0,
            "{field:?}: {record:?}"
        );
    }
}

async fn run_plan(yaml: &str) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(&plan, yaml).unwrap();
    let out = dir.path().join("out");
    let options = crate::common::quiet_run_options(plan, &out);

    run(options).await.unwrap();
    serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulator_targets_serve_exactly_the_planned_prompt_tokens() {
    let report = run_plan(
        "version: 1\nname: exact\nseed: 2\ntargets:\n  chat: {simulator: {decode_ms_per_token: 0.5}}\n  text: {api: completions, simulator: {decode_ms_per_token: 0.5}}\n\
         workloads:\n  normal: {input_tokens: {mean: 300, stddev: 80, min: 50}, output_tokens: 4}\n  lognormal: {input_tokens: {median: 200, sigma: 0.5}, output_tokens: 4}\n  shared: {input_tokens: 400, shared_prefix: {tokens: 300, groups: 3}, output_tokens: 4}\n  turns: {input_tokens: 60, conversation: {turns: 3}, output_tokens: 4}\n\
         phases:\n  - {name: chat-normal, target: chat, workload: normal, concurrency: 4, requests: 30}\n  - {name: text-lognormal, target: text, workload: lognormal, concurrency: 4, requests: 30}\n  - {name: chat-shared, target: chat, workload: shared, concurrency: 4, requests: 30}\n  - {name: chat-turns, target: chat, workload: turns, concurrency: 1, requests: 9}\n",
    )
    .await;
    for phase in &report.phases {
        assert_eq!(phase.summary.errors, 0, "{}", phase.header.phase);
        for record in &phase.request_timings {
            assert!(record.planned_context_tokens.is_some());
            assert_eq!(
                record.prompt_tokens, record.planned_context_tokens,
                "{} request {}",
                phase.header.phase, record.request_index
            );
        }
        assert_eq!(phase.prompt_tokens.relative_error, Some(0.0));
        assert!(!phase.prompt_tokens.warning);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_calibration_against_the_simulators_tokenize_hits_the_plan() {
    let report = run_plan(
        "version: 1\nname: calibrated\ntargets:\n  sim: {simulator: {decode_ms_per_token: 0.5}}\n\
         workloads:\n  w: {input_tokens: 700, output_tokens: 4, tokenizer: {source: server}}\n\
         phases:\n  - {name: a, target: sim, workload: w, concurrency: 2, requests: 10}\n",
    )
    .await;
    let phase = &report.phases[0];
    assert_eq!(phase.summary.errors, 0);
    assert!(
        phase
            .request_timings
            .iter()
            .all(|r| r.prompt_tokens == Some(700)),
        "{:?}",
        phase
            .request_timings
            .iter()
            .map(|r| r.prompt_tokens)
            .collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workload_counted_with_the_wrong_tokenizer_is_flagged_in_the_report() {
    // SmolLM2's chat template adds a ~30-token system prompt the simulator does not: a prompt
    // sized with it reaches the simulator well short of its plan.
    let tokenizer = repo_path("tests/fixtures/tokenizers/smollm2-135m/tokenizer.json");
    let report = run_plan(&format!(
        "version: 1\nname: missed\ntargets:\n  sim: {{simulator: {{decode_ms_per_token: 0.5}}}}\n\
         workloads:\n  w: {{input_tokens: 128, output_tokens: 4, tokenizer: {{source: file, path: {}}}}}\n\
         phases:\n  - {{name: a, target: sim, workload: w, concurrency: 2, requests: 10}}\n",
        tokenizer.display()
    ))
    .await;
    let check = &report.phases[0].prompt_tokens;
    assert!(check.warning, "{check:?}");
    assert_eq!(check.planned_mean, Some(128.0));
    assert!(check.actual_mean.unwrap() != 128.0);
    assert!(check.relative_error.unwrap().abs() > check.tolerance);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_prefixes_hit_the_cache_and_lower_ttft() {
    let _exclusive = crate::common::exclusive_run().await;
    // 2,000-token prompts at 20,000 tok/s: 100 ms of prefill unless the prefix is cached.
    let report = run_plan(
        "version: 1\nname: prefix\ntargets:\n  sim: {simulator: {prefill_tok_s: 20000, decode_ms_per_token: 0.5, jitter: 0, prefix_cache: {capacity_tokens: 1000000}}}\n\
         workloads:\n  unique: {input_tokens: 2000, output_tokens: 4}\n  shared: {input_tokens: 2000, shared_prefix: {tokens: 1900, groups: 2}, output_tokens: 4}\n\
         phases:\n  - {name: unique, target: sim, workload: unique, concurrency: 1, requests: 12}\n  - {name: shared, target: sim, workload: shared, concurrency: 1, requests: 12}\n",
    )
    .await;
    let (unique, shared) = (&report.phases[0], &report.phases[1]);
    assert_eq!(unique.summary.cached_token_ratio.unwrap_or(0.0), 0.0);
    assert!(
        shared.summary.cached_token_ratio.unwrap() > 0.5,
        "{:?}",
        shared.summary.cached_token_ratio
    );
    // Only each group's first request finds nothing cached.
    let cached = shared
        .request_timings
        .iter()
        .filter(|r| r.cached_tokens.unwrap_or(0) > 0)
        .count();
    assert!(cached >= 10, "{cached} of 12 requests hit the cache");
    let (unique_p50, shared_p50) = (
        unique.summary.distribution(Figure::Ttft).unwrap().p50,
        shared.summary.distribution(Figure::Ttft).unwrap().p50,
    );
    assert!(
        shared_p50 < unique_p50 / 2.0,
        "shared-prefix TTFT p50 {shared_p50} s vs unique {unique_p50} s"
    );
    // The simulator's Prometheus counters saw the hits too.
    let hit = shared
        .server_metrics
        .as_ref()
        .and_then(|m| m.prefix_cache_hit_avg)
        .unwrap();
    assert!(hit > 0.5, "prefix_cache_hit_avg {hit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_replay_reproduces_its_arrival_times() {
    let _exclusive = crate::common::exclusive_run().await;
    let trace = repo_path("tests/fixtures/workload/trace.jsonl");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let report = run_plan(&format!(
        "version: 1\nname: replay\ntargets:\n  sim: {{simulator: {{decode_ms_per_token: 0.5, prefix_cache: {{capacity_tokens: 100000}}}}}}\n\
         workloads:\n  mooncake: {{trace: {{path: {}, time_scale: 0.5, block_tokens: 64}}}}\n\
         phases:\n  - {{name: replay, target: sim, workload: mooncake}}\n",
        trace.display()
    ))
    .await;
    let phase = &report.phases[0];
    assert_eq!(
        phase.summary.requests as usize,
        lines.len(),
        "one pass over the trace"
    );
    assert_eq!(phase.summary.errors, 0);
    let first = lines[0]["timestamp"].as_f64().unwrap();
    let mut planned: Vec<f64> = lines
        .iter()
        .map(|l| (l["timestamp"].as_f64().unwrap() - first) * 0.5)
        .collect();
    planned.sort_by(f64::total_cmp);
    let mut actual: Vec<f64> = phase
        .request_timings
        .iter()
        .map(|r| r.start_offset_ms)
        .collect();
    actual.sort_by(f64::total_cmp);
    // Never early; late only by scheduling lag. A wrong time scale would be off by >= 125 ms,
    // while a busy two-core machine can delay a send by a few milliseconds (lag tails are
    // measured by `selftest`, not here).
    let mut worst_lag = 0.0f64;
    for (planned_ms, actual_ms) in planned.iter().zip(&actual) {
        let lag = actual_ms - planned_ms;
        assert!(
            (-1.0..50.0).contains(&lag),
            "sent at {actual_ms:.2} ms, trace says {planned_ms:.2} ms"
        );
        worst_lag = worst_lag.max(lag);
    }
    let reported = phase
        .summary
        .distribution(Figure::SendLag)
        .expect("a replay reports its send lag");
    assert!(
        (reported.max - worst_lag.max(0.0)).abs() < 1.0,
        "reported send lag max {:.2} ms, measured from the records {worst_lag:.2} ms",
        reported.max
    );
    // Equal hash ids give identical token blocks: later requests reuse cached blocks.
    assert!(phase.summary.cached_token_ratio.unwrap_or(0.0) > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_and_burstgpt_csv_traces_replay_at_their_times_with_their_lengths() {
    let _exclusive = crate::common::exclusive_run().await;
    let azure = repo_path("tests/fixtures/workload/azure-trace.csv");
    let burst = repo_path("tests/fixtures/workload/burstgpt.csv");
    let report = run_plan(&format!(
        "version: 1\nname: csv-traces\ntargets:\n  sim: {{simulator: {{decode_ms_per_token: 0.1}}}}\n\
         workloads:\n  azure: {{trace: {{path: {}, format: azure}}, ignore_eos: true}}\n  burst: {{trace: {{path: {}, format: burstgpt, time_scale: 0.5}}, ignore_eos: true}}\n\
         phases:\n  - {{name: azure, target: sim, workload: azure}}\n  - {{name: burst, target: sim, workload: burst}}\n",
        azure.display(),
        burst.display()
    ))
    .await;
    // (offset from the first row, ms, after time_scale; prompt tokens; output tokens) per row
    // the fixture holds; BurstGPT's failed row (0 response tokens) is not replayed.
    type Row = (f64, u64, u64);
    let expected: [(&str, Vec<Row>); 2] = [
        (
            "azure",
            vec![
                (0.0, 374, 44),
                (100.001, 396, 109),
                (250.002, 879, 15),
                (350.0, 91, 38),
                (600.002, 381, 13),
                (650.001, 1313, 5),
            ],
        ),
        (
            "burst",
            vec![
                (0.0, 472, 18),
                (75.0, 1087, 230),
                (200.0, 68, 42),
                (350.0, 1913, 103),
                (425.0, 230, 77),
            ],
        ),
    ];
    for (name, rows) in expected {
        let phase = report
            .phases
            .iter()
            .find(|p| p.header.phase == name)
            .unwrap();
        assert_eq!(phase.summary.errors, 0, "{name}");
        assert_eq!(
            phase.summary.requests as usize,
            rows.len(),
            "{name}: one pass"
        );
        let mut records: Vec<_> = phase.request_timings.iter().collect();
        records.sort_by(|a, b| a.start_offset_ms.total_cmp(&b.start_offset_ms));
        for (r, (at_ms, prompt, output)) in records.iter().zip(&rows) {
            assert_eq!(r.planned_context_tokens, Some(*prompt), "{name}: {r:?}");
            assert_eq!(r.output_tokens, Some(*output), "{name}: {r:?}");
            let lag = r.start_offset_ms - at_ms;
            assert!(
                (-1.0..50.0).contains(&lag),
                "{name}: sent at {:.1} ms, trace says {at_ms} ms",
                r.start_offset_ms
            );
        }
        assert!(
            phase.summary.distribution(Figure::SendLag).is_some(),
            "{name}: a replay reports its send lag"
        );
    }
}
