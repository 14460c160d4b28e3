//! servebench against a real llama.cpp server (SmolLM2-135M on loopback): errors, prompt
//! sizing, output lengths, `/metrics` and the client-versus-server timing gap.
//!
//! The report is read as JSON so these tests name the report's fields as a reader does.

use std::path::Path;

use serde_json::Value;
use servebench::plan::ExpandOptions;
use servebench::runner::{RunOptions, run};

use crate::real_support::{Checks, LlamaServer, RealEngines, repo_path};

/// Context per slot: the plan's 64 + 8 tokens and the capacity run's 96 + 8 fit.
const CTX_PER_SLOT: u32 = 256;
const OUTPUT_TOKENS: u64 = 8;
const REQUESTS_PER_PHASE: u64 = 30;

fn options(plan: &str, out: &Path, set: &[String], target: String) -> RunOptions {
    RunOptions {
        expand: ExpandOptions {
            set: set.to_vec(),
            target_overrides: vec![target],
            ..ExpandOptions::default()
        },
        ..crate::common::quiet_run_options(repo_path(plan), out)
    }
}

fn read_report(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("report.json")).expect("report.json written");
    serde_json::from_str(&text).expect("report.json is JSON")
}

fn as_u64(v: &Value) -> Option<u64> {
    v.as_u64()
}

/// Run plans/real-llamacpp.yaml (c1, c2, c4) against `server` with `tokenizer`.
async fn run_llamacpp_plan(server: &LlamaServer, tokenizer: &str) -> (Value, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let set = [
        format!("tokenizer={tokenizer}"),
        format!("requests={REQUESTS_PER_PHASE}"),
        format!("output_tokens={OUTPUT_TOKENS}"),
    ];
    run(options(
        "plans/real-llamacpp.yaml",
        out.path(),
        &set,
        format!("llama={}", server.base_url()),
    ))
    .await
    .expect("the run completes");
    (read_report(out.path()), out)
}

