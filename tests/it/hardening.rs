//! Hardening of the `servebench` binary: interruptions at every point of a multi-phase run,
//! unwritable output, secrets kept out of every artefact, plans kept away from the
//! environment, and limits on what a plan may ask for.

use crate::common::assert_valid_report;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use servebench::report::Report;

fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_servebench"))
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn journal(out: &Path) -> Vec<serde_json::Value> {
    crate::common::records_and_journal(out)
}

/// Polls the journal (bounded) until `ready` holds for its lines.
fn wait_for(out: &Path, what: &str, ready: impl Fn(&[serde_json::Value]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // A line being written may be incomplete: only whole lines count while running.
        let text = std::fs::read_to_string(out.join("journal.jsonl")).unwrap_or_default();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if ready(&lines) {
            return;
        }
        assert!(Instant::now() < deadline, "the run never reached: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn lines_of<'a>(
    lines: &'a [serde_json::Value],
    phase: &'a str,
    window: &'a str,
) -> impl Iterator<Item = &'a serde_json::Value> {
    lines
        .iter()
        .filter(move |l| l["phase"] == phase && l["window"] == window)
}

/// Phases with a warmup, a long cooldown, a short one and a long one; tests pick with `--phase`.
const MULTI_PHASE: &str = "version: 1
name: multi
seed: 3
targets:
  sim:
    simulator: {max_running: 64, prefill_tok_s: 1000000, decode_ms_per_token: 2}
workloads:
  w: {input_tokens: 32, output_tokens: 8, ignore_eos: true}
defaults: {target: sim, workload: w}
phases:
  - {name: warm, concurrency: 2, warmup: {duration: 60s}, requests: 10}
  - {name: cool, concurrency: 2, requests: 12, cooldown: 60s}
  - {name: first, concurrency: 2, requests: 12}
  - {name: long, concurrency: 2, duration: 60s}
  - {name: never, concurrency: 2, requests: 10}
";

/// Starts a run of [`MULTI_PHASE`] (only the phases `only`, when given), waits for `ready`,
/// sends `sig`, and checks the partial report and the journal.
fn interrupt_at(
    sig: &str,
    only: &[&str],
    what: &str,
    ready: impl Fn(&[serde_json::Value]) -> bool,
) -> (Report, Vec<serde_json::Value>) {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(dir.path(), "plan.yaml", MULTI_PHASE);
    let out = dir.path().join("out");
    let mut cmd = bin();
    cmd.args(["run", "--quiet", "--output"])
        .arg(&out)
        .arg(&plan);
    for phase in only {
        cmd.args(["--phase", phase]);
    }
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&out, what, ready);
    let sent = Instant::now();
    signal(&child, sig);
    let exit = child.wait().unwrap();
    // Nothing in flight takes long: the run ends well inside the grace and the cooldowns.
    assert!(
        sent.elapsed() < Duration::from_secs(15),
        "{what}: took {:?} to stop",
        sent.elapsed()
    );
    assert_eq!(exit.code(), Some(3), "{what}: an interrupted run exits 3");
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_valid_report(&value);
    let report: Report = serde_json::from_value(value).unwrap();
    assert!(report.span.partial, "{what}");
    let reason = report.span.stop_reason.as_deref().unwrap_or("");
    assert!(reason.starts_with("interrupted"), "{what}: {reason}");
    let lines = journal(&out);
    // Journal ⊇ report: every reported request is journaled in its phase's measured window.
    let journaled: HashSet<(String, String)> = lines
        .iter()
        .filter(|l| l["window"] == "measured")
        .map(|l| {
            (
                l["phase"].as_str().unwrap().to_string(),
                l["request_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for phase in &report.phases {
        for r in &phase.request_timings {
            assert!(
                journaled.contains(&(phase.header.phase.clone(), r.request_id.clone())),
                "{what}: {} of {} is in the report but not the journal",
                r.request_id,
                phase.header.phase
            );
        }
        assert_eq!(phase.request_timings.len() as u64, phase.summary.requests);
    }
    (report, lines)
}

fn phase_names(report: &Report) -> Vec<&str> {
    report
        .phases
        .iter()
        .map(|p| p.header.phase.as_str())
        .collect()
}

#[test]
fn sigint_during_warmup_leaves_a_partial_report() {
    let (report, lines) = interrupt_at("INT", &[], "warmup of `warm`", |l| {
        lines_of(l, "warm", "warmup").count() >= 4
    });
    assert_eq!(lines_of(&lines, "warm", "measured").count(), 0);
    // The interrupted phase is either listed as partial with no measured request, or left out.
    for phase in &report.phases {
        assert_eq!(phase.header.phase, "warm");
        assert!(phase.partial);
        assert!(phase.request_timings.is_empty());
    }
}

#[test]
fn sigterm_mid_phase_leaves_a_partial_report() {
    let (report, _) = interrupt_at("TERM", &["long"], "the middle of `long`", |l| {
        lines_of(l, "long", "measured").count() >= 10
    });
    assert_eq!(phase_names(&report), ["long"]);
    assert!(report.phases[0].partial);
    assert!(report.phases[0].request_timings.len() >= 10);
}

#[test]
fn sigint_during_cooldown_stops_without_waiting_it_out() {
    let (report, lines) = interrupt_at("INT", &["cool", "long"], "the cooldown of `cool`", |l| {
        lines_of(l, "cool", "measured").count() == 12
    });
    assert_eq!(lines_of(&lines, "long", "measured").count(), 0);
    assert_eq!(phase_names(&report)[0], "cool");
    assert_eq!(report.phases[0].request_timings.len(), 12);
    assert!(
        report
            .phases
            .iter()
            .all(|p| p.header.phase != "long" || p.partial)
    );
}

#[test]
fn sigterm_between_phases_keeps_the_finished_phase_whole() {
    // Signalled as soon as `first` is complete: the report was rewritten with it and the
    // run is between phases or at the very start of `long`.
    let (report, _) = interrupt_at("TERM", &["first", "long"], "between phases", |l| {
        lines_of(l, "first", "measured").count() == 12
    });
    assert_eq!(report.phases[0].header.phase, "first");
    assert!(!report.phases[0].partial, "the finished phase is complete");
    assert_eq!(report.phases[0].request_timings.len(), 12);
    for phase in &report.phases[1..] {
        assert_eq!(phase.header.phase, "long");
        assert!(phase.partial);
    }
}

#[test]
fn a_second_signal_exits_at_once_with_the_journal_intact() {
    let dir = tempfile::tempdir().unwrap();
    // Each request takes ~20 s: the first signal's 5 s grace would be waited out.
    let plan = write(
        dir.path(),
        "plan.yaml",
        "version: 1\nname: slow\nseed: 1\ntargets:\n  sim:\n    simulator: {decode_ms_per_token: 100, prefill_tok_s: 1000000}\nworkloads:\n  w: {input_tokens: 32, output_tokens: 200, ignore_eos: true}\ndefaults: {target: sim, workload: w}\nphases:\n  - {name: quick, concurrency: 4, requests: 4, workload: q}\n  - {name: slow, concurrency: 2, requests: 4}\n"
            .replace("workloads:\n", "workloads:\n  q: {input_tokens: 32, output_tokens: 2, ignore_eos: true}\n")
            .as_str(),
    );
    let out = dir.path().join("out");
    let mut child = bin()
        .args(["run", "--quiet", "--output"])
        .arg(&out)
        .arg(&plan)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&out, "the end of `quick`", |l| {
        lines_of(l, "quick", "measured").count() == 4
    });
    std::thread::sleep(Duration::from_millis(300));
    let first = Instant::now();
    signal(&child, "INT");
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "TERM");
    let exit = child.wait().unwrap();
    assert!(
        first.elapsed() < Duration::from_secs(3),
        "the second signal did not exit at once: {:?}",
        first.elapsed()
    );
    assert_eq!(exit.code(), Some(3));
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("interrupted again"), "{stderr}");
    // Finished requests are all in the journal, whole; the last report written is valid.
    assert_eq!(lines_of(&journal(&out), "quick", "measured").count(), 4);
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_valid_report(&value);
}

