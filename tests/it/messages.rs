//! The Anthropic Messages API over loopback: `/v1/messages` streams measured against the
//! simulator's own send times and usage, the prompt tokens read as the API splits them (cache
//! reads apart), its headers, its failures, and the plan checks that keep it honest.

use std::time::{Duration, Instant};

use servebench::client::{Client, ErrorKind};
use servebench::plan::{Api, TokenizerSource, TokenizerSpec, Workload};
use servebench::runner::endpoint::client_config;
use servebench::sim::{SimConfig, SimPrefixCache, serve};
use servebench::workload::{ChatMessage, Prompt, PromptInput, PromptSource, WorkloadContext};

use crate::common::exclusive_run;

fn messages_prompts(base_url: &str, workload: &Workload) -> PromptSource {
    let context = WorkloadContext {
        api: Api::Messages,
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

fn messages_target() -> servebench::plan::Target {
    servebench::plan::Target {
        api: Api::Messages,
        model: Some("sim".into()),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_api_streams_match_the_simulators_ground_truth() {
    let _exclusive = exclusive_run().await;
    let (addr, sim) = serve(SimConfig {
        prefill_tok_s: Some(50_000.0),
        decode_ms_per_token: Some(2.0),
        jitter: Some(0.0),
        chunk_tokens: Some(2),
        // Natural lengths 15..=45 against a cap of 40: some end `end_turn`, some `max_tokens`.
        mean_output_tokens: Some(30),
        record_timestamps: Some(true),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let base_url = format!("http://{addr}/v1");
    let workload: Workload =
        serde_saphyr::from_str("input_tokens: {min: 100, max: 600}\noutput_tokens: 40\n").unwrap();
    let mut source = messages_prompts(&base_url, &workload);
    let client =
        Client::new(client_config(&messages_target(), base_url.clone(), &workload, 2).unwrap())
            .unwrap();
    assert_eq!(client.url(), format!("{base_url}/messages"));
    let mut lengths = Vec::new();
    let mut ttft_errors_ms = Vec::new();
    for index in 0..24 {
        let prompt = source.next_prompt();
        let origin = Instant::now();
        let record = client.send(index, &prompt, origin).await;
        assert!(record.is_ok(), "{:?}", record.error);
        assert_eq!(record.prompt_tokens, prompt.planned_prompt_tokens);
        let output = record.output_tokens.expect("usage in message_delta");
        assert!((15..=40).contains(&output), "{output}");
        assert_eq!(
            record.content_chunks,
            output.div_ceil(2),
            "two tokens a delta"
        );
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
    }
    assert!(lengths.contains(&40), "some stop at the cap: {lengths:?}");
    assert!(lengths.iter().any(|&n| n < 40), "{lengths:?}");
    ttft_errors_ms.sort_by(f64::total_cmp);
    let median = ttft_errors_ms[ttft_errors_ms.len() / 2];
    assert!(median < 2.0, "median TTFT error {median:.3} ms");
    sim.shutdown().await;
}

/// A repeated prompt is served from the prefix cache: the API reports the cache read apart
/// from `input_tokens`, and the record's prompt is their sum, its cached tokens the read.
/// The system message travels as `system`, the key as `x-api-key`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_reads_count_in_the_prompt_and_the_system_prompt_goes_apart() {
    let _exclusive = exclusive_run().await;
    let (addr, sim) = serve(SimConfig {
        decode_ms_per_token: Some(0.0),
        record_requests: Some(true),
        prefix_cache: Some(SimPrefixCache {
            capacity_tokens: 100_000,
            block_tokens: Some(16),
        }),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let base_url = format!("http://{addr}/v1");
    let workload: Workload =
        serde_saphyr::from_str("input_tokens: 300\noutput_tokens: 8\n").unwrap();
    let mut config = client_config(&messages_target(), base_url, &workload, 1).unwrap();
    config.endpoint.api_key = Some("secret-key".into());
    let client = Client::new(config).unwrap();
    let words = "alpha beta gamma delta ".repeat(60);
    let prompt = Prompt {
        input: PromptInput::Messages(vec![
            ChatMessage::new("system", "Answer briefly."),
            ChatMessage::new("user", words),
        ]),
        planned_prompt_tokens: None,
        max_tokens: 8,
        expected: None,
        scheduled_at: None,
        archetype: None,
        model: None,
        session: None,
    };
    let first = client.send(0, &prompt, Instant::now()).await;
    let second = client.send(1, &prompt, Instant::now()).await;
    assert!(first.is_ok() && second.is_ok(), "{first:?} {second:?}");
    let prompt_tokens = first.prompt_tokens.expect("usage");
    assert_eq!(second.prompt_tokens, Some(prompt_tokens));
    assert_eq!(first.cached_tokens, Some(0));
    let cached = second.cached_tokens.expect("a cache read");
    assert!(
        cached > prompt_tokens / 2 && cached < prompt_tokens,
        "{cached} of {prompt_tokens}"
    );
    let seen = sim.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0].messages[0],
        ("system".into(), "Answer briefly.".into())
    );
    assert_eq!(seen[0].messages[1].0, "user");
    let header = |name: &str| {
        seen[0]
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("x-api-key").as_deref(), Some("secret-key"));
    assert_eq!(header("anthropic-version").as_deref(), Some("2023-06-01"));
    assert_eq!(header("authorization"), None);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_api_failures_are_clear_errors() {
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
            "event is not a Messages API event",
        ),
        (
            SimFaultKind::MissingDone,
            ErrorKind::MissingDone,
            "without message_stop",
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
        let mut source = messages_prompts(&base_url, &workload);
        let client =
            Client::new(client_config(&messages_target(), base_url, &workload, 1).unwrap())
                .unwrap();
        let record = client.send(0, &source.next_prompt(), Instant::now()).await;
        let error = record.error.as_ref().expect("the fault fails the request");
        assert_eq!(error.kind, expected, "{kind:?}: {error:?}");
        assert!(error.message.contains(text), "{kind:?}: {}", error.message);
        let record = client.send(1, &source.next_prompt(), Instant::now()).await;
        assert!(record.is_ok(), "{:?}", record.error);
        sim.shutdown().await;
    }
}

#[test]
fn settings_the_messages_api_cannot_carry_fail_validate_with_their_position() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "version: 1\nname: bad\ntargets:\n  msg: {api: messages, simulator: {}}\n\
         workloads:\n  w:\n    input_tokens: 64\n    min_tokens: 4\n    body: {stream_options: {include_usage: true}}\n\
         phases:\n  - {name: p, target: msg, workload: w, requests: 4, concurrency: 1}\n",
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
        ("`min_tokens` does not apply to `api: messages`", at(8, 5)),
        (
            "`stream_options` is not a field of the Messages API",
            at(9, 12),
        ),
    ] {
        let found = stderr
            .split("\n\n")
            .find(|block| block.contains(message))
            .unwrap_or_else(|| panic!("no `{message}` in:\n{stderr}"));
        assert!(found.contains(&place), "{message} not at {place}:\n{found}");
    }
    assert!(stderr.contains("2 errors"), "{stderr}");
}