/// Prompts within 1% of plan, output = max_tokens from usage, on every successful request.
fn check_sizes(checks: &mut Checks, phase: &Value, output_tokens: Option<u64>) {
    let name = phase["phase"].as_str().unwrap_or("?").to_string();
    let records = phase["request_timings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ok: Vec<&Value> = records
        .iter()
        .filter(|r| r.get("error").is_none_or(Value::is_null))
        .collect();
    checks.check(!ok.is_empty(), || format!("{name}: no successful request"));
    for r in &ok {
        let index = &r["request_index"];
        let (planned, served) = (
            r["planned_context_tokens"].as_f64(),
            r["prompt_tokens"].as_f64(),
        );
        checks.check(
            matches!((planned, served), (Some(p), Some(s)) if (s - p).abs() <= 0.01 * p),
            || format!("{name} request {index}: prompt tokens {served:?}, planned {planned:?}"),
        );
        if let Some(expected) = output_tokens {
            checks.check(as_u64(&r["output_tokens"]) == Some(expected), || {
                format!(
                    "{name} request {index}: output tokens {}, max_tokens {expected}",
                    r["output_tokens"]
                )
            });
            checks.check(r["output_token_source"] == "usage", || {
                format!(
                    "{name} request {index}: output_token_source {}",
                    r["output_token_source"]
                )
            });
        }
    }
    let relative = phase["prompt_tokens"]["relative_error"].as_f64();
    checks.check(relative.is_some_and(|e| e.abs() <= 0.01), || {
        format!("{name}: phase prompt_tokens.relative_error {relative:?}, want within 1%")
    });
}

/// No errors over the phase's requests, and the connection counters reported.
fn check_errors_and_connections(checks: &mut Checks, phase: &Value, min_requests: u64) {
    let name = phase["phase"].as_str().unwrap_or("?").to_string();
    let requests = as_u64(&phase["requests"]).unwrap_or(0);
    checks.check(requests >= min_requests, || {
        format!("{name}: {requests} requests, want at least {min_requests}")
    });
    checks.check(phase["errors"] == 0, || {
        format!(
            "{name}: {} errors ({})",
            phase["errors"], phase["errors_by_kind"]
        )
    });
    for field in ["connections_opened", "connection_retries"] {
        checks.check(as_u64(&phase[field]).is_some(), || {
            format!("{name}: phase field `{field}` missing ({})", phase[field])
        });
    }
    // A record carries `connection_retries` only when it was retried (at most once); the
    // phase's count is their sum.
    let records = phase["request_timings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let retries: Vec<Option<u64>> = records
        .iter()
        .map(|r| match &r["connection_retries"] {
            Value::Null => Some(0),
            v => v.as_u64(),
        })
        .collect();
    checks.check(retries.iter().all(|r| matches!(r, Some(0 | 1))), || {
        format!("{name}: record connection_retries not 0 or 1: {retries:?}")
    });
    if let Some(phase_retries) = as_u64(&phase["connection_retries"]) {
        let sum: u64 = retries.iter().flatten().sum();
        checks.check(sum == phase_retries, || {
            format!("{name}: records hold {sum} connection retries, the phase {phase_retries}")
        });
    }
}

/// `/metrics` scraped with llama.cpp's names mapped to the normalized fields.
fn check_server_metrics(checks: &mut Checks, phase: &Value) {
    let name = phase["phase"].as_str().unwrap_or("?").to_string();
    let metrics = &phase["server_metrics"];
    checks.check(metrics.is_object(), || {
        format!("{name}: server_metrics missing ({metrics})")
    });
    checks.check(metrics["engine"] == "llamacpp", || {
        format!("{name}: server_metrics.engine {}", metrics["engine"])
    });
    let counters = &metrics["normalized_counter_deltas"];
    let generated = counters["generation_tokens"].as_f64();
    let output_sum: u64 = phase["request_timings"]
        .as_array()
        .map(|rs| rs.iter().filter_map(|r| as_u64(&r["output_tokens"])).sum())
        .unwrap_or(0);
    // The server generated exactly what the successful requests received.
    checks.check(generated == Some(output_sum as f64), || {
        format!("{name}: generation_tokens delta {generated:?}, records hold {output_sum}")
    });
    checks.check(
        counters["prompt_tokens"].as_f64().is_some_and(|t| t > 0.0),
        || format!("{name}: prompt_tokens delta {}", counters["prompt_tokens"]),
    );
    for gauge in ["requests_running", "requests_waiting"] {
        checks.check(
            metrics["normalized_gauges"][gauge]["max"].is_number(),
            || format!("{name}: normalized gauge {gauge} missing"),
        );
    }
}

/// The server's own `timings` per request and the phase's client-minus-server gap.
fn check_server_timing(checks: &mut Checks, phase: &Value) {
    let name = phase["phase"].as_str().unwrap_or("?").to_string();
    let records = phase["request_timings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ok: Vec<&Value> = records
        .iter()
        .filter(|r| r.get("error").is_none_or(Value::is_null))
        .collect();
    for field in ["server_prompt_ms", "server_total_ms"] {
        let without = ok.iter().filter(|r| !r[field].is_number()).count();
        checks.check(without == 0, || {
            format!(
                "{name}: {without} of {} successful records lack `{field}`",
                ok.len()
            )
        });
    }
    let gap = &phase["server_timing_gap"];
    checks.check(as_u64(&gap["requests"]) == Some(ok.len() as u64), || {
        format!(
            "{name}: server_timing_gap.requests {}, successful requests {}",
            gap["requests"],
            ok.len()
        )
    });
    // The latency split's parts add up to e2e, none claimed beyond it (1 ms slack).
    let split = &gap["split"];
    let part = |f: &str| split[f].as_f64().unwrap_or(f64::NAN);
    let parts = [
        "connect_ms",
        "tls_ms",
        "server_prefill_ms",
        "server_decode_ms",
        "frontend_network_ms",
    ]
    .iter()
    .map(|f| part(f))
    .sum::<f64>();
    checks.check((parts - part("e2e_ms")).abs() < 1e-6, || {
        format!("{name}: split parts {parts} vs e2e {}", part("e2e_ms"))
    });
    checks.check(part("frontend_network_min_ms") > -1.0, || {
        format!("{name}: a server time exceeds the client's e2e: {split}")
    });
    for field in ["ttft_minus_server_prompt_ms", "e2e_minus_server_total_ms"] {
        // What the client saw contains what the server measured: the gap is not negative.
        let p50 = phase[field]["p50"].as_f64();
        checks.check(p50.is_some_and(|v| v >= 0.0), || {
            format!("{name}: {field}.p50 {p50:?}")
        });
        checks.check(phase[field]["p99"].is_number(), || {
            format!("{name}: {field}.p99 missing")
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_at_concurrency_1_2_4_with_the_servers_tokenizer() {
    let Some(engines) = RealEngines::find("llama.cpp (xllamacpp) with SmolLM2-135M") else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let server = LlamaServer::start(&engines, CTX_PER_SLOT).await;
    let (report, _out) = run_llamacpp_plan(&server, "{source: server}").await;
    let phases = report["phases"].as_array().expect("phases");
    let names: Vec<&str> = phases.iter().filter_map(|p| p["phase"].as_str()).collect();
    assert_eq!(names, ["c1", "c2", "c4"]);
    let mut checks = Checks::default();
    for phase in phases {
        check_sizes(&mut checks, phase, Some(OUTPUT_TOKENS));
        check_server_metrics(&mut checks, phase);
        check_errors_and_connections(&mut checks, phase, REQUESTS_PER_PHASE);
        check_server_timing(&mut checks, phase);
    }
    crate::common::assert_valid_report(&report);
    checks.finish("llama.cpp, tokenizer: server");
    // The same server: a generated copy set scored at temperature 0, twice.
    let first = scored_copy_run(&server).await;
    let second = scored_copy_run(&server).await;
    println!(
        "llama.cpp copy set: {} of {} correct, then {} of {}",
        first.0, first.1, second.0, second.1
    );
    assert!(first.0 >= 1, "no reply copied its words");
    assert_eq!(first, second, "temperature 0 scores the same twice");
}

/// A generated copy-the-words set (20 rows, no salt so both runs send the same prompts)
/// against `server`. SmolLM2-135M answers `Write the words green house` with `The words
/// "green house" are …`, so the score reads the first quoted span (`{regex: …}`). The kept
/// replies are read back from the run's records and scored again here, independently,
/// before (correct, scored) is returned.
async fn scored_copy_run(server: &LlamaServer) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "version: 1
name: llamacpp-copy
targets:
  llama: {{base_url: \"{}\", model: smollm2}}
workloads:
  copy: {{dataset: {{generate: copy, rows: 20, seed: 1}}, output_tokens: 16, temperature: 0, salt: none, score: {{regex: '\"([^\"]+)\"'}}}}
phases:
  - {{name: copy, target: llama, workload: copy, concurrency: 2, requests: 20}}
",
        server.base_url()
    );
    let report = crate::common::run_plan_text(dir.path(), &yaml).await;
    let accuracy = report.phases[0].summary.accuracy.clone().expect("scored");
    assert_eq!(accuracy.scored, 20, "{accuracy:?}");
    let rows = crate::common::record_rows(&dir.path().join("out"));
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let mut correct = 0;
    for row in rows.iter().filter(|r| r.phase == "copy") {
        let r = &row.record;
        let (reply, expected) = (r.reply.as_deref().unwrap(), r.expected.as_deref().unwrap());
        let quoted = reply
            .split('"')
            .nth(1)
            .filter(|_| reply.matches('"').count() >= 2);
        let right = quoted.is_some_and(|q| !q.is_empty() && words(q) == words(expected));
        assert_eq!(r.correct, Some(right), "{reply:?} against {expected:?}");
        correct += u64::from(right);
    }
    assert_eq!(correct, accuracy.correct);
    (accuracy.correct, accuracy.scored)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_prompts_hit_the_plan_with_the_models_tokenizer_file_and_template() {
    let Some(engines) = RealEngines::find("llama.cpp (xllamacpp) with SmolLM2-135M") else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let server = LlamaServer::start(&engines, CTX_PER_SLOT).await;
    // Paths are relative to the plan file (plans/).
    let fixture = "../tests/fixtures/tokenizers/smollm2-135m";
    let tokenizer = format!(
        "{{source: file, path: {fixture}/tokenizer.json, chat_template: {fixture}/chat_template.jinja}}"
    );
    let (report, _out) = run_llamacpp_plan(&server, &tokenizer).await;
    let phases = report["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 3);
    let mut checks = Checks::default();
    for phase in phases {
        check_sizes(&mut checks, phase, Some(OUTPUT_TOKENS));
        check_errors_and_connections(&mut checks, phase, REQUESTS_PER_PHASE);
    }
    checks.finish("llama.cpp, tokenizer: file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_sessions_carry_its_replies_and_reuse_the_cached_prefix() {
    let Some(engines) = RealEngines::find("llama.cpp (xllamacpp) with SmolLM2-135M") else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let server = LlamaServer::start(&engines, CTX_PER_SLOT).await;
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("sessions.yaml");
    // Three turns fit a slot's context: 60 + 3 × 8 output + 2 × 12 user tokens and the
    // template. One session per slot keeps its prefix in that slot's cache.
    std::fs::write(
        &plan,
        format!(
            "version: 1\nname: llama-sessions\nseed: 4\ntargets:\n  llama: {{base_url: {}}}\n\
             workloads:\n  agent:\n    input_tokens: 60\n    output_tokens: 8\n    ignore_eos: true\n\
             \x20   tokenizer: {{source: server}}\n\
             \x20   session: {{turns: 3, user_tokens: 12, think_time: 10ms, affinity_header: x-session-id}}\n\
             phases:\n  - {{name: sessions, target: llama, workload: agent, concurrency: 2, requests: 12}}\n",
            server.base_url()
        ),
    )
    .unwrap();
    run(crate::common::quiet_run_options(
        plan,
        &dir.path().join("out"),
    ))
    .await
    .expect("the run completes");
    let report = read_report(&dir.path().join("out"));
    crate::common::assert_valid_report(&report);
    let phase = &report["phases"][0];
    assert_eq!(phase["errors"], 0, "{}", phase["errors_by_cause"]);
    assert_eq!(phase["requests"], 12);
    let turns = phase["sessions"]["turns"]
        .as_array()
        .expect("figures by turn");
    assert_eq!(turns.len(), 3);
    let mean = |t: usize, figure: &str| turns[t][figure]["mean"].as_f64();
    // The history, with llama.cpp's own replies in it, grows by every turn's reply and user
    // message; the server reuses the cached prefix for the later turns.
    for t in 1..3 {
        let (before, now) = (mean(t - 1, "input_tokens"), mean(t, "input_tokens"));
        assert!(
            matches!((before, now), (Some(b), Some(n)) if n >= b + 8.0 + 12.0 - 2.0),
            "prompt tokens by turn: {turns:?}"
        );
        let (before, now) = (mean(t - 1, "cached_tokens"), mean(t, "cached_tokens"));
        assert!(
            matches!((before, now), (Some(b), Some(n)) if n > b),
            "cached tokens by turn: {turns:?}"
        );
    }
    assert_eq!(phase["sessions"]["complete"], 4);
}

/// The acceptance run: plans/capacity.yaml pointed at the real server, shortened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_plan_against_llamacpp_fills_the_server_sections() {
    let Some(engines) = RealEngines::find("llama.cpp (xllamacpp) with SmolLM2-135M") else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let server = LlamaServer::start(&engines, CTX_PER_SLOT).await;
    let out = tempfile::tempdir().unwrap();
    let set = [
        "input_tokens=96",
        "output_tokens=8",
        "requests=10",
        "tokenizer=server",
    ]
    .map(String::from);
    run(options(
        "plans/capacity.yaml",
        out.path(),
        &set,
        format!("server={}", server.base_url()),
    ))
    .await
    .expect("the run completes");
    let report = read_report(out.path());
    let phase = &report["phases"][0];
    let mut checks = Checks::default();
    // Capacity's workload does not ignore EOS, so output lengths are the model's.
    check_sizes(&mut checks, phase, None);
    check_server_metrics(&mut checks, phase);
    check_errors_and_connections(&mut checks, phase, 10);
    check_server_timing(&mut checks, phase);
    crate::common::assert_valid_report(&report);
    checks.finish("plans/capacity.yaml against llama.cpp");
}

/// plans/embeddings-sweep.yaml's embeddings phases against llama.cpp serving embeddings of
/// the same model (mean pooling): every request answered, inputs and tokens counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_sweep_against_llamacpp_has_no_errors() {
    let Some(engines) = RealEngines::find("llama.cpp (xllamacpp) with SmolLM2-135M") else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let server = LlamaServer::start_embeddings(&engines, CTX_PER_SLOT).await;
    let out = tempfile::tempdir().unwrap();
    let set = ["duration=2s", "concurrencies=[1, 4]"].map(String::from);
    run(RunOptions {
        only: vec!["embed-c1".into(), "embed-c4".into()],
        ..options(
            "plans/embeddings-sweep.yaml",
            out.path(),
            &set,
            format!("embed={}", server.base_url()),
        )
    })
    .await
    .expect("the run completes");
    let report = read_report(out.path());
    crate::common::assert_valid_report(&report);
    let phases = report["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 2);
    let mut checks = Checks::default();
    for phase in phases {
        let name = phase["phase"].as_str().unwrap_or("?").to_string();
        let requests = phase["requests"].as_u64().unwrap_or(0);
        checks.check(requests > 0, || format!("{name}: no requests"));
        checks.check(phase["errors"].as_u64() == Some(0), || {
            format!("{name}: errors {:?}", phase["errors_by_cause"])
        });
        checks.check(phase["ttft"].is_null(), || format!("{name}: a TTFT"));
        checks.check(phase["total_inputs"].as_u64() == Some(8 * requests), || {
            format!(
                "{name}: total_inputs {} for {requests} requests",
                phase["total_inputs"]
            )
        });
        let records = phase["request_timings"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let tokens: u64 = records
            .iter()
            .filter_map(|r| r["prompt_tokens"].as_u64())
            .sum();
        checks.check(
            records.iter().all(|r| {
                r["inputs"].as_u64() == Some(8)
                    && r["prompt_tokens"].as_u64().is_some_and(|t| t >= 8 * 100)
            }),
            || format!("{name}: a record without 8 inputs of ~128 tokens"),
        );
        checks.check(phase["total_input_tokens"].as_u64() == Some(tokens), || {
            format!(
                "{name}: total_input_tokens {} != {tokens}",
                phase["total_input_tokens"]
            )
        });
    }
    checks.finish("plans/embeddings-sweep.yaml against llama.cpp");
}

/// `plan`'s `{prefix}-c1` and `{prefix}-c4` phases (3 s each) against llama.cpp: every request
/// answered, one text delta per token (a token or two may decode to no text), output tokens
/// from the usage, a TTFT inside the request, a prompt of at least 200 tokens; `cached` asks
/// the records to state cached tokens too.
async fn typed_events_plan_against_llamacpp(plan: &str, prefix: &str, cached: bool) {
    let Some(engines) = RealEngines::find("llama.cpp (xllamacpp) with SmolLM2-135M") else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let server = LlamaServer::start(&engines, 1280).await;
    let out = tempfile::tempdir().unwrap();
    let set = ["duration=3s"].map(String::from);
    run(RunOptions {
        only: vec![format!("{prefix}-c1"), format!("{prefix}-c4")],
        ..options(plan, out.path(), &set, format!("sim={}", server.base_url()))
    })
    .await
    .expect("the run completes");
    let report = read_report(out.path());
    crate::common::assert_valid_report(&report);
    let phases = report["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 2);
    let mut checks = Checks::default();
    for phase in phases {
        let name = phase["phase"].as_str().unwrap_or("?").to_string();
        let requests = phase["requests"].as_u64().unwrap_or(0);
        checks.check(requests > 0, || format!("{name}: no requests"));
        checks.check(phase["errors"].as_u64() == Some(0), || {
            format!("{name}: errors {:?}", phase["errors_by_cause"])
        });
        for r in phase["request_timings"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let output = r["output_tokens"].as_u64().unwrap_or(0);
            let chunks = r["content_chunks"].as_u64().unwrap_or(0);
            let (ttft, e2e) = (r["ttft_ms"].as_f64(), r["e2e_ms"].as_f64().unwrap_or(0.0));
            checks.check(
                r["output_token_source"] == "usage" && (1..=128).contains(&output),
                || format!("{name}: output {output} from {}", r["output_token_source"]),
            );
            checks.check(chunks <= output && chunks + 2 >= output, || {
                format!("{name}: {chunks} text deltas for {output} tokens")
            });
            checks.check(ttft.is_some_and(|t| t > 0.0 && t <= e2e), || {
                format!("{name}: TTFT {ttft:?} of {e2e} ms")
            });
            checks.check(
                r["prompt_tokens"].as_u64().is_some_and(|t| t >= 200)
                    && (!cached || r["cached_tokens"].as_u64().is_some()),
                || {
                    format!(
                        "{name}: prompt {} cached {}",
                        r["prompt_tokens"], r["cached_tokens"]
                    )
                },
            );
        }
    }
    checks.finish(&format!("{plan} against llama.cpp"));
}

/// plans/responses.yaml's first phases against llama.cpp's `/v1/responses`: its TTFT, output
/// and cached tokens read from the Responses API events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_plan_against_llamacpp_has_no_errors() {
    typed_events_plan_against_llamacpp("plans/responses.yaml", "responses", true).await;
}

/// plans/messages.yaml's first phases against llama.cpp's `/v1/messages`: its TTFT and output
/// tokens read from the Messages API events, its prompt tokens from the usage (with any cache
/// read added back).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_plan_against_llamacpp_has_no_errors() {
    typed_events_plan_against_llamacpp("plans/messages.yaml", "messages", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_killed_mid_phase_ends_the_phase_as_target_down() {
    let Some(engines) = RealEngines::find("llama.cpp (xllamacpp) with SmolLM2-135M") else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    // A server of its own: this test kills it.
    let mut server = LlamaServer::start(&engines, CTX_PER_SLOT).await;
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("down.yaml");
    std::fs::write(
        &plan,
        format!(
            "version: 1\nname: llama-down\nseed: 5\ntargets:\n  llama: {{base_url: {}}}\n\
             workloads:\n  w: {{input_tokens: 32, output_tokens: {OUTPUT_TOKENS}, ignore_eos: true}}\n\
             phases:\n  - {{name: c4, target: llama, workload: w, concurrency: 4, duration: 60s}}\n",
            server.base_url()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let running = tokio::spawn(run(crate::common::quiet_run_options(plan, &out)));
    // Killed once a few measured requests are in the journal (whole lines only: one may be
    // half written).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    let measured = || {
        let text = std::fs::read_to_string(out.join("journal.jsonl")).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["window"] == "measured" && l["request_id"].is_string())
            .count()
    };
    while measured() < 8 {
        assert!(std::time::Instant::now() < deadline, "no requests in 180 s");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    server.kill();
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(60), running)
        .await
        .expect("the run ends well before its 60 s phase")
        .unwrap()
        .expect("a partial report");
    let why = outcome.target_down.expect("the target went down");
    assert!(why.starts_with("target down at "), "{why}");
    let value = read_report(&out);
    crate::common::assert_valid_report(&value);
    let report: servebench::report::Report = serde_json::from_value(value).unwrap();
    assert!(report.span.partial);
    let phase = &report.phases[0];
    assert!(phase.partial);
    assert_eq!(phase.target_down.as_deref(), Some(why.as_str()));
    let failed = phase
        .request_timings
        .iter()
        .filter(|r| r.error.is_some())
        .count();
    assert!(
        (1..=100).contains(&failed),
        "{failed} attempts after the kill"
    );
    let last = phase
        .request_timings
        .iter()
        .map(|r| r.start_offset_ms)
        .fold(0.0, f64::max);
    assert!(last < 55_000.0, "requests went on until {last} ms");
}