/// A one-request plan against a server nobody listens on: any request sent would fail with
/// `connect`, and none may be sent.
fn one_request_plan(dir: &Path) -> PathBuf {
    write(
        dir,
        "plan.yaml",
        "version: 1\nname: o\ntargets:\n  s:\n    base_url: http://127.0.0.1:9/v1\nworkloads:\n  w: {input_tokens: 32, output_tokens: 2}\ndefaults: {target: s, workload: w}\nphases:\n  - {name: a, concurrency: 1, requests: 1}\n",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unwritable_out_fails_before_the_first_request_even_model_discovery() {
    // A target without `model` is asked for /models first: that must not happen either.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        "plan.yaml",
        &format!(
            "version: 1\nname: o\ntargets:\n  s:\n    base_url: http://{addr}/v1\nworkloads:\n  w: {{input_tokens: 32, output_tokens: 2}}\ndefaults: {{target: s, workload: w}}\nphases:\n  - {{name: a, concurrency: 1, requests: 1}}\n"
        ),
    );
    // /proc refuses new directories even to root.
    for out in ["/proc/servebench-out", "/proc/self/servebench/out"] {
        let output = bin()
            .args(["run", "--quiet", "--output", out])
            .arg(&plan)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{out}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("--output") && stderr.contains(out),
            "{stderr}"
        );
    }
    let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(accepted.is_err(), "a request reached the server");
}

