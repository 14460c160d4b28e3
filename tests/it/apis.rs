//! Embeddings and rerank end to end over loopback: plans against the simulator, request
//! bodies as a server reads them, failures with their causes, and plan checks.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use servebench::client::{Client, ErrorKind};
use servebench::figure::Figure;
use servebench::plan::{Api, TokenizerSource, TokenizerSpec, Workload};
use servebench::report::{PhaseResult, Report};
use servebench::runner::endpoint::client_config;
use servebench::workload::{PromptInput, PromptSource, RERANK_QUERY_WORDS, WorkloadContext};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

async fn run_plan(yaml: &str) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(&plan, yaml).unwrap();
    let out = dir.path().join("out");
    let options = crate::common::quiet_run_options(plan, &out);
    servebench::runner::run(options).await.unwrap();
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    crate::common::assert_valid_report(&serde_json::from_str(&text).unwrap());
    serde_json::from_str(&text).unwrap()
}

const PREFILL_TOK_S: f64 = 200_000.0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_and_rerank_phases_count_inputs_and_tokens() {
    let _guard = crate::common::exclusive_run().await;
    let report = run_plan(&format!(
        "version: 1\nname: apis\nseed: 3\n\
         targets:\n  embed: {{api: embeddings, simulator: {{prefill_tok_s: {PREFILL_TOK_S}, embedding_dim: 16}}}}\n  \
           rerank: {{api: rerank, simulator: {{prefill_tok_s: {PREFILL_TOK_S}}}}}\n\
         workloads:\n  texts: {{input_tokens: 64, batch: 4}}\n  docs: {{input_tokens: 64, batch: 5}}\n\
         phases:\n  - {{name: embed, target: embed, workload: texts, concurrency: 4, requests: 40}}\n  \
           - {{name: rerank, target: rerank, workload: docs, concurrency: 4, requests: 30}}\n"
    ))
    .await;
    let query_tokens = RERANK_QUERY_WORDS as u64;
    for (phase, batch, tokens_per_request) in [
        ("embed", 4u64, 4 * 64u64),
        // Each document is read together with the query.
        ("rerank", 5, 5 * (64 + query_tokens)),
    ] {
        let p = report
            .phases
            .iter()
            .find(|p| p.header.phase == phase)
            .unwrap();
        assert_encoding_phase(p, batch, tokens_per_request);
    }
    let markdown = servebench::report::formats::markdown::render(&report);
    let phases_table: Vec<&str> = markdown
        .lines()
        .skip_while(|l| !l.starts_with("| Phase | Route"))
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(
        phases_table[0].contains("| Inputs/s | Input tok/s |"),
        "{}",
        phases_table[0]
    );
    assert!(!phases_table[0].contains("TTFT") && !phases_table[0].contains("Output tok/s"));
    // Compare lists the encoding figures and none of the generation ones; a TTFT gate says
    // there is no TTFT rather than passing on a zero.
    assert_compare_has_encoding_figures_only(&report);
    let html = servebench::report::formats::html::render(&report);
    assert!(html.contains("E2E p50 / p95 / p99"));
    assert!(html.contains("E2E latency of every request over each phase"));
    assert!(!html.contains("TTFT p50 / p95 / p99"));
}

