//! Tool calls and the Responses API over loopback: sessions that answer the simulator's tool
//! calls with tool results, the figures they produce, `/v1/responses` streams measured against
//! the simulator's own send times, and the plan checks that keep both honest.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use servebench::client::{Client, ErrorKind};
use servebench::figure::Figure;
use servebench::plan::{Api, TokenizerSource, TokenizerSpec, Workload};
use servebench::runner::endpoint::client_config;
use servebench::runner::run;
use servebench::sim::{SeenRequest, SimConfig, serve};
use servebench::workload::{PromptSource, WorkloadContext};

use crate::common::{assert_valid_report, exclusive_run, quiet_run_options};

const TURNS: u64 = 4;
const SESSIONS: u64 = 3;
const OUTPUT_TOKENS: u64 = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_call_sessions_answer_each_call_with_a_tool_result() {
    let _exclusive = exclusive_run().await;
    let (addr, sim) = serve(SimConfig {
        seed: Some(4),
        decode_ms_per_token: Some(0.5),
        jitter: Some(0.0),
        record_requests: Some(true),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    // `required`: every turn that opens with a user message is answered with a tool call;
    // the turn after it sends the tool's result (and asks `auto`), which the simulator answers
    // in text.
    std::fs::write(
        &plan,
        format!(
            "version: 1\nname: tools\nseed: 3\ntargets:\n  sim: {{base_url: http://{addr}/v1, model: sim}}\n\
             workloads:\n  agent:\n    input_tokens: 80\n    output_tokens: {OUTPUT_TOKENS}\n    ignore_eos: true\n\
             \x20   session: {{turns: {TURNS}, user_tokens: 12, affinity_header: x-session-id}}\n\
             \x20   tools: {{choice: required, result_tokens: 24}}\n\
             phases:\n  - {{name: agent, target: sim, workload: agent, concurrency: 2, requests: {}}}\n",
            TURNS * SESSIONS
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    run(quiet_run_options(plan, &out))
        .await
        .expect("the run completes");
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_valid_report(&value);
    let report: servebench::report::Report = serde_json::from_value(value).unwrap();
    let phase = &report.phases[0];
    assert_eq!(phase.summary.requests, TURNS * SESSIONS);
    assert_eq!(
        phase.summary.errors, 0,
        "{:?}",
        phase.summary.errors_by_cause
    );

    // The server's view, session by session.
    let by_session = by_session(sim.requests());
    assert_eq!(by_session.len() as u64, SESSIONS);
    for (session, turns) in &by_session {
        assert_eq!(turns.len() as u64, TURNS, "{session}");
        for (k, seen) in turns.iter().enumerate() {
            assert_eq!(seen.tools, 3, "the built-in tools go with every turn");
            // Even turns open with a user message and get a call; odd ones answer it.
            let called = seen.reply_tool_call.is_some();
            assert_eq!(called, k % 2 == 0, "{session} turn {k}: {seen:?}");
        }
        for pair in turns.windows(2) {
            assert_next_turn(session, &pair[0], &pair[1]);
        }
    }

    // The client's view: every argument fragment is an output event.
    assert_tool_call_records(&phase.request_timings);
    assert_tool_figures_by_turn(phase.sessions.as_ref().expect("sessions summary"));
    let md = servebench::report::formats::markdown::render(&report);
    assert!(md.contains("Tool TTFT p50 (ms)"), "{md}");

    assert_parquet_keeps_tool_calls(&out);
    sim.shutdown().await;
}

/// The Parquet parts keep the tool-call columns: the calling turns' TTFT and fragments.
fn assert_parquet_keeps_tool_calls(out: &std::path::Path) {
    let phases = servebench::report::formats::records::measured_by_phase(
        crate::common::record_rows(out).into_iter().map(Ok),
    )
    .unwrap();
    let called: Vec<_> = phases[0]
        .1
        .iter()
        .filter(|record| record.ttft_tool_ms.is_some())
        .collect();
    assert_eq!(called.len() as u64, SESSIONS * TURNS / 2);
    assert!(
        called
            .iter()
            .all(|record| record.tool_call_chunks == OUTPUT_TOKENS)
    );
}

/// The server's requests by the session their affinity header names, in order.
fn by_session(requests: Vec<SeenRequest>) -> BTreeMap<String, Vec<SeenRequest>> {
    let mut by_session: BTreeMap<String, Vec<SeenRequest>> = BTreeMap::new();
    for seen in requests {
        let session = seen
            .headers
            .iter()
            .find(|(k, _)| k == "x-session-id")
            .map(|(_, v)| v.clone())
            .expect("every turn names its session");
        by_session.entry(session).or_default().push(seen);
    }
    by_session
}

/// The turn after `before`: its whole history, then the tool's result for `before`'s call or,
/// after a text reply, that reply and a new user message.
fn assert_next_turn(session: &str, before: &SeenRequest, after: &SeenRequest) {
    let n = before.messages.len();
    assert_eq!(after.messages[..n], before.messages[..], "{session}");
    match &before.reply_tool_call {
        Some(call) => {
            // The assistant's tool-call message, as the client reassembled it from
            // the streamed fragments, then the tool's result for that call.
            assert_eq!(after.messages.len(), n + 2, "{session}");
            let (role, text) = &after.messages[n];
            assert_eq!(role, "assistant");
            assert_eq!(*text, format!("{} {}", call.name, call.arguments));
            assert!(call.arguments.starts_with("{\"") && call.arguments.ends_with("\"}"));
            assert_eq!(after.history_tool_calls.last(), Some(&call.id));
            assert_eq!(after.messages[n + 1].0, "tool");
            let words = after.messages[n + 1].1.split_whitespace().count();
            assert_eq!(words, 24, "the planned result length");
            assert_eq!(after.tool_results.last(), Some(&call.id));
        }
        None => {
            let reply = before.reply.as_deref().expect("a text reply");
            assert_eq!(after.messages.len(), n + 2, "{session}");
            assert_eq!(
                after.messages[n],
                ("assistant".to_string(), reply.to_string())
            );
            assert_eq!(after.messages[n + 1].0, "user");
            assert_eq!(after.tool_results.len(), before.tool_results.len());
        }
    }
}

/// Each record: a call's turn measured by its argument fragments, a text turn by its
/// content.
fn assert_tool_call_records(records: &[servebench::client::RequestRecord]) {
    for r in records {
        let turn = r.turn.expect("a session turn");
        assert_eq!(r.output_tokens, Some(OUTPUT_TOKENS), "{r:?}");
        if turn % 2 == 0 {
            let first = r.ttft_tool_ms.expect("a tool call was streamed");
            assert_eq!(r.ttft_ms, None, "a call carries no content");
            assert_eq!(r.time_to_first_output_ms, Some(first));
            assert!(first > 0.0 && first <= r.e2e_ms, "{r:?}");
            // One fragment per token (chunk_tokens 1), the first also naming the function.
            assert_eq!(r.tool_call_chunks, OUTPUT_TOKENS, "{r:?}");
            assert!(r.mean_inter_token_latency_ms.is_some(), "{r:?}");
        } else {
            assert_eq!((r.ttft_tool_ms, r.tool_call_chunks), (None, 0), "{r:?}");
            assert_eq!(r.content_chunks, OUTPUT_TOKENS);
        }
    }
}

/// Figures by turn: tool TTFT and fragments on the turns that call, none on the others.
fn assert_tool_figures_by_turn(sessions: &servebench::metrics::SessionSummary) {
    assert_eq!(sessions.complete, SESSIONS);
    for t in &sessions.turns {
        let expected = if t.turn % 2 == 0 { SESSIONS } else { 0 };
        let tool_ttft = t.figures.get(Figure::TtftTool);
        assert_eq!(tool_ttft.map_or(0, |d| d.samples), expected, "{t:?}");
        if expected > 0 {
            let chunks = t.figures.get(Figure::ToolCallChunks).map(|d| d.mean);
            assert_eq!(chunks, Some(OUTPUT_TOKENS as f64));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_tool_choice_calls_at_the_simulators_fraction() {
    let _exclusive = exclusive_run().await;
    let (addr, sim) = serve(SimConfig {
        decode_ms_per_token: Some(0.0),
        tool_call_fraction: Some(0.3),
        record_requests: Some(true),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "version: 1\nname: auto\ntargets:\n  sim: {{base_url: http://{addr}/v1, model: sim}}\n\
             workloads:\n  w:\n    input_tokens: 40\n    output_tokens: 4\n    ignore_eos: true\n\
             \x20   tools:\n      definitions:\n        - {{type: function, function: {{name: lookup, parameters: {{type: object, properties: {{key: {{type: string}}}}}}}}}}\n\
             phases:\n  - {{name: p, target: sim, workload: w, concurrency: 4, requests: 400}}\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    run(quiet_run_options(plan, &out)).await.unwrap();
    let report = servebench::report::read_report(&out.join("report.json")).unwrap();
    let phase = &report.phases[0];
    assert_eq!(phase.summary.errors, 0);
    let seen = sim.requests();
    let server_calls = seen.iter().filter(|s| s.reply_tool_call.is_some()).count();
    let client_calls = phase
        .request_timings
        .iter()
        .filter(|r| r.ttft_tool_ms.is_some())
        .count();
    // The client counts exactly the calls the server made; about 30% of 400.
    assert_eq!(client_calls, server_calls);
    assert!((80..=160).contains(&server_calls), "{server_calls} calls");
    for s in seen.iter().filter_map(|s| s.reply_tool_call.as_ref()) {
        assert_eq!(s.name, "lookup");
        assert!(s.arguments.starts_with(r#"{"key": ""#), "{}", s.arguments);
    }
    sim.shutdown().await;
}

fn responses_prompts(base_url: &str, workload: &Workload) -> PromptSource {
    let context = WorkloadContext {
        api: Api::Responses,
        tokenizer: TokenizerSpec {
            source: TokenizerSource::Simulator,
            path: None,
            chat_template: None,
        },
        plan_dir: std::path::PathBuf::from("."),
        seed: 5,
        base_url: base_url.to_string(),
        model: "sim".to_string(),
        text_salt: None,
    };
    PromptSource::new(workload, &context).expect("workload builds")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_api_streams_match_the_simulators_ground_truth() {
    let _exclusive = exclusive_run().await;
    let (addr, sim) = serve(SimConfig {
        prefill_tok_s: Some(50_000.0),
        decode_ms_per_token: Some(2.0),
        jitter: Some(0.0),
        chunk_tokens: Some(2),
        // Natural lengths 15..=45 against a cap of 40: some end `completed`, some
        // `incomplete` at `max_output_tokens`.
        mean_output_tokens: Some(30),
        record_timestamps: Some(true),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let base_url = format!("http://{addr}/v1");
    let workload: Workload =
        serde_saphyr::from_str("input_tokens: {min: 100, max: 600}\noutput_tokens: 40\n").unwrap();
    let mut source = responses_prompts(&base_url, &workload);
    let target = servebench::plan::Target {
        api: Api::Responses,
        model: Some("sim".into()),
        ..Default::default()
    };
    let client =
        Client::new(client_config(&target, base_url.clone(), &workload, 2).unwrap()).unwrap();
    assert_eq!(client.url(), format!("{base_url}/responses"));
    let mut lengths = Vec::new();
    let mut ttft_errors_ms = Vec::new();
    for index in 0..24 {
        let prompt = source.next_prompt();
        let origin = Instant::now();
        let record = client.send(index, &prompt, origin).await;
        assert!(record.is_ok(), "{:?}", record.error);
        assert_eq!(record.prompt_tokens, prompt.planned_prompt_tokens);
        let output = record.output_tokens.expect("usage in response.completed");
        assert!((15..=40).contains(&output), "{output}");
        assert_eq!(
            record.content_chunks,
            output.div_ceil(2),
            "two tokens a delta"
        );
        assert_eq!(record.time_to_first_output_ms, record.ttft_ms);
        lengths.push(output);
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
            "content seen {error_ms} ms before it was sent"
        );
        ttft_errors_ms.push(error_ms);
        // TPOT from the stream: after the first two-token delta the server spends 2 ms per
        // token, so (e2e − TTFT) covers at least 2·(n − 2) ms (less a late first read).
        if output > 2 {
            let tpot = record.tpot_ms.unwrap();
            let floor = 2.0 * (output - 2) as f64 / (output - 1) as f64;
            assert!(tpot >= 0.9 * floor, "TPOT {tpot} ms for {output} tokens");
        }
    }
    assert!(
        lengths.contains(&40),
        "some replies stop at the cap: {lengths:?}"
    );
    assert!(lengths.iter().any(|&n| n < 40), "{lengths:?}");
    ttft_errors_ms.sort_by(f64::total_cmp);
    let median = ttft_errors_ms[ttft_errors_ms.len() / 2];
    assert!(
        median < 2.0,
        "median TTFT error {median:.3} ms: {ttft_errors_ms:?}"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_api_failures_are_clear_errors() {
    use servebench::sim::{SimFault, SimFaultKind};
    let _exclusive = exclusive_run().await;
    let fault = |kind| SimFault {
        kind,
        probability: None,
        every: None,
        at: vec![1],
        status: None,
        seconds: None,
        after_tokens: Some(2),
    };
    for (kind, expected, text) in [
        (
            SimFaultKind::ErrorObject,
            ErrorKind::ErrorObject,
            "simulated error inside a 200 response",
        ),
        (
            SimFaultKind::MalformedEvent,
            ErrorKind::MalformedEvent,
            "event is not a Responses API event",
        ),
        (
            SimFaultKind::MissingDone,
            ErrorKind::MissingDone,
            "without response.completed",
        ),
    ] {
        let (addr, sim) = serve(SimConfig {
            decode_ms_per_token: Some(0.0),
            faults: vec![fault(kind)],
            ..SimConfig::default()
        })
        .await
        .unwrap();
        let base_url = format!("http://{addr}/v1");
        let workload: Workload =
            serde_saphyr::from_str("input_tokens: 50\noutput_tokens: 8\n").unwrap();
        let mut source = responses_prompts(&base_url, &workload);
        let target = servebench::plan::Target {
            api: Api::Responses,
            model: Some("sim".into()),
            ..Default::default()
        };
        let client = Client::new(client_config(&target, base_url, &workload, 1).unwrap()).unwrap();
        let record = client.send(0, &source.next_prompt(), Instant::now()).await;
        let error = record.error.as_ref().expect("the fault fails the request");
        assert_eq!(error.kind, expected, "{kind:?}: {error:?}");
        assert!(error.message.contains(text), "{kind:?}: {}", error.message);
        // The next request is whole.
        let record = client.send(1, &source.next_prompt(), Instant::now()).await;
        assert!(record.is_ok(), "{:?}", record.error);
        sim.shutdown().await;
    }
}

#[test]
fn settings_the_responses_api_and_tools_cannot_carry_fail_validate_with_their_position() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "version: 1\nname: bad\ntargets:\n  resp: {api: responses, simulator: {}}\n  text: {api: completions, simulator: {}}\n\
         workloads:\n  w:\n    input_tokens: 64\n    ignore_eos: true\n    body: {max_tokens: 9}\n\
         \x20 t:\n    input_tokens: 64\n    tools:\n      definitions: [{type: function, function: {description: x}}]\n\
         phases:\n  - {name: p, target: resp, workload: w, requests: 4, concurrency: 1}\n  - {name: q, target: text, workload: t, requests: 4, concurrency: 1}\n",
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
        ("`ignore_eos` does not apply to `api: responses`", at(9, 5)),
        (
            "`max_tokens` is not a field of the Responses API",
            at(10, 12),
        ),
        ("`tools` applies to `api: chat`", at(13, 5)),
        ("a function tool needs `function: {name: …}`", at(14, 21)),
    ] {
        let found = stderr
            .split("\n\n")
            .find(|block| block.contains(message))
            .unwrap_or_else(|| panic!("no `{message}` in:\n{stderr}"));
        assert!(found.contains(&place), "{message} not at {place}:\n{found}");
    }
    assert!(stderr.contains("4 errors"), "{stderr}");
}