#[test]
fn out_inside_a_missing_path_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        "plan.yaml",
        "version: 1\nname: o\ntargets:\n  sim:\n    simulator: {prefill_tok_s: 1000000, decode_ms_per_token: 1}\nworkloads:\n  w: {input_tokens: 32, output_tokens: 2}\ndefaults: {target: sim, workload: w}\nphases:\n  - {name: a, concurrency: 1, requests: 2}\n",
    );
    let out = dir.path().join("does/not/exist/yet");
    let output = bin()
        .args(["run", "--quiet", "--output"])
        .arg(&out)
        .arg(&plan)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    let report: Report = serde_json::from_str(&text).unwrap();
    assert_eq!(report.phases[0].request_timings.len(), 2);
}

#[test]
fn a_full_disk_fails_fast_with_a_clear_message() {
    // A 16 KiB tmpfs fills up at once. Mounting needs privileges; where the sandbox refuses
    // it the test has nothing to check and says so.
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("tiny");
    std::fs::create_dir(&mount).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16k"])
        .arg("tmpfs")
        .arg(&mount)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("cannot mount a tmpfs here: full-disk case not exercised");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mount.clone());
    // Fill it.
    let filler = std::fs::write(mount.join("filler"), vec![0u8; 64 * 1024]);
    assert!(filler.is_err(), "the tmpfs did not fill");
    let plan = one_request_plan(dir.path());
    let output = bin()
        .args(["run", "--quiet", "--output"])
        .arg(mount.join("out"))
        .arg(&plan)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--output"), "{stderr}");
    assert!(
        stderr.to_lowercase().contains("no space"),
        "the message names the cause: {stderr}"
    );
}