/// An embeddings or rerank phase: every request's inputs and prompt tokens, no output, and
/// the phase's input rates from its totals.
fn assert_encoding_phase(p: &PhaseResult, batch: u64, tokens_per_request: u64) {
    let phase = p.header.phase.as_str();
    let s = &p.summary;
    assert_eq!(s.errors, 0, "{phase}: {:?}", s.errors_by_cause);
    assert_eq!(p.request_timings.len() as u64, s.requests);
    for r in &p.request_timings {
        assert_eq!(r.inputs, Some(batch), "{phase} {}", r.request_index);
        assert_eq!(r.prompt_tokens, Some(tokens_per_request), "{phase}");
        assert_eq!(r.ttft_ms, None);
        assert_eq!(r.output_tokens, None);
        // Nothing answers before the request's own prefill is done.
        let prefill_ms = tokens_per_request as f64 / PREFILL_TOK_S * 1e3;
        assert!(r.e2e_ms >= prefill_ms * 0.95, "{phase}: {} ms", r.e2e_ms);
    }
    if phase == "embed" {
        assert!(
            p.request_timings
                .iter()
                .all(|r| r.planned_context_tokens == r.prompt_tokens)
        );
    }
    assert_eq!(s.total_inputs, Some(s.requests * batch));
    assert_eq!(s.total_input_tokens, s.requests * tokens_per_request);
    let inputs_s = s.inputs_per_second.unwrap();
    let tokens_s = s.input_tokens_per_second.unwrap();
    assert!((inputs_s - (s.requests * batch) as f64 / s.elapsed).abs() < 1e-6 * inputs_s);
    assert!((tokens_s - s.total_input_tokens as f64 / s.elapsed).abs() < 1e-6 * tokens_s);
    assert!((s.request_rate * batch as f64 - inputs_s).abs() < 1e-6 * inputs_s);
    // One prefill lane: the simulator cannot encode faster than its prefill rate.
    assert!(
        tokens_s <= PREFILL_TOK_S * 1.06,
        "{phase}: {tokens_s} tok/s"
    );
    assert!(
        s.distribution(Figure::Ttft).is_none() && s.distribution(Figure::Tpot).is_none(),
        "{phase}"
    );
    assert!(
        s.distribution(Figure::E2e)
            .is_some_and(|d| d.samples == s.requests)
    );
}

/// A report compared with itself: the encoding figures and none of the generation ones,
/// and a TTFT gate that fails for want of a TTFT.
fn assert_compare_has_encoding_figures_only(report: &Report) {
    let gates: Vec<servebench::report::compare::gate::Gate> =
        ["inputs_per_second > -5%", "ttft.p99 < 2s"]
            .iter()
            .map(|g| g.parse().unwrap())
            .collect();
    let comparison = servebench::report::compare::compare("a", report, "b", report, &gates);
    for phase in &comparison.phases {
        let names: Vec<&str> = phase.metrics.iter().map(|m| m.metric.as_str()).collect();
        assert!(names.contains(&"inputs_per_second") && names.contains(&"input_tokens_per_second"));
        assert!(
            !names
                .iter()
                .any(|n| n.starts_with("ttft") || n.starts_with("tpot") || n.starts_with("output")),
            "{names:?}"
        );
    }
    let ttft_gates: Vec<_> = comparison
        .gates
        .iter()
        .filter(|g| g.gate.starts_with("ttft"))
        .collect();
    assert!(!ttft_gates.is_empty());
    for g in ttft_gates {
        assert!(
            !g.passed && g.problem.as_deref() == Some("no ttft.p99 in the new report"),
            "{g:?}"
        );
    }
    assert!(
        comparison
            .gates
            .iter()
            .filter(|g| g.gate.starts_with("inputs"))
            .all(|g| g.passed)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_simulated_status_fault_keeps_its_cause() {
    let report = run_plan(
        "version: 1\nname: fault\n\
         targets:\n  embed: {api: embeddings, simulator: {prefill_tok_s: 0, faults: [{kind: status, status: 413, at: [2]}]}}\n\
         workloads:\n  texts: {input_tokens: 32, batch: 2}\n\
         phases:\n  - {name: embed, target: embed, workload: texts, concurrency: 1, requests: 5}\n",
    )
    .await;
    let s = &report.phases[0].summary;
    assert_eq!((s.requests, s.errors), (5, 1));
    assert_eq!(s.errors_by_cause.len(), 1);
    assert_eq!(s.errors_by_cause[0].status, Some(413));
    assert!(
        s.errors_by_cause[0].cause.starts_with("HTTP 413"),
        "{:?}",
        s.errors_by_cause
    );
    // Only successful requests count toward the inputs.
    assert_eq!(s.total_inputs, Some(8));
}

/// One canned response per connection; what each request looked like on the wire.
struct Capture {
    base_url: String,
    requests: Arc<Mutex<Vec<(String, serde_json::Value)>>>,
}

async fn capture(status: &'static str, body: String) -> Capture {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut bytes = Vec::new();
            let mut buf = [0u8; 8192];
            // Head, then as many body bytes as content-length says.
            let (head, length) = loop {
                let n = socket.read(&mut buf).await.unwrap();
                assert!(n > 0, "connection closed mid-request");
                bytes.extend_from_slice(&buf[..n]);
                if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&bytes[..end]).to_string();
                    let length: usize = head
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse().unwrap())
                        })
                        .unwrap();
                    bytes.drain(..end + 4);
                    break (head, length);
                }
            };
            while bytes.len() < length {
                let n = socket.read(&mut buf).await.unwrap();
                bytes.extend_from_slice(&buf[..n]);
            }
            seen.lock()
                .unwrap()
                .push((head, serde_json::from_slice(&bytes).unwrap()));
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(response.as_bytes()).await.unwrap();
        }
    });
    Capture { base_url, requests }
}

