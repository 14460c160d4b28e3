//! The client's own measurements: `servebench selftest`, and calibration in a run's report.

use std::path::PathBuf;

use assert_cmd::Command;
use servebench::runner::{RunOptions, run};
use servebench::selftest::{OUTPUT_TOKENS, SelftestReport};
use servebench::wakeup::HintStatus;

#[test]
fn quick_selftest_reports_every_case_with_sane_figures() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("selftest.json");
    let output = Command::cargo_bin("servebench")
        .expect("binary")
        .args(["selftest", "--quick", "--output"])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("open loop at 2000 req/s"), "{stdout}");

    let report: SelftestReport =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("json written")).expect("json");
    assert!(report.quick);
    let shapes: Vec<(u32, u32)> = report
        .cases
        .iter()
        .map(|c| (c.prompt_tokens, c.concurrency))
        .collect();
    assert_eq!(shapes, [(16, 1), (16, 64), (4096, 1), (4096, 64)]);
    for case in &report.cases {
        assert!(case.requests > 0, "{case:?}");
        assert_eq!(case.errors, 0, "{case:?}");
        // Every response carries OUTPUT_TOKENS text chunks plus framing events.
        assert!(
            case.events_per_s > case.requests_per_s * f64::from(OUTPUT_TOKENS),
            "{case:?}"
        );
        assert!(case.client_cpu_s > 0.0 && case.client_cpu_s_per_million_events > 0.0);
        assert!(case.peak_rss_mib > 1.0, "{case:?}");
        let ttft = case.ttft_error_ms.expect("timestamps matched");
        assert_eq!(ttft.count, case.requests, "every request matched by id");
        // Same clock: the client cannot see the first content before the simulator sent it.
        assert!(ttft.p50 >= 0.0 && ttft.p50 <= ttft.p99 && ttft.p99 <= ttft.max);
        assert!(case.itl_span_error_ms.is_some());
    }
    // Timing error while parked and while busy polling, same load.
    assert!(!report.unsaturated.busy_poll && report.unsaturated_busy_poll.busy_poll);
    for case in [&report.unsaturated, &report.unsaturated_busy_poll] {
        assert_eq!(case.errors, 0, "{case:?}");
        let ttft = case.ttft_error_ms.expect("timestamps matched");
        assert_eq!(ttft.count, case.requests, "{case:?}");
    }
    assert_eq!(report.wake_latency.samples, 100);
    assert!(report.wake_latency.p50_ms <= report.wake_latency.p99_ms);
    // Asked for by default: held, or refused with the reason.
    match report.cpu_latency_hint.status {
        HintStatus::Held => assert!(report.cpu_latency_hint.reason.is_none()),
        HintStatus::Unavailable => assert!(report.cpu_latency_hint.reason.is_some()),
        HintStatus::Off => panic!("the hint is on unless --no-latency-hint"),
    }
    assert!(stdout.contains("CPU wake-latency hint:"), "{stdout}");
    let open = &report.open_loop;
    assert_eq!(open.target_rps, 2000.0);
    assert!(open.requests > 0 && open.errors == 0, "{open:?}");
    let lag = open.send_lag_ms.expect("open loop records send lag");
    assert_eq!(lag.count, open.requests);
}

fn small_plan(dir: &std::path::Path) -> PathBuf {
    let plan = dir.join("plan.yaml");
    std::fs::write(
        &plan,
        "version: 1\nname: calib\ntargets:\n  sim:\n    simulator:\n      decode_ms_per_token: 1\nworkloads:\n  w:\n    input_tokens: 32\n    output_tokens: 8\n    ignore_eos: true\ndefaults:\n  target: sim\n  workload: w\n  requests: 8\nphases:\n  - name: c2\n    concurrency: 2\n",
    )
    .expect("plan written");
    plan
}

fn options(plan: PathBuf, out: PathBuf, calibrate: bool) -> RunOptions {
    RunOptions {
        calibrate,
        latency_hint: calibrate,
        busy_poll: calibrate,
        ..crate::common::quiet_run_options(plan, &out)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calibration_and_load_share_appear_in_the_report() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = small_plan(dir.path());
    let outcome = run(options(plan.clone(), dir.path().join("on"), true))
        .await
        .expect("run succeeds");
    let report = outcome.report.expect("report");
    let calibration = report.client_calibration.expect("calibration recorded");
    assert!(calibration.requests_per_second > 0.0);
    assert!(calibration.events_per_second > calibration.requests_per_second);
    let share = report.phases[0].client_load_share.expect("load share set");
    // 8 requests at 1 ms per token use a sliver of the ceiling.
    assert!(share > 0.0 && share < 1.0, "{share}");
    let wake = calibration.wake_latency.expect("wake latency probed");
    assert_eq!(wake.samples, 200);
    assert!(wake.p50_ms >= 0.0 && wake.p50_ms <= wake.p99_ms && wake.p99_ms <= wake.max_ms);
    let hint = report
        .host
        .cpu_latency_hint
        .as_ref()
        .expect("hint recorded");
    assert_ne!(hint.status, HintStatus::Off);
    assert!(report.client_busy_poll);
    let json = std::fs::read_to_string(dir.path().join("on/report.json")).expect("written");
    assert!(json.contains("\"client_calibration\"") && json.contains("\"client_load_share\""));
    assert!(json.contains("\"wake_latency\"") && json.contains("\"client_busy_poll\": true"));
    let markdown = std::fs::read_to_string(dir.path().join("on/report.md")).expect("written");
    let client_line = markdown
        .lines()
        .find(|l| l.starts_with("| Client |"))
        .expect("a Client fact in the header");
    assert!(
        client_line.contains("ceiling") && client_line.contains("busy polling"),
        "{client_line}"
    );

    let outcome = run(options(plan, dir.path().join("off"), false))
        .await
        .expect("run succeeds");
    let report = outcome.report.expect("report");
    assert!(report.client_calibration.is_none());
    assert!(report.phases[0].client_load_share.is_none());
    assert_eq!(
        report.host.cpu_latency_hint.map(|h| h.status),
        Some(HintStatus::Off)
    );
    assert!(!report.client_busy_poll);
    let json = std::fs::read_to_string(dir.path().join("off/report.json")).expect("written");
    assert!(!json.contains("client_calibration") && !json.contains("client_busy_poll"));
}