#[test]
fn a_disk_that_fills_mid_run_ends_it_with_a_clear_error_and_a_readable_report() {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("tiny");
    std::fs::create_dir(&mount).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k"])
        .arg("tmpfs")
        .arg(&mount)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("cannot mount a tmpfs here: full-disk case not exercised");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mount.clone());
    // 2000 journal lines need far more than 64 KiB.
    let plan = write(
        dir.path(),
        "plan.yaml",
        "version: 1\nname: o\ntargets:\n  sim:\n    simulator: {prefill_tok_s: 1000000, decode_ms_per_token: 0}\nworkloads:\n  w: {input_tokens: 32, output_tokens: 2}\ndefaults: {target: sim, workload: w}\nphases:\n  - {name: a, concurrency: 4, requests: 2000}\n  - {name: b, concurrency: 4, requests: 20}\n",
    );
    let out = mount.join("out");
    let output = bin()
        .args(["run", "--quiet", "--output"])
        .arg(&out)
        .arg(&plan)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("No space left"), "{stderr}");
    // The last report that fit is still whole JSON, and no temporary file is left.
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_valid_report(&value);
    for entry in std::fs::read_dir(&out).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(
            !name.to_string_lossy().ends_with(".tmp"),
            "{name:?} left behind"
        );
    }
}

const SENTINEL_KEY: &str = "sk-SENTINEL-7c1e9f4a2b";
const SENTINEL_HEADER: &str = "hdr-SENTINEL-5d8a3e6f01";

/// Answers every other request with a 401 whose body echoes the request head (headers and
/// all), the rest with a short valid stream.
async fn echoing_server(listener: tokio::net::TcpListener) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let requests = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    while let Ok((mut stream, _)) = listener.accept().await {
        let requests = requests.clone();
        tokio::spawn(async move {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(k) => buf.extend_from_slice(&chunk[..k]),
                }
            }
            // The run's identity probe (GETs) gets a 404 and does not count as a request.
            if buf.starts_with(b"GET ") {
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
                return;
            }
            let n = requests.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let unauthorized = n % 2 == 1;
            let head = String::from_utf8_lossy(&buf).replace(['\r', '\n', '"'], " ");
            let response = if unauthorized {
                let body = format!("{{\"error\":{{\"message\":\"bad credentials: {head}\"}}}}");
                format!(
                    "HTTP/1.1 401 Unauthorized\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                )
            } else {
                "HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\ndata: [DONE]\n\n".to_string()
            };
            let _ = stream.write_all(response.as_bytes()).await;
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_appear_in_no_artefact_of_a_run() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(echoing_server(listener));
    let dir = tempfile::tempdir().unwrap();
    let secret_headers = format!(
        "{{x-api-key: {SENTINEL_HEADER}, Authorization: Bearer {SENTINEL_HEADER}, x-trace: visible}}"
    );
    let plan = write(
        dir.path(),
        "plan.yaml",
        &format!(
            "version: 1\nname: secret\nseed: 1\ntargets:\n  sim:\n    simulator: {{prefill_tok_s: 1000000, decode_ms_per_token: 1}}\n    api_key_env: SERVEBENCH_TEST_KEY\n    headers: {secret_headers}\n  echo:\n    base_url: http://{addr}/v1\n    model: m\n    api_key_env: SERVEBENCH_TEST_KEY\n    headers: {secret_headers}\n    timeout: {{total: 5s}}\nworkloads:\n  w: {{input_tokens: 32, output_tokens: 4}}\ndefaults: {{workload: w}}\nphases:\n  - {{name: sim, target: sim, concurrency: 2, requests: 4}}\n  - {{name: echo, target: echo, concurrency: 1, requests: 6}}\n"
        ),
    );
    let out = dir.path().join("out");
    let output: Output = tokio::process::Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(["run", "--output"])
        .arg(&out)
        .arg(&plan)
        .env("SERVEBENCH_TEST_KEY", SENTINEL_KEY)
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report: Report =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    // The error path was taken: the 401s are counted, with the server's message.
    let echo = &report.phases[1];
    assert_eq!(echo.summary.errors, 3, "{:?}", echo.summary.errors_by_kind);
    let message = &echo.request_timings[0].error.as_ref().unwrap().message;
    assert!(
        message.contains("401") && message.contains("x-api-key"),
        "{message}"
    );
    assert!(message.contains("<redacted>"), "{message}");
    // The target's non-secret header is kept, the secret ones are not.
    assert_eq!(report.plan.targets["sim"].headers["x-trace"], "visible");
    let mut artefacts = vec![
        ("stdout".to_string(), output.stdout.clone()),
        ("stderr".to_string(), output.stderr.clone()),
    ];
    for (path, bytes) in crate::common::files_under(&out) {
        artefacts.push((path.display().to_string(), bytes));
    }
    let names: Vec<&str> = artefacts.iter().map(|(n, _)| n.as_str()).collect();
    for needed in ["report.json", "report.md", "report.html", "journal.jsonl"] {
        assert!(
            names.iter().any(|n| n.ends_with(needed)),
            "{needed} missing"
        );
    }
    for (name, bytes) in &artefacts {
        let text = String::from_utf8_lossy(bytes);
        for sentinel in [SENTINEL_KEY, SENTINEL_HEADER, "SENTINEL"] {
            assert!(!text.contains(sentinel), "{sentinel} leaked into {name}");
        }
    }
}

#[test]
fn a_missing_api_key_names_the_variable_and_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        "plan.yaml",
        "version: 1\nname: k\ntargets:\n  s:\n    base_url: http://127.0.0.1:9/v1\n    model: m\n    api_key_env: SERVEBENCH_TEST_UNSET_KEY\nworkloads:\n  w: {input_tokens: 32, output_tokens: 2}\ndefaults: {target: s, workload: w}\nphases:\n  - {name: a, concurrency: 1, requests: 1}\n",
    );
    let output = bin()
        .args(["run", "--quiet", "--output"])
        .arg(dir.path().join("out"))
        .arg(&plan)
        .env_remove("SERVEBENCH_TEST_UNSET_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("SERVEBENCH_TEST_UNSET_KEY"), "{stderr}");
}