fn source(api: Api, batch: u32) -> (Workload, PromptSource) {
    let workload: Workload =
        serde_saphyr::from_str(&format!("{{input_tokens: 24, batch: {batch}}}")).unwrap();
    let context = WorkloadContext {
        api,
        tokenizer: TokenizerSpec {
            source: TokenizerSource::Simulator,
            path: None,
            chat_template: None,
        },
        plan_dir: Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf(),
        seed: 5,
        base_url: String::new(),
        model: "enc".into(),
        text_salt: None,
    };
    let source = PromptSource::new(&workload, &context).unwrap();
    (workload, source)
}

fn client(api: Api, base_url: &str, workload: &Workload) -> Client {
    let target = servebench::plan::Target {
        api,
        model: Some("enc".into()),
        ..Default::default()
    };
    Client::new(client_config(&target, base_url.to_string(), workload, 1).unwrap()).unwrap()
}

#[tokio::test]
async fn embeddings_requests_carry_their_batch_and_read_usage() {
    let data: Vec<_> = (0..3)
        .map(|i| serde_json::json!({"object": "embedding", "index": i, "embedding": [0.5, -0.5]}))
        .collect();
    let body = serde_json::json!({"object": "list", "data": data, "usage": {"prompt_tokens": 77, "total_tokens": 77}});
    let server = capture("200 OK", body.to_string()).await;
    let (workload, prompts) = source(Api::Embeddings, 3);
    let prompt = prompts.prompt(0);
    let PromptInput::Batch { query: None, texts } = &prompt.input else {
        panic!("{:?}", prompt.input)
    };
    assert_eq!(texts.len(), 3);
    let record = client(Api::Embeddings, &server.base_url, &workload)
        .send(0, &prompt, Instant::now())
        .await;
    assert!(record.is_ok(), "{:?}", record.error);
    assert_eq!((record.inputs, record.prompt_tokens), (Some(3), Some(77)));
    let seen = server.requests.lock().unwrap().clone();
    let (head, sent) = &seen[0];
    assert!(head.starts_with("POST /v1/embeddings HTTP/1.1"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("accept: application/json"),
        "{head}"
    );
    assert_eq!(sent["model"], "enc");
    assert_eq!(sent["input"], serde_json::json!(texts));
    for key in [
        "stream",
        "stream_options",
        "max_tokens",
        "prompt",
        "messages",
    ] {
        assert!(sent.get(key).is_none(), "{key} in {sent}");
    }
    // The prompts are the synthetic ones, sized as planned.
    let tokens: u64 = texts
        .iter()
        .map(|t| t.split_whitespace().count() as u64)
        .sum();
    assert_eq!(prompt.planned_prompt_tokens, Some(tokens));
}

#[tokio::test]
async fn rerank_requests_send_a_query_and_documents_and_read_total_tokens() {
    // vLLM's shape: usage holds only total_tokens; top_n cut the results to two.
    let body = serde_json::json!({"id": "r", "results": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}], "usage": {"total_tokens": 123}});
    let server = capture("200 OK", body.to_string()).await;
    let (workload, prompts) = source(Api::Rerank, 4);
    let prompt = prompts.prompt(2);
    let record = client(Api::Rerank, &server.base_url, &workload)
        .send(2, &prompt, Instant::now())
        .await;
    assert!(record.is_ok(), "{:?}", record.error);
    assert_eq!((record.inputs, record.prompt_tokens), (Some(4), Some(123)));
    let seen = server.requests.lock().unwrap().clone();
    let (head, sent) = &seen[0];
    assert!(head.starts_with("POST /v1/rerank HTTP/1.1"), "{head}");
    let PromptInput::Batch {
        query: Some(query),
        texts,
    } = &prompt.input
    else {
        panic!("{:?}", prompt.input)
    };
    assert_eq!(query.split_whitespace().count(), RERANK_QUERY_WORDS);
    assert_eq!(sent["query"], serde_json::json!(query));
    assert_eq!(sent["documents"], serde_json::json!(texts));
    assert!(sent.get("input").is_none() && sent.get("max_tokens").is_none());
}

