//! servebench against llama-cpp-python's OpenAI server (FastAPI on uvicorn, SmolLM2-135M on
//! loopback), through the `servebench run` binary: a closed-loop run with prompts sized to
//! plan, an open-loop rate slower than the server's keep-alive timeout, and the request-id
//! header its middleware validates.
//!
//! The report is read as JSON so these tests name the report's fields as a reader does.

use std::path::Path;

use serde_json::Value;

use crate::real_support::{Checks, LlamaCppPython, LlamaCppPythonServer, repo_path};

const WHAT: &str = "llama-cpp-python's server with SmolLM2-135M";
const MODEL: &str = "smollm2-135m-instruct";
const OUTPUT_TOKENS: u64 = 8;

/// The fixture tokenizer and chat template of SmolLM2-135M-Instruct (the llama.cpp tests'):
/// this server's tokenizer is only at `/extras/tokenize`, where no `tokenizer: {source:
/// server}` shape looks, but the GGUF is the same model and llama-cpp-python renders the chat
/// template the GGUF carries, which is the fixture's.
fn file_tokenizer() -> String {
    let fixture = repo_path("tests/fixtures/tokenizers/smollm2-135m");
    format!(
        "{{source: file, path: '{}', chat_template: '{}'}}",
        fixture.join("tokenizer.json").display(),
        fixture.join("chat_template.jinja").display()
    )
}

/// The prompt tokens of each request the server ran, in order, as its verbose log counts them
/// with its own tokenizer: `Llama.generate: N prefix-match hit, remaining M prompt tokens to
/// eval` when a request starts (N tokens reused from the previous prompt's KV cache), then
/// `llama_perf_context_print: prompt eval time = … / M tokens` when it ends. A request with no
/// prefix hit logs only the second. The server's streamed responses carry no `usage` (it has
/// no `stream_options`), so this log is where its own count can be read.
fn server_prompt_counts(log: &str) -> Vec<u64> {
    let number_before = |text: &str, marker: &str| -> Option<u64> {
        let head = &text[..text.find(marker)?];
        head.rsplit(|c: char| !c.is_ascii_digit())
            .find(|w| !w.is_empty())?
            .parse()
            .ok()
    };
    let mut counts = Vec::new();
    let mut reused = None;
    for line in log.lines() {
        if line.contains("prefix-match hit") {
            reused = number_before(line, " prefix-match hit");
        } else if line.contains("prompt eval time")
            && let Some(evaluated) = number_before(line, " tokens")
        {
            counts.push(reused.take().unwrap_or(0) + evaluated);
        }
    }
    counts
}

/// A one-phase plan against `server`; `target_extra` is appended to the target's YAML map
/// (e.g. `, request_id: {format: plain}`) and `phase` is the phase's YAML map body.
fn plan(server: &LlamaCppPythonServer, target_extra: &str, workload: &str, phase: &str) -> String {
    format!(
        "version: 1\n\
         name: llama-cpp-python\n\
         seed: 1\n\
         targets:\n  server: {{base_url: '{base}', model: {MODEL}{target_extra}}}\n\
         workloads:\n  chat: {workload}\n\
         defaults: {{target: server, workload: chat}}\n\
         phases:\n  - {phase}\n",
        base = server.base_url(),
    )
}

