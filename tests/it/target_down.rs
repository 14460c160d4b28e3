//! A target that is down, or goes down mid-phase: the run backs off at once, ends the phase
//! as "target down" (or waits for it), exits 3 and keeps the run out of the trends. The
//! simulator serves on loopback behind a URL and is shut down (and restarted) under the run.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use servebench::client::ErrorKind;
use servebench::report::Report;
use servebench::sim::{SimConfig, SimHandle};

/// A simulator fast enough for thousands of requests a second, slow enough (about 40 ms a
/// request) that the kill catches some in flight.
fn sim_config() -> SimConfig {
    serde_json::from_value(serde_json::json!({
        "seed": 1, "prefill_tok_s": 1000000, "decode_ms_per_token": 5
    }))
    .unwrap()
}

fn plan(addr: SocketAddr, phase: &str) -> String {
    format!(
        "version: 1\nname: down\nseed: 1\ntargets:\n  t: {{base_url: http://{addr}/v1, model: sim}}\n\
         workloads:\n  w: {{input_tokens: 32, output_tokens: 8, ignore_eos: true}}\n\
         defaults: {{target: t, workload: w}}\nphases:\n  - {phase}\n"
    )
}

/// `servebench run` on `yaml` into `dir/out`, recording into `dir/history.sqlite`; not
/// `--quiet`, so the phase lines show how each phase ended.
fn run_command(dir: &Path, yaml: &str) -> tokio::process::Child {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, yaml).unwrap();
    tokio::process::Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(["run", "--no-calibrate", "--output"])
        .arg(dir.join("out"))
        .arg("--history")
        .arg(dir.join("history.sqlite"))
        .arg(&path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// Wait (bounded) until the simulator has received `n` requests.
async fn received(sim: &SimHandle, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while sim.stats().requests_total < n {
        assert!(Instant::now() < deadline, "the run never sent {n} requests");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn finished(child: tokio::process::Child) -> Output {
    tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the run ends")
        .unwrap()
}

fn report(dir: &Path) -> Report {
    let text = std::fs::read_to_string(dir.join("out/report.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    crate::common::assert_valid_report(&value);
    serde_json::from_value(value).unwrap()
}

/// `servebench history list` of the run's store, as JSON.
fn history_runs(dir: &Path) -> Vec<serde_json::Value> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(["history", "list", "--format", "json", "--history"])
        .arg(dir.join("history.sqlite"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_killed_mid_phase_ends_it_as_down_exit_3_and_out_of_the_trends() {
    let _exclusive = crate::common::exclusive_run().await;
    let (addr, sim) = servebench::sim::serve(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let child = run_command(
        dir.path(),
        &plan(addr, "{name: p, concurrency: 4, duration: 8s}"),
    );
    received(&sim, 40).await;
    let sent_before_kill = sim.stats().requests_total;
    sim.shutdown().await;
    let output = finished(child).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("error: target down at "), "{stderr}");
    // Neither warning comes from requests that never reached a server.
    assert!(!stderr.contains("client-bound"), "{stderr}");
    assert!(!stderr.contains("missed their planned size"), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("— target down at "), "{stdout}");

    let report = report(dir.path());
    assert!(report.span.partial);
    let reason = report.span.stop_reason.clone().unwrap_or_default();
    assert!(
        reason.starts_with("target down at ") && reason.ends_with(" s (connection refused)"),
        "{reason}"
    );
    let phase = &report.phases[0];
    assert!(phase.partial);
    assert_eq!(phase.target_down.as_ref(), Some(&reason));
    // Every request after the kill failed: at most 100 of them, none a tight loop.
    let failed = phase
        .request_timings
        .iter()
        .filter(|r| r.error.is_some())
        .count();
    assert!(
        (3..=100).contains(&failed),
        "{failed} attempts after the kill"
    );
    assert!(phase.request_timings.len() as u64 >= sent_before_kill);
    // The phase ended well before its planned 8 s.
    let last = phase
        .request_timings
        .iter()
        .map(|r| r.start_offset_ms)
        .fold(0.0, f64::max);
    assert!(last < 7_000.0, "last request at {last} ms");
    let connect = phase.summary.errors_by_kind.get(&ErrorKind::Connect);
    assert!(connect.is_some_and(|n| *n >= 3), "{:?}", phase.summary);
    // Each refused request says why in the words of the check before the first phase.
    let refused = phase
        .request_timings
        .iter()
        .filter_map(|r| r.error.as_ref())
        .filter(|e| e.kind == ErrorKind::Connect);
    for error in refused {
        assert!(
            error.message.ends_with(&format!(
                "connection refused — is the server running at http://{addr}?"
            )),
            "{}",
            error.message
        );
    }

    let runs = history_runs(dir.path());
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["complete"], false, "{runs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_resumes_when_the_target_comes_back_and_reports_the_outage() {
    let _exclusive = crate::common::exclusive_run().await;
    let (addr, sim) = servebench::sim::serve(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let child = run_command(
        dir.path(),
        &plan(
            addr,
            "{name: p, concurrency: 4, duration: 9s, on_target_down: {then: wait, wait_up_to: 30s}}",
        ),
    );
    received(&sim, 40).await;
    sim.shutdown().await;
    let killed = Instant::now();
    // The outage must outlast the 2 s that make a target down; it lasts 3 s.
    tokio::time::sleep_until((killed + Duration::from_secs(3)).into()).await;
    let (_, sim) = servebench::sim::serve_on(sim_config(), addr)
        .await
        .expect("the same port again");
    let output = finished(child).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        sim.stats().requests_total > 40,
        "the phase went on after the restart"
    );

    let report = report(dir.path());
    assert!(!report.span.partial, "{:?}", report.span.stop_reason);
    let phase = &report.phases[0];
    assert_eq!(phase.target_down, None);
    assert_eq!(phase.outages.len(), 1, "{:?}", phase.outages);
    let outage = &phase.outages[0];
    assert_eq!(outage.cause, "connection refused");
    let recovered = outage.recovered_after_s.expect("it answered again");
    // 3 s down, then at most a probe's 1 s backoff (and a slow start) to answer.
    assert!((2.9..6.0).contains(&recovered), "{outage:?}");
    assert!(outage.down_at_s - outage.from_s >= 2.0, "{outage:?}");
    let until_ms = outage.until_s.unwrap() * 1e3;
    let after = phase
        .request_timings
        .iter()
        .filter(|r| r.is_ok() && r.start_offset_ms > until_ms)
        .count();
    assert!(after >= 10, "{after} successes after the outage");
    assert!(
        report.phases.iter().all(|p| p.outages.len() <= 1),
        "one outage"
    );
    let runs = history_runs(dir.path());
    assert_eq!(runs[0]["complete"], true, "{runs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_storm_is_measured_as_rate_limited_errors_never_as_a_target_down() {
    let _exclusive = crate::common::exclusive_run().await;
    let config: SimConfig = serde_json::from_value(serde_json::json!({
        "seed": 1,
        "faults": [{"kind": "rate_limit", "seconds": 1, "probability": 1.0}]
    }))
    .unwrap();
    let (addr, sim) = servebench::sim::serve(config).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // `then: fail` spelled out: a storm taken for an outage would end the phase.
    let child = run_command(
        dir.path(),
        &plan(
            addr,
            "{name: p, concurrency: 2, duration: 3s, expect_errors: true, on_target_down: {then: fail}}",
        ),
    );
    let output = finished(child).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let report = report(dir.path());
    assert!(!report.span.partial);
    let phase = &report.phases[0];
    assert_eq!(phase.target_down, None);
    assert!(phase.outages.is_empty(), "{:?}", phase.outages);
    let limited = phase.summary.errors_by_kind.get(&ErrorKind::RateLimited);
    assert_eq!(
        limited,
        Some(&phase.summary.requests),
        "{:?}",
        phase.summary
    );
    assert_eq!(sim.stats().requests_total, phase.summary.requests);
    assert!(phase.summary.requests > 50, "{}", phase.summary.requests);
    sim.shutdown().await;
}

/// Each `(on_target_down, want, at)`: on a phase or in `defaults`, the plan is refused (exit
/// 2) with an error holding `want` whose caret is where `at` is on that line.
#[test]
fn bad_on_target_down_values_are_refused_at_their_key() {
    let dir = tempfile::tempdir().unwrap();
    let plan = |phase: &str, defaults: &str| {
        format!(
            "version: 1\nname: v\ntargets:\n  sim: {{simulator: {{}}}}\nworkloads:\n  w: {{input_tokens: 8}}\n\
             defaults: {{target: sim, workload: w{defaults}}}\n\
             phases:\n  - {{name: p, concurrency: 1, requests: 4{phase}}}\n"
        )
    };
    let cases = [
        (
            "{then: sometimes}",
            "expected one of `fail`, `wait`, `continue`",
            "sometimes",
        ),
        (
            "{then: continue, wait_up_to: 5s}",
            "only applies to `then: wait`",
            "5s",
        ),
        (
            "{then: wait, wait_up_to: 0s}",
            "must be longer than zero",
            "0s",
        ),
        (
            "{then: wait, wait_up_to: 31d}",
            "longer than the limit of 30 days",
            "31d",
        ),
        (
            "{then: wait, wait_upto: 5s}",
            "did you mean `wait_up_to`?",
            "wait_upto",
        ),
    ];
    for (value, want, at) in cases {
        let setting = format!(", on_target_down: {value}");
        for (yaml, line) in [(plan(&setting, ""), 9), (plan("", &setting), 7)] {
            let (code, stderr) = crate::common::validate_yaml(dir.path(), &yaml);
            assert_eq!(code, 2, "{value}: {stderr}");
            let column = yaml.lines().nth(line - 1).unwrap().find(at).unwrap() + 1;
            let error = stderr
                .split("error: ")
                .find(|e| e.contains(want))
                .unwrap_or_else(|| panic!("{value}: no `{want}` in {stderr}"));
            assert!(
                error.contains(&format!("plan.yaml:{line}:{column}\n")),
                "{value}: {error}"
            );
        }
    }
    let good = plan(", on_target_down: {then: wait, wait_up_to: 2m}", "");
    let (code, stderr) = crate::common::validate_yaml(dir.path(), &good);
    assert_eq!(code, 0, "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_whose_target_goes_down_ends_the_search_without_a_verdict() {
    let _exclusive = crate::common::exclusive_run().await;
    let (addr, sim) = servebench::sim::serve(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let child = run_command(
        dir.path(),
        &plan(
            addr,
            "{name: capacity, search: {load: concurrency, min: 2, max: 16, slo: {ttft: {p95: 10s}}, probe: {duration: 8s}}}",
        ),
    );
    received(&sim, 30).await;
    sim.shutdown().await;
    let output = finished(child).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let report = report(dir.path());
    assert!(report.span.partial);
    let search = &report.searches[0];
    assert_eq!(
        search.stop,
        Some(servebench::report::SearchStop::TargetDown { at: 2.0 }),
        "{search:?}"
    );
    assert_eq!(search.stop_reason, "stopped: target down at concurrency 2");
    assert_eq!(search.capacity, None);
    let probe = report.phases.last().unwrap();
    assert!(probe.target_down.is_some(), "{probe:?}");
    let verdict = probe.probe.as_ref().map(|p| p.verdict);
    assert_eq!(
        verdict,
        Some(servebench::metrics::verdict::Verdict::Indeterminate)
    );
}