#[tokio::test]
async fn a_4xx_and_a_short_answer_keep_their_causes() {
    let error = r#"{"error":{"message":"input is too long","type":"BadRequestError","code":400}}"#;
    let server = capture("400 Bad Request", error.to_string()).await;
    let (workload, prompts) = source(Api::Embeddings, 2);
    let record = client(Api::Embeddings, &server.base_url, &workload)
        .send(0, &prompts.prompt(0), Instant::now())
        .await;
    let err = record.error.as_ref().expect("a 400 fails the request");
    assert_eq!((err.kind, err.status), (ErrorKind::HttpStatus, Some(400)));
    assert_eq!(err.cause(), "HTTP 400 · BadRequestError");
    assert!(err.message.contains("input is too long"), "{}", err.message);
    assert_eq!(err.body.as_deref(), Some(error));

    // One vector for two inputs is not a success.
    let short = r#"{"data":[{"index":0,"embedding":[1.0]}],"usage":{"prompt_tokens":4}}"#;
    let server = capture("200 OK", short.to_string()).await;
    let record = client(Api::Embeddings, &server.base_url, &workload)
        .send(0, &prompts.prompt(0), Instant::now())
        .await;
    let err = record
        .error
        .as_ref()
        .expect("a short answer fails the request");
    assert_eq!(err.kind, ErrorKind::MalformedEvent);
    assert!(
        err.message
            .contains("expected exactly 2 entries in `data`, found 1"),
        "{}",
        err.message
    );
}

#[test]
fn generation_settings_on_an_embeddings_target_fail_validate_with_their_position() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "version: 1\nname: bad\ntargets:\n  embed: {api: embeddings, simulator: {}}\n  chat: {simulator: {}}\n\
         workloads:\n  w:\n    input_tokens: 64\n    output_tokens: 8\n    ignore_eos: true\n    body: {reasoning_effort: low}\n  c: {input_tokens: 64, batch: 2}\n\
         phases:\n  - {name: p, target: embed, workload: w, requests: 4, concurrency: 1}\n  - {name: q, target: chat, workload: c, requests: 4, concurrency: 1}\n",
    )
    .unwrap();
    let output = std::process::Command::new(assert_cmd::cargo::cargo_bin!("servebench"))
        .arg("validate")
        .arg(&plan)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let at = |line: u32, col: u32| format!("plan.yaml:{line}:{col}");
    for (message, place) in [
        (
            "`output_tokens` does not apply to `api: embeddings`",
            at(9, 5),
        ),
        (
            "`ignore_eos` does not apply to `api: embeddings`",
            at(10, 5),
        ),
        ("`reasoning_effort` is a generation setting", at(11, 12)),
        (
            "`batch` applies to `api: embeddings` or `api: rerank`",
            at(12, 25),
        ),
    ] {
        let found = stderr
            .split("\n\n")
            .find(|block| block.contains(message))
            .unwrap_or_else(|| panic!("no `{message}` in:\n{stderr}"));
        assert!(found.contains(&place), "{message} not at {place}:\n{found}");
    }
    assert!(stderr.contains("4 errors"), "{stderr}");
}
