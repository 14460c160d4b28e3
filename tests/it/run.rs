//! `servebench run` end to end against the simulator over loopback: scheduling, warmups,
//! rechecks, faults, interrupts and the report's schema.

use crate::common::assert_valid_report;
use std::path::{Path, PathBuf};
use std::time::Duration;

use servebench::client::ErrorKind;
use servebench::figure::Figure;
use servebench::plan::ExpandOptions;
use servebench::report::{DriftVerdict, Report};
use servebench::runner::{RunOptions, run};
use servebench::sim::{SimConfig, serve};

fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn options(plan: PathBuf, out: &Path, set: &[&str], targets: Vec<String>) -> RunOptions {
    RunOptions {
        expand: ExpandOptions {
            set: set.iter().map(|s| s.to_string()).collect(),
            target_overrides: targets,
            ..ExpandOptions::default()
        },
        ..crate::common::quiet_run_options(plan, out)
    }
}

fn write_plan(dir: &Path, yaml: &str) -> PathBuf {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

fn read_report(dir: &Path) -> (serde_json::Value, Report) {
    let text = std::fs::read_to_string(dir.join("report.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let report: Report = serde_json::from_value(value.clone()).unwrap();
    (value, report)
}

/// The journal's request records (its other lines hold each phase's facts).
fn journal_lines(dir: &Path) -> Vec<serde_json::Value> {
    crate::common::records_and_journal(dir)
        .into_iter()
        .filter(|l| l.get("request_index").is_some())
        .collect()
}

/// A plan with one simulator-backed target named `sim` (overridden to `base_url` by tests that
/// start their own simulator).
fn plan(workload: &str, phases: &str) -> String {
    format!(
        "version: 1\nname: t\nseed: 3\ntargets:\n  sim:\n    simulator: {{max_running: 256, prefill_tok_s: 1000000, decode_ms_per_token: 1, decode_ms_per_running: 0}}\nworkloads:\n  w:\n{workload}\ndefaults: {{target: sim, workload: w}}\nphases:\n{phases}"
    )
}

const SMALL_WORKLOAD: &str = "    input_tokens: 64\n    output_tokens: 8\n    ignore_eos: true\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quickstart_writes_a_report_that_matches_the_schema() {
    let _exclusive = crate::common::exclusive_run().await;
    let out = tempfile::tempdir().unwrap();
    let outcome = run(options(
        repo_path("plans/quickstart.yaml"),
        out.path(),
        &["duration=1s"],
        vec![],
    ))
    .await
    .unwrap();
    assert!(!outcome.interrupted);
    let (value, report) = read_report(out.path());
    assert_valid_report(&value);
    assert!(!report.span.partial);
    let names: Vec<&str> = report
        .phases
        .iter()
        .map(|p| p.header.phase.as_str())
        .collect();
    assert_eq!(names, ["c1", "c8", "rate-20", "c1-recheck"]);
    assert_eq!(report.rechecks.len(), 1);
    for phase in &report.phases {
        assert!(
            phase.summary.requests > 0,
            "{} ran no request",
            phase.header.phase
        );
        assert_eq!(phase.summary.errors, 0, "{}", phase.header.phase);
        assert_eq!(phase.request_timings.len() as u64, phase.summary.requests);
        // Simulator targets are scraped before and after every phase.
        assert!(phase.server_metrics.is_some());
    }
    // The report can be read back as a plan and expands to the same plan.
    let again =
        servebench::plan::prepare(&out.path().join("report.json"), &ExpandOptions::default())
            .unwrap();
    assert_eq!(again.plan, report.plan);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_plan_runs_fourteen_phases_in_seed_order_with_rechecks_paired() {
    let _exclusive = crate::common::exclusive_run().await;
    let out = tempfile::tempdir().unwrap();
    let set = ["duration=300ms", "soak_duration=300ms", "warmup=100ms"];
    run(options(
        repo_path("plans/gateway.yaml"),
        out.path(),
        &set,
        vec![],
    ))
    .await
    .unwrap();
    let (value, report) = read_report(out.path());
    assert_valid_report(&value);
    let seed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path("tests/fixtures/seeds/004_00b102e15ffdad6e.txt"))
            .unwrap(),
    )
    .unwrap();
    let seed_names: Vec<&str> = seed["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    let names: Vec<&str> = report
        .phases
        .iter()
        .map(|p| p.header.phase.as_str())
        .collect();
    assert_eq!(names, seed_names);
    let seed_routes: Vec<&str> = seed["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["route"].as_str().unwrap())
        .collect();
    let routes: Vec<&str> = report
        .phases
        .iter()
        .map(|p| p.header.route.as_str())
        .collect();
    assert_eq!(routes, seed_routes);
    let pairs: Vec<(&str, &str)> = report
        .rechecks
        .iter()
        .map(|r| (r.original.as_str(), r.recheck.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("gateway-c4", "recheck-c4"),
            ("gateway-c16", "recheck-c16"),
            ("gateway-c32", "recheck-c32"),
            ("prefix-random", "recheck-prefix-random"),
            ("prefix-aware", "recheck-prefix-aware"),
        ]
    );
    // Phase offsets increase in run order, as seed 004 reports them.
    assert_eq!(report.phases[0].header.start_offset_seconds, 0.0);
    assert!(
        report
            .phases
            .windows(2)
            .all(|w| w[1].header.start_offset_seconds >= w[0].end_offset_seconds)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_holds_exactly_n_in_flight_and_warmup_is_not_counted() {
    let _exclusive = crate::common::exclusive_run().await;
    let (addr, sim) = serve(SimConfig {
        max_running: Some(64),
        decode_ms_per_token: Some(2.0),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan_path = write_plan(
        dir.path(),
        &plan(
            SMALL_WORKLOAD,
            "  - {name: c6, concurrency: 6, requests: 60, warmup: {requests: 12}}\n",
        ),
    );
    let out = dir.path().join("out");
    run(options(
        plan_path,
        &out,
        &[],
        vec![format!("sim=http://{addr}/v1")],
    ))
    .await
    .unwrap();
    let stats = sim.stats();
    sim.shutdown().await;
    assert_eq!(
        stats.max_running_observed, 6,
        "closed loop must hold exactly N in flight"
    );
    assert_eq!(
        stats.requests_total, 72,
        "warmup and measured requests both reach the server"
    );
    let (value, report) = read_report(&out);
    assert_valid_report(&value);
    let phase = &report.phases[0];
    assert_eq!(phase.warmup.requests, 12);
    assert_eq!(phase.summary.requests, 60);
    let indices: Vec<u64> = phase
        .request_timings
        .iter()
        .map(|r| r.request_index)
        .collect();
    assert_eq!(
        indices,
        (0..60).collect::<Vec<_>>(),
        "only measured requests are in the report"
    );
    let journal = journal_lines(&out);
    assert_eq!(
        journal.iter().filter(|l| l["window"] == "measured").count(),
        60
    );
    assert_eq!(
        journal.iter().filter(|l| l["window"] == "warmup").count(),
        12
    );
    // A warmup request's ids are its own, so a server's logs and traces name one request each.
    for key in ["request_id", "trace_id"] {
        let ids: std::collections::HashSet<&str> =
            journal.iter().filter_map(|l| l[key].as_str()).collect();
        assert_eq!(ids.len(), 72, "{key}s are unique across the windows");
    }
    for line in &journal {
        let id = line["request_id"].as_str().unwrap();
        let warmup = line["window"] == "warmup";
        assert_eq!(id.contains("-c6-warmup-"), warmup, "{id}");
    }
}

/// Kolmogorov–Smirnov statistic of `gaps` against an exponential with `rate`.
fn ks_exponential(gaps: &mut [f64], rate: f64) -> f64 {
    gaps.sort_by(f64::total_cmp);
    let n = gaps.len() as f64;
    gaps.iter()
        .enumerate()
        .map(|(i, &x)| {
            let cdf = 1.0 - (-rate * x).exp();
            (cdf - i as f64 / n)
                .abs()
                .max(((i + 1) as f64 / n - cdf).abs())
        })
        .fold(0.0, f64::max)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_poisson_hits_its_rate_and_its_arrivals_fit_an_exponential() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let rps = 500.0;
    let plan_path = write_plan(
        dir.path(),
        &plan(
            SMALL_WORKLOAD,
            &format!(
                "  - {{name: open, rate: {{rps: {rps}, arrival: poisson}}, requests: 3000}}\n"
            ),
        ),
    );
    let out = dir.path().join("out");
    run(options(plan_path, &out, &[], vec![])).await.unwrap();
    let (_, report) = read_report(&out);
    let phase = &report.phases[0];
    assert_eq!(phase.summary.requests, 3000);
    assert_eq!(phase.summary.errors, 0);
    let ratio = phase.achieved_rate_ratio.unwrap();
    assert!(
        (ratio - 1.0).abs() < 0.05,
        "achieved {:.1}% of the target rate",
        ratio * 100.0
    );
    // The arrival process: scheduled send times, which responses never influence.
    let mut scheduled: Vec<f64> = phase
        .request_timings
        .iter()
        .map(|r| r.scheduled_offset_ms.unwrap() / 1e3)
        .collect();
    scheduled.sort_by(f64::total_cmp);
    let mut gaps: Vec<f64> = scheduled.windows(2).map(|w| w[1] - w[0]).collect();
    let d = ks_exponential(&mut gaps, rps);
    // 1% critical value of the one-sample KS test.
    let critical = 1.63 / (gaps.len() as f64).sqrt();
    assert!(
        d < critical,
        "inter-arrival times do not fit an exponential: D = {d:.4} ≥ {critical:.4}"
    );
    // Actual sends follow the schedule instead of drifting behind it (the benchmark measures
    // the lag's tails; a debug build on a shared machine only bounds the median).
    let lag = phase.summary.distribution(Figure::SendLag).unwrap();
    assert!(lag.p50 < 5.0, "median send lag {:.3} ms", lag.p50);
    for record in &phase.request_timings {
        let lag = record.send_lag_ms.unwrap();
        assert!((record.start_offset_ms - record.scheduled_offset_ms.unwrap() - lag).abs() < 1e-9);
        assert!(lag > -0.01, "a request went out {lag} ms before its time");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_storm_counts_every_error_by_kind_and_loses_no_record() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let faults = "[{kind: status, status: 503, probability: 0.08}, {kind: rate_limit, seconds: 1, probability: 0.04}, {kind: disconnect_mid_stream, probability: 0.04}, {kind: stall, seconds: 0.5, probability: 0.02}, {kind: malformed_event, probability: 0.02}]";
    let yaml = format!(
        "version: 1\nname: storm\nseed: 9\ntargets:\n  sim:\n    timeout: {{idle: 200ms}}\n    simulator: {{seed: 5, max_running: 64, prefill_tok_s: 1000000, decode_ms_per_token: 1, faults: {faults}}}\nworkloads:\n  w:\n{SMALL_WORKLOAD}defaults: {{target: sim, workload: w}}\nphases:\n  - {{name: storm, concurrency: 16, requests: 400}}\n"
    );
    let plan_path = write_plan(dir.path(), &yaml);
    let out = dir.path().join("out");
    run(options(plan_path, &out, &[], vec![])).await.unwrap();
    let (value, report) = read_report(&out);
    assert_valid_report(&value);
    let phase = &report.phases[0];
    assert_eq!(
        phase.request_timings.len(),
        400,
        "every request sent has a record"
    );
    assert_eq!(journal_lines(&out).len(), 400);
    let failed = phase
        .request_timings
        .iter()
        .filter(|r| r.error.is_some())
        .count() as u64;
    assert_eq!(phase.summary.errors, failed);
    assert_eq!(phase.summary.errors_by_kind.values().sum::<u64>(), failed);
    // About 20% of requests hit a fault; each injected kind shows up as its own error kind.
    assert!((40..=130).contains(&failed), "{failed} failed");
    for kind in [
        ErrorKind::HttpStatus,
        ErrorKind::RateLimited,
        ErrorKind::StreamBroken,
        ErrorKind::IdleTimeout,
        ErrorKind::MalformedEvent,
    ] {
        assert!(
            phase
                .summary
                .errors_by_kind
                .get(&kind)
                .copied()
                .unwrap_or(0)
                > 0,
            "no {kind:?} error counted: {:?}",
            phase.summary.errors_by_kind
        );
    }
}

#[test]
fn sigint_leaves_a_valid_partial_report_and_an_intact_journal() {
    let _exclusive = crate::common::exclusive_run_blocking();
    let dir = tempfile::tempdir().unwrap();
    let plan_path = write_plan(
        dir.path(),
        &plan(
            SMALL_WORKLOAD,
            "  - {name: first, concurrency: 4, requests: 40}\n  - {name: long, concurrency: 4, duration: 60s}\n  - {name: never, concurrency: 4, requests: 10}\n",
        ),
    );
    let out = dir.path().join("out");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(["run", "--quiet", "--output"])
        .arg(&out)
        .arg(&plan_path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait (bounded) until the second phase is under way: its records reach the journal.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let started_long = std::fs::read_to_string(out.join("journal.jsonl"))
            .map(|j| j.contains("\"phase\":\"long\""))
            .unwrap_or(false);
        if started_long {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run never reached its second phase"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(3), "an interrupted run exits 3");
    let (value, report) = read_report(&out);
    assert_valid_report(&value);
    assert!(report.span.partial);
    assert_eq!(report.span.stop_reason.as_deref(), Some("interrupted"));
    let names: Vec<&str> = report
        .phases
        .iter()
        .map(|p| p.header.phase.as_str())
        .collect();
    assert_eq!(names, ["first", "long"]);
    assert!(report.phases[1].partial);
    let in_report: usize = report.phases.iter().map(|p| p.request_timings.len()).sum();
    assert_eq!(
        journal_lines(&out).len(),
        in_report,
        "journal and report hold the same requests"
    );
    let rows = crate::common::record_rows(&out).len();
    assert_eq!(rows, journal_lines(&out).len());
}

#[test]
fn unwritable_out_fails_before_sending_anything() {
    let dir = tempfile::tempdir().unwrap();
    let plan_path = write_plan(
        dir.path(),
        &plan(
            SMALL_WORKLOAD,
            "  - {name: a, concurrency: 1, requests: 1}\n",
        ),
    );
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"not a directory").unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(["run", "--quiet", "--output"])
        .arg(blocker.join("out"))
        .arg(&plan_path)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--output"), "{stderr}");
}

#[test]
fn dry_run_prints_the_schedule_and_sends_nothing() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(["run", "--dry-run"])
        .arg(repo_path("plans/gateway.yaml"))
        .output()
        .unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("14 phase(s)"), "{stdout}");
    assert!(stdout.contains("eviction-c4"), "{stdout}");
    assert!(stdout.contains("recheck of gateway-c4"), "{stdout}");
    assert!(stdout.contains("estimated duration"), "{stdout}");
}

#[test]
fn seed_gateway_recheck_jump_reads_as_drifted() {
    // Built from seed 004's own phase summaries: gateway-c4's p99 TTFT 14.9 s vs 0.32 s.
    let seed = servebench::report::read_report(&repo_path(
        "tests/fixtures/seeds/004_00b102e15ffdad6e.txt",
    ))
    .unwrap();
    let find = |name: &str| seed.phases.iter().find(|p| p.header.phase == name).unwrap();
    let pair = servebench::metrics::recheck_pair(
        "gateway-c4",
        &find("gateway-c4").summary,
        "recheck-c4",
        &find("recheck-c4").summary,
        &Default::default(),
    );
    assert_eq!(pair.verdict, DriftVerdict::Drifted);
}

/// A simulator that, like FastAPI's request-id middlewares, answers a non-UUID `x-request-id`
/// with an empty 400: the default UUID ids pass, readable ids fail with a message that says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uuid_request_ids_pass_a_server_that_validates_them() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let yaml = |request_id: &str| {
        format!(
            "version: 1\nname: t\nseed: 3\ntargets:\n  sim:\n    simulator: {{require_uuid_request_id: true, prefill_tok_s: 1000000, decode_ms_per_token: 1}}\n{request_id}workloads:\n  w:\n{SMALL_WORKLOAD}defaults: {{target: sim, workload: w}}\nphases:\n  - {{name: c2, concurrency: 2, requests: 6}}\n"
        )
    };
    let default_out = dir.path().join("default");
    run(options(
        write_plan(dir.path(), &yaml("")),
        &default_out,
        &[],
        vec![],
    ))
    .await
    .unwrap();
    let (_, report) = read_report(&default_out);
    let phase = &report.phases[0];
    assert_eq!((phase.summary.requests, phase.summary.errors), (6, 0));
    for record in &phase.request_timings {
        let sent = record.sent_request_id.as_deref().expect("a UUID was sent");
        assert!(servebench::client::is_uuid(sent), "{sent}");
        assert_eq!(sent, servebench::client::uuid_for(&record.request_id));
    }

    let plain_out = dir.path().join("plain");
    run(options(
        write_plan(dir.path(), &yaml("    request_id: {format: plain}\n")),
        &plain_out,
        &[],
        vec![],
    ))
    .await
    .unwrap();
    let (_, report) = read_report(&plain_out);
    let phase = &report.phases[0];
    assert_eq!(phase.summary.errors, phase.summary.requests);
    let error = phase.request_timings[0].error.as_ref().expect("rejected");
    assert_eq!(error.status, Some(400));
    assert!(
        error.message.contains("empty response body"),
        "{}",
        error.message
    );
    assert!(error.message.contains("x-request-id"), "{}", error.message);
}