#[test]
fn plan_templates_cannot_read_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    // Every way a Jinja template might reach the environment, each in its own plan.
    let attempts = [
        "{{ env.SERVEBENCH_TEST_ENV }}",
        "{{ SERVEBENCH_TEST_ENV }}",
        "{{ environ['SERVEBENCH_TEST_ENV'] }}",
        "{{ env('SERVEBENCH_TEST_ENV') }}",
        "{{ getenv('SERVEBENCH_TEST_ENV') }}",
        "{{ os.environ.SERVEBENCH_TEST_ENV }}",
        "{{ lookup('env', 'SERVEBENCH_TEST_ENV') }}",
        "{{ debug() }}",
        "{{ self }}",
        "{{ range(3) | list }}",
    ];
    for attempt in attempts {
        let plan = write(
            dir.path(),
            "plan.yaml",
            &format!(
                "version: 1\nname: e\ndescription: \"{attempt}\"\nmetadata: {{x: \"{attempt}\"}}\ntargets:\n  sim:\n    simulator: {{}}\nworkloads:\n  w: {{input_tokens: 32, output_tokens: 2}}\ndefaults: {{target: sim, workload: w}}\nphases:\n  - {{name: a, concurrency: 1, requests: 1}}\n"
            ),
        );
        let output = bin()
            .arg("expand")
            .arg(&plan)
            .env("SERVEBENCH_TEST_ENV", "env-SENTINEL-93b1")
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            !all.contains("env-SENTINEL"),
            "{attempt} read the environment: {all}"
        );
    }
}

