//! Cancelled requests on purpose (a workload's `cancel`), against the simulator over loopback:
//! the share cancelled is the share planned, each cancelled stream stops where the plan says
//! and the server sees it go (its abort counter, its slots), cancelled records stay out of the
//! figures that need a whole response, and a server that leaks aborted slots is flagged in
//! every report format while one that frees them is not. Plus the plan checks.

use std::path::Path;

use servebench::client::RequestRecord;
use servebench::report::{PhaseResult, Report};
use servebench::sim::{SimConfig, serve};

fn sim_config(json: &str) -> SimConfig {
    serde_json::from_str(json).expect("simulator settings")
}

/// A plan of one closed-loop phase against the simulator at `base_url`.
fn plan(base_url: &str, workload: &str, phase: &str) -> String {
    format!(
        "version: 1
name: cancel
seed: 3
targets:
  sim: {{base_url: \"{base_url}\", model: sim}}
workloads:
  w: {workload}
defaults: {{target: sim, workload: w}}
phases:
  - {phase}
"
    )
}

fn cancelled(phase: &PhaseResult) -> Vec<&RequestRecord> {
    phase
        .request_timings
        .iter()
        .filter(|r| r.is_cancelled())
        .collect()
}

async fn run_against(
    config: SimConfig,
    dir: &Path,
    workload: &str,
    phase: &str,
) -> (Report, servebench::sim::SimStats) {
    let (addr, handle) = serve(config).await.expect("simulator");
    let yaml = plan(&format!("http://{addr}/v1"), workload, phase);
    let report = crate::common::run_plan_text(dir, &yaml).await;
    // The server notices a dropped stream at its next write: give the last one time.
    let mut stats = handle.stats();
    for _ in 0..100 {
        if stats.in_flight == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        stats = handle.stats();
    }
    handle.shutdown().await;
    (report, stats)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifth_of_the_streams_are_dropped_after_eight_tokens_and_the_server_frees_them() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let config = sim_config(
        r#"{"max_running": 8, "prefill_tok_s": 0, "decode_ms_per_token": 1, "decode_ms_per_running": 0}"#,
    );
    let (report, stats) = run_against(
        config,
        dir.path(),
        "{input_tokens: 64, output_tokens: 32, ignore_eos: true, cancel: {fraction: 20%, after: {tokens: 8}}}",
        "{name: impatient, concurrency: 4, requests: 200}",
    )
    .await;
    let phase = &report.phases[0];
    let s = &phase.summary;
    assert_eq!((s.requests, s.errors), (200, 0), "{:?}", s.errors_by_kind);
    let share = s.cancelled as f64 / s.requests as f64;
    assert!(
        (share - 0.20).abs() <= 0.02,
        "cancelled {} of {}: {share}",
        s.cancelled,
        s.requests
    );
    assert_eq!(s.success + s.cancelled, s.requests);
    for r in cancelled(phase) {
        assert_eq!(r.cancelled_ms, Some(r.e2e_ms), "{r:?}");
        assert!(r.error.is_none());
        // Dropped at the read that brought the eighth token: never before it, never at the end.
        let tokens = r.output_tokens.expect("tokens received");
        assert!(
            (8..32).contains(&tokens),
            "{tokens} tokens before the cancel: {r:?}"
        );
    }
    // Figures that need a whole response count only the completed requests.
    assert_eq!(s.total_output_tokens, 32 * s.success);
    let e2e = phase
        .summary
        .distribution(servebench::figure::Figure::E2e)
        .unwrap();
    assert_eq!(e2e.samples, s.success);
    // TTFT is a true first-token time for a cancelled stream too (each got its first eight
    // tokens), so it counts every request.
    assert!(cancelled(phase).iter().all(|r| r.ttft_ms.is_some()));
    let ttft = phase
        .summary
        .distribution(servebench::figure::Figure::Ttft)
        .unwrap();
    assert_eq!(ttft.samples, s.success + s.cancelled);
    // The server saw every disconnect: each cancelled stream is an abort, its slot freed.
    assert_eq!(stats.requests_aborted, s.cancelled, "{stats:?}");
    assert_eq!((stats.running, stats.slots_leaked), (0, 0), "{stats:?}");
    let finding = phase
        .cancellations
        .as_ref()
        .expect("a cancellations finding");
    assert_eq!(finding.cancelled, s.cancelled);
    assert!(!finding.capacity_lost, "{finding:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_cancel_drops_the_stream_at_its_time() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    // 200 tokens at 2 ms each: a whole reply takes 400 ms, the cancel comes at 60 ms.
    let config = sim_config(
        r#"{"prefill_tok_s": 0, "decode_ms_per_token": 2, "decode_ms_per_running": 0, "jitter": 0}"#,
    );
    let (report, stats) = run_against(
        config,
        dir.path(),
        "{input_tokens: 32, output_tokens: 200, ignore_eos: true, cancel: {fraction: 0.5, after: {time: 60ms}}}",
        "{name: impatient, concurrency: 4, requests: 20}",
    )
    .await;
    let phase = &report.phases[0];
    let s = &phase.summary;
    assert_eq!((s.requests, s.errors, s.cancelled), (20, 0, 10), "{s:?}");
    for r in cancelled(phase) {
        let at = r.cancelled_ms.unwrap();
        // Never before its time; long before the whole reply's 400 ms.
        assert!((60.0..250.0).contains(&at), "cancelled at {at} ms: {r:?}");
        let tokens = r.output_tokens.unwrap_or(0);
        assert!(tokens < 200, "{tokens}");
    }
    for r in phase.request_timings.iter().filter(|r| r.is_ok()) {
        assert_eq!(r.output_tokens, Some(200));
        assert!(r.e2e_ms > 300.0, "{r:?}");
    }
    assert_eq!(stats.requests_aborted, 10, "{stats:?}");
    assert_eq!(stats.running, 0);
}

/// plans/cancel.yaml: the same cancellations against a simulator that frees aborted slots and
/// one that leaks six of its eight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_leaks_aborted_slots_is_flagged_and_one_that_frees_them_is_not() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/cancel.yaml");
    servebench::runner::run(crate::common::quiet_run_options(plan, &out))
        .await
        .expect("run");
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    crate::common::assert_valid_report(&json);
    let report = servebench::report::read_report(&out.join("report.json")).unwrap();
    let finding = |name: &str| {
        let phase = report
            .phases
            .iter()
            .find(|p| p.header.phase == name)
            .unwrap();
        let share = phase.summary.cancelled as f64 / phase.summary.requests as f64;
        (phase.cancellations.clone().expect("a finding"), share)
    };
    let (frees, frees_share) = finding("frees-slots");
    let (leaks, leaks_share) = finding("leaks-slots");
    eprintln!("frees: {frees:?}\nleaks: {leaks:?}");
    // Every request sent after `from` (1.5 s) is a candidate: a fifth of them, so fewer over
    // the whole phase.
    for share in [frees_share, leaks_share] {
        assert!((0.05..0.2).contains(&share), "{share}");
    }
    let (before, after) = (
        frees.before.as_ref().unwrap(),
        frees.after.as_ref().unwrap(),
    );
    assert!(before.finished >= 30 && after.finished >= 30, "{frees:?}");
    assert!(frees.change.unwrap() > -0.2, "{frees:?}");
    assert!(!frees.capacity_lost, "{frees:?}");
    assert!(leaks.change.unwrap() < -0.3, "{leaks:?}");
    assert!(leaks.capacity_lost, "{leaks:?}");
    // The simulator counts aborts like vLLM, seen in its /metrics: every cancelled stream, but
    // for the last one or two it may not have written to yet when the phase's scrape came.
    for c in [&frees, &leaks] {
        let aborted = c.server_aborted.expect("the abort counter");
        let cancelled = c.cancelled as f64;
        assert!(aborted <= cancelled && aborted >= cancelled - 2.0, "{c:?}");
    }
    assert_eq!(json["phases"][1]["cancellations"]["capacity_lost"], true);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let section = md
        .split("## Cancellations")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("a Cancellations section");
    let rows: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("| leaks-slots") || l.starts_with("| frees-slots"))
        .collect();
    assert_eq!(rows.len(), 2, "{section}");
    assert!(
        rows.iter()
            .any(|r| r.starts_with("| leaks-slots") && r.contains("capacity lost")),
        "{section}"
    );
    assert!(
        rows.iter()
            .any(|r| r.starts_with("| frees-slots") && r.contains("recovered")),
        "{section}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("id=\"cancellations\""),
        "no Cancellations section in the HTML"
    );
    assert!(html.contains("capacity lost") && html.contains("recovered"));
}