/// `servebench run --quiet` on `plan`, written into a temp dir; the report, the run's exit
/// status and stderr, and the dir (kept alive while the report is read).
async fn run_plan(plan: &str) -> (Value, std::process::Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("plan.yaml");
    std::fs::write(&plan_path, plan).unwrap();
    let out = dir.path().join("out");
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args([
            "run",
            "--quiet",
            "--no-calibrate",
            "--no-latency-hint",
            "--output",
        ])
        .arg(&out)
        .arg(&plan_path)
        .output()
        .await
        .expect("servebench runs");
    let report = read_report(&out).unwrap_or_else(|| {
        panic!(
            "no report.json (exit {:?}); the plan:\n{plan}\nstderr:\n{}",
            output.status.code(),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (report, output, dir)
}

fn read_report(dir: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(dir.join("report.json")).ok()?;
    Some(serde_json::from_str(&text).expect("report.json is JSON"))
}

fn records(phase: &Value) -> Vec<Value> {
    phase["request_timings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn succeeded(record: &Value) -> bool {
    record.get("error").is_none_or(Value::is_null)
}

/// At least `min_requests` measured requests and none failed.
fn check_no_errors(checks: &mut Checks, phase: &Value, min_requests: u64) {
    let name = phase["phase"].as_str().unwrap_or("?").to_string();
    let requests = phase["requests"].as_u64().unwrap_or(0);
    checks.check(requests >= min_requests, || {
        format!("{name}: {requests} requests, want at least {min_requests}")
    });
    let failed: Vec<String> = records(phase)
        .iter()
        .filter(|r| !succeeded(r))
        .map(|r| r["error"].to_string())
        .take(3)
        .collect();
    checks.check(phase["errors"] == 0, || {
        format!(
            "{name}: {} errors ({}), e.g. {failed:?}",
            phase["errors"], phase["errors_by_kind"]
        )
    });
}

/// The quickstart workload (prompts of 256 ± 32 tokens, 128 to 512) at closed-loop
/// concurrency 2, shortened to 8 output tokens and 6 requests. The server runs one request at
/// a time and queues the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_cpp_python_quickstart_workload_at_concurrency_2() {
    let Some(installed) = LlamaCppPython::find(WHAT) else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let server = LlamaCppPythonServer::start(&installed, None).await;
    let requests = 6;
    let plan = plan(
        &server,
        &format!(", tokenizer: {}", file_tokenizer()),
        &format!(
            "{{input_tokens: {{mean: 256, stddev: 32, min: 128, max: 512}}, output_tokens: {OUTPUT_TOKENS}, temperature: 0, ignore_eos: true}}"
        ),
        &format!("{{name: c2, concurrency: 2, requests: {requests}, warmup: {{requests: 2}}}}"),
    );
    let (report, output, _dir) = run_plan(&plan).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let phase = &report["phases"][0];
    let mut checks = Checks::default();
    checks.check(output.status.success(), || {
        format!("servebench exited {:?}: {stderr}", output.status.code())
    });
    check_no_errors(&mut checks, phase, requests);
    let ok: Vec<Value> = records(phase).into_iter().filter(succeeded).collect();
    // Every prompt the run planned (with the fixture tokenizer and template) is one the
    // server counted (with its own) within 2%; the warmup's are among the server's too.
    let mut served = server_prompt_counts(&server.log_text());
    checks.check(served.len() as u64 >= requests, || {
        format!(
            "the server's log holds {} prompt counts: {served:?}",
            served.len()
        )
    });
    for r in &ok {
        let index = &r["request_index"];
        // This server streams no `usage` (so the record's `prompt_tokens` stays empty):
        // output lengths are counted from the stream, one chunk per token, at most
        // max_tokens (the server takes no `ignore_eos` and may stop at EOS before).
        checks.check(r["output_token_source"] == "counted", || {
            format!(
                "request {index}: output_token_source {}, want `counted` (does the server stream usage now?)",
                r["output_token_source"]
            )
        });
        let output_tokens = r["output_tokens"].as_u64();
        checks.check(
            output_tokens.is_some_and(|t| (1..=OUTPUT_TOKENS).contains(&t)),
            || {
                format!(
                    "request {index}: output tokens {output_tokens:?}, max_tokens {OUTPUT_TOKENS}"
                )
            },
        );
        let planned = r["planned_context_tokens"].as_u64().unwrap_or(0);
        let matched = served
            .iter()
            .position(|&s| s.abs_diff(planned) as f64 <= 0.02 * planned as f64);
        checks.check(planned > 0 && matched.is_some(), || {
            format!("request {index}: planned {planned} prompt tokens, the server counted none within 2% of it (it counted {served:?})")
        });
        if let Some(i) = matched {
            served.remove(i);
        }
    }
    crate::common::assert_valid_report(&report);
    checks.finish("llama-cpp-python, quickstart workload at concurrency 2");
}

/// Open loop at 0.25 requests/s against a server that closes connections idle for 1 s: every
/// request finds its pooled connection closed by the server, and none fails for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_cpp_python_rate_slower_than_its_keep_alive_has_no_errors() {
    let Some(installed) = LlamaCppPython::find(WHAT) else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let server = LlamaCppPythonServer::start(&installed, Some(1.0)).await;
    let requests = 4;
    let plan = plan(
        &server,
        "",
        &format!(
            "{{input_tokens: 64, output_tokens: {OUTPUT_TOKENS}, temperature: 0, ignore_eos: true}}"
        ),
        &format!(
            "{{name: rate-0.25, rate: {{rps: 0.25, arrival: constant}}, requests: {requests}}}"
        ),
    );
    let (report, output, _dir) = run_plan(&plan).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let phase = &report["phases"][0];
    let mut checks = Checks::default();
    checks.check(output.status.success(), || {
        format!("servebench exited {:?}: {stderr}", output.status.code())
    });
    check_no_errors(&mut checks, phase, requests);
    // Requests 4 s apart on a 1 s keep-alive: each one after the first finds the server has
    // closed the connection the previous one used, so it runs on a new connection (found
    // closed in the pool, or after the one retry when the close crossed the request). A
    // loaded machine can delay the server's close past the next request (seen once in three
    // runs beside a build): most, not all, must find it closed; none may fail for it.
    let found_closed = phase["request_timings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|r| r["request_index"].as_u64().is_some_and(|i| i > 0))
        .filter(|r| r["new_connection"] == true || r["connection_retries"] == 1)
        .count() as u64;
    checks.check(2 * found_closed > requests - 1, || {
        format!(
            "{found_closed} of {} requests after the first found their connection closed \
             (connections_opened {}, retries {}): did the server close idle connections?",
            requests - 1,
            phase["connections_opened"],
            phase["connection_retries"]
        )
    });
    crate::common::assert_valid_report(&report);
    checks.finish("llama-cpp-python, 0.25 requests/s against a 1 s keep-alive");
}

/// The server's request-id middleware (starlette-context's `RequestIdPlugin`, validating)
/// answers a non-UUID `x-request-id` with HTTP 400 and an empty body: with
/// `request_id: {format: plain}` every request fails so, and the report's message says why.
/// The default (`uuid`) passes; that is the quickstart test above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_cpp_python_rejects_a_plain_request_id_and_the_report_says_why() {
    let Some(installed) = LlamaCppPython::find(WHAT) else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let server = LlamaCppPythonServer::start(&installed, None).await;
    let requests = 2;
    let plan = plan(
        &server,
        ", request_id: {format: plain}",
        &format!("{{input_tokens: 64, output_tokens: {OUTPUT_TOKENS}, temperature: 0}}"),
        &format!("{{name: plain-id, concurrency: 1, requests: {requests}}}"),
    );
    let (report, _output, _dir) = run_plan(&plan).await;
    let phase = &report["phases"][0];
    let mut checks = Checks::default();
    checks.check(phase["errors"] == requests, || {
        format!(
            "{} errors ({}), want all {requests} rejected",
            phase["errors"], phase["errors_by_kind"]
        )
    });
    let all = records(phase);
    checks.check(!all.is_empty(), || "no request records".into());
    for r in &all {
        let index = &r["request_index"];
        let error = &r["error"];
        checks.check(
            error["kind"] == "http_status" && error["status"] == 400,
            || format!("request {index}: error {error}, want http_status 400"),
        );
        let message = error["message"].as_str().unwrap_or_default().to_lowercase();
        checks.check(
            message.contains("empty") && message.contains("x-request-id"),
            || format!("request {index}: message {message:?} names neither the empty body nor x-request-id"),
        );
    }
    checks.finish("llama-cpp-python, request_id: {format: plain}");
}
