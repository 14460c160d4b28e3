//! Secrets in `base_url`: user info never reaches an artefact, output or error of a run.

use std::path::Path;
use std::process::Output;

use servebench::report::Report;

const SENTINEL_PASS: &str = "urlSENTINELpw";

fn write_plan(dir: &Path, url: &str) -> std::path::PathBuf {
    let path = dir.join("plan.yaml");
    std::fs::write(
        &path,
        format!(
            "version: 1\nname: url-secret\nseed: 1\nvars:\n  url: \"{url}\"\ntargets:\n  t:\n    base_url: \"{{{{ url }}}}\"\n    model: sim\n    timeout: {{total: 5s, connect: 2s}}\nworkloads:\n  w: {{input_tokens: 32, output_tokens: 4}}\ndefaults: {{target: t, workload: w}}\nphases:\n  - {{name: p, concurrency: 1, requests: 3}}\n"
        ),
    )
    .unwrap();
    path
}

async fn servebench(args: &[&str], plan: &Path) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(args)
        .arg(plan)
        .output()
        .await
        .unwrap()
}

/// Every file under `out` and the given outputs; none may hold the sentinel.
fn assert_no_sentinel(out: &Path, outputs: &[&Output]) {
    let mut artefacts: Vec<(String, Vec<u8>)> = Vec::new();
    for (i, o) in outputs.iter().enumerate() {
        artefacts.push((format!("stdout {i}"), o.stdout.clone()));
        artefacts.push((format!("stderr {i}"), o.stderr.clone()));
    }
    for (path, bytes) in crate::common::files_under(out) {
        artefacts.push((path.display().to_string(), bytes));
    }
    for needed in ["report.json", "report.md", "report.html", "journal.jsonl"] {
        assert!(
            artefacts.iter().any(|(n, _)| n.ends_with(needed)),
            "{needed} missing"
        );
    }
    for (name, bytes) in &artefacts {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains(SENTINEL_PASS) && !text.contains("SENTINEL"),
            "the password leaked into {name}: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_in_base_url_leaks_from_no_successful_run() {
    let (addr, _sim) = servebench::sim::serve(Default::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        &format!("http://bench:{SENTINEL_PASS}@{addr}/v1"),
    );
    let out = dir.path().join("out");
    let dry = servebench(&["run", "--dry-run"], &plan).await;
    assert!(dry.status.success(), "{dry:?}");
    let out_arg = out.display().to_string();
    let run = servebench(&["run", "--output", &out_arg], &plan).await;
    assert!(run.status.success(), "{run:?}");
    let report: Report =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    // The user info left the URL and went out as basic auth; the requests succeeded.
    assert_eq!(report.phases[0].summary.errors, 0);
    let target = &report.plan.targets["t"];
    assert_eq!(
        target.base_url.as_deref(),
        Some(format!("http://{addr}/v1").as_str())
    );
    assert_eq!(target.headers["Authorization"], "<redacted>");
    assert_eq!(report.vars["url"], "<redacted>");
    assert_no_sentinel(&out, &[&dry, &run]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_in_base_url_leaks_from_no_run_that_fails_to_connect() {
    // A port nothing listens on: bind, note the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        &format!("http://bench:{SENTINEL_PASS}@127.0.0.1:{port}/v1"),
    );
    let out = dir.path().join("out");
    let out_arg = out.display().to_string();
    let run = servebench(&["run", "--output", &out_arg], &plan).await;
    // The check before the first phase stops it: nothing sent, no report, no secret.
    assert_eq!(run.status.code(), Some(3), "{run:?}");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("connection refused"), "{stderr}");
    assert!(!out.join("report.json").exists());
    for text in [&run.stdout, &run.stderr].map(|b| String::from_utf8_lossy(b)) {
        assert!(!text.contains("SENTINEL"), "the password leaked: {text}");
    }

    // A server that accepts and resets every request: each record's error names the URL.
    let resets: servebench::sim::SimConfig = serde_json::from_value(serde_json::json!({
        "faults": [{"kind": "reset_before_headers", "probability": 1.0}]
    }))
    .unwrap();
    let (addr, sim) = servebench::sim::serve(resets).await.unwrap();
    let plan = write_plan(
        dir.path(),
        &format!("http://bench:{SENTINEL_PASS}@{addr}/v1"),
    );
    let out = dir.path().join("reset");
    let out_arg = out.display().to_string();
    let run = servebench(&["run", "--output", &out_arg], &plan).await;
    let report: Report =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report.phases[0].summary.errors, 3, "{run:?}");
    assert_no_sentinel(&out, &[&run]);
    sim.shutdown().await;
}