fn validate(dir: &Path, yaml: &str) -> (i32, String) {
    crate::common::validate_yaml(dir, yaml)
}

fn sim_plan(workload: &str, api: &str) -> String {
    crate::common::one_phase_sim_plan("cancel", workload, api)
}

#[test]
fn typos_and_bad_values_are_refused_at_their_key() {
    let dir = tempfile::tempdir().unwrap();
    let ok = sim_plan(
        "{input_tokens: 64, cancel: {fraction: 20%, after: {tokens: 8}, from: 2s}}",
        "chat",
    );
    let (code, stderr) = validate(dir.path(), &ok);
    assert_eq!(code, 0, "{stderr}");
    // Each mistake is reported at its own key or value: the caret's column is where `at` is.
    let cases = [
        (
            "{input_tokens: 64, cancel: {fractoin: 20%, after: {tokens: 8}}}",
            "chat",
            "did you mean `fraction`?",
            "fractoin",
        ),
        (
            "{input_tokens: 64, cancel: {fraction: 20%, after: {tokns: 8}}}",
            "chat",
            "did you mean `tokens`?",
            "tokns",
        ),
        (
            "{input_tokens: 64, canel: {fraction: 20%, after: {tokens: 8}}}",
            "chat",
            "did you mean `cancel`?",
            "canel",
        ),
        (
            "{input_tokens: 64, cancel: {fraction: 150%, after: {tokens: 8}}}",
            "chat",
            "must be above 0 and at most 100%",
            "150%",
        ),
        (
            "{input_tokens: 64, cancel: {fraction: 0.2, after: {tokens: 0}}}",
            "chat",
            "must be at least 1 token",
            "0}",
        ),
        (
            "{input_tokens: 64, cancel: {fraction: 0.2, after: {time: soon}}}",
            "chat",
            "expected a duration",
            "soon",
        ),
        (
            "{input_tokens: 64, cancel: {fraction: 0.2, after: {time: 0s}}}",
            "chat",
            "must be longer than zero",
            "0s",
        ),
        (
            "{input_tokens: 64, cancel: {fraction: 0.2, after: {tokens: 8}}}",
            "embeddings",
            "answers in one body",
            "cancel",
        ),
    ];
    crate::common::assert_refused_at_their_key("cancel", &cases);
    // A misspelt required key is one mistake: no second "missing" error beside it.
    for (workload, _, want, _) in cases.iter().filter(|c| c.2.starts_with("did you mean")) {
        let (_, stderr) = validate(dir.path(), &sim_plan(workload, "chat"));
        assert!(
            !stderr.contains("is missing"),
            "{workload}: {want}: {stderr}"
        );
    }
}