/// `validate` on a plan with one phase line; returns (exit code, stderr).
fn validate_phase(phase: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        "plan.yaml",
        &format!(
            "version: 1\nname: l\ntargets:\n  sim:\n    simulator: {{}}\nworkloads:\n  w: {{input_tokens: 32, output_tokens: 2}}\ndefaults: {{target: sim, workload: w}}\nphases:\n  - {phase}\n"
        ),
    );
    let output = bin().arg("validate").arg(&plan).output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn absurd_durations_concurrency_and_rates_are_refused() {
    let cases = [
        (
            "{name: a, concurrency: 1, duration: 31d}",
            "phases[0].duration",
            "30 days",
        ),
        (
            "{name: a, concurrency: 1, requests: 1, warmup: {duration: 1000h}}",
            "warmup.duration",
            "30 days",
        ),
        (
            "{name: a, concurrency: 1, requests: 1, cooldown: 100d}",
            "cooldown",
            "30 days",
        ),
        (
            "{name: a, concurrency: 1000001, requests: 1}",
            "phases[0].concurrency",
            "1000000",
        ),
        (
            "{name: a, rate: {rps: 5, max_concurrency: 4000000000}, requests: 1}",
            "max_concurrency",
            "1000000",
        ),
        (
            "{name: a, rate: {rps: 1e12}, requests: 1}",
            "rate.rps",
            "requests per second",
        ),
    ];
    for (phase, path, limit) in cases {
        let (code, stderr) = validate_phase(phase);
        assert_eq!(code, Some(2), "{phase}: {stderr}");
        assert!(
            stderr.contains(path) && stderr.contains(limit),
            "{phase}: {stderr}"
        );
    }
    // The limits themselves are allowed.
    for phase in [
        "{name: a, concurrency: 1000000, duration: 30d}",
        "{name: a, rate: {rps: 1000000}, duration: 720h}",
    ] {
        let (code, stderr) = validate_phase(phase);
        assert_eq!(code, Some(0), "{phase}: {stderr}");
    }
}

#[test]
fn a_plan_expanding_to_too_many_phases_is_refused() {
    let (code, stderr) = validate_phase(
        "{name: \"a-{{ c }}-{{ d }}\", concurrency: \"{{ c }}\", requests: \"{{ d }}\", matrix: {c: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34], d: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34]}}",
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("1156") && stderr.contains("1000"),
        "{stderr}"
    );
}

#[test]
fn bad_dataset_files_fail_with_exit_2_and_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("empty.jsonl"), b"").unwrap();
    std::fs::write(
        dir.path().join("binary.jsonl"),
        b"\x89PNG\r\n\x1a\n\x00\x00",
    )
    .unwrap();
    std::fs::copy(
        repo_path("tests/fixtures/workload/sharegpt.json"),
        dir.path().join("sharegpt.json"),
    )
    .unwrap();
    std::fs::copy(
        repo_path("tests/fixtures/workload/prompts.jsonl"),
        dir.path().join("prompts.jsonl"),
    )
    .unwrap();
    let cases = [
        ("missing.jsonl", "jsonl", "cannot read"),
        ("empty.jsonl", "jsonl", "no usable entries"),
        ("binary.jsonl", "jsonl", "not UTF-8"),
        // Each format given the other's file.
        ("sharegpt.json", "jsonl", "invalid JSON"),
        ("prompts.jsonl", "sharegpt", "prompts.jsonl"),
    ];
    for (file, format, expect) in cases {
        let plan = write(
            dir.path(),
            "plan.yaml",
            &format!(
                "version: 1\nname: d\ntargets:\n  sim:\n    simulator: {{}}\nworkloads:\n  w:\n    dataset: {{path: {file}, format: {format}}}\n    output_tokens: 2\ndefaults: {{target: sim, workload: w}}\nphases:\n  - {{name: a, concurrency: 1, requests: 1}}\n"
            ),
        );
        let output = bin()
            .args(["run", "--quiet", "--output"])
            .arg(dir.path().join(format!("out-{file}-{format}")))
            .arg(&plan)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{file} as {format}: {stderr}"
        );
        assert!(
            stderr.contains(file) && stderr.contains(expect),
            "{file} as {format}: {stderr}"
        );
    }
}
