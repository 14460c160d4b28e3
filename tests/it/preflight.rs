//! Inputs checked before the first request: a bad file in a late phase fails the run at
//! once, exit 2, with nothing sent.

use std::path::Path;
use std::process::Output;

async fn run_against_sim(dir: &Path, workloads: &str, third_workload: &str) -> (Output, u64) {
    let (addr, sim) = servebench::sim::serve(Default::default()).await.unwrap();
    let plan = dir.join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "version: 1\nname: pre\ntargets:\n  t:\n    base_url: http://{addr}/v1\n    model: sim\nworkloads:\n  ok: {{input_tokens: 32, output_tokens: 2}}\n{workloads}defaults: {{target: t, workload: ok}}\nphases:\n  - {{name: one, concurrency: 1, requests: 2}}\n  - {{name: two, concurrency: 1, requests: 2}}\n  - {{name: three, concurrency: 1, requests: 2, workload: {third_workload}}}\n"
        ),
    )
    .unwrap();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(["run", "--quiet", "--output"])
        .arg(dir.join("out"))
        .arg(&plan)
        .output()
        .await
        .unwrap();
    (output, sim.stats().requests_total)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_dataset_in_the_third_phase_fails_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let (output, sent) = run_against_sim(
        dir.path(),
        "  data:\n    dataset: {path: no-such-prompts.jsonl, format: jsonl}\n    output_tokens: 2\n",
        "data",
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(sent, 0, "requests reached the server: {stderr}");
    assert!(
        stderr.contains("no-such-prompts.jsonl") && stderr.contains("phase `three`"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_tokenizer_fails_before_any_request_with_the_other_problems() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tokenizer.json"), "{ not a tokenizer").unwrap();
    std::fs::write(dir.path().join("out"), "a file where --out should be").unwrap();
    let (output, sent) = run_against_sim(
        dir.path(),
        "  tok:\n    input_tokens: 32\n    output_tokens: 2\n    tokenizer: {source: file, path: tokenizer.json}\n",
        "tok",
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(sent, 0, "requests reached the server: {stderr}");
    // Both problems at once: the tokenizer file and the unusable --out.
    assert!(
        stderr.contains("2 problems") && stderr.contains("tokenizer.json"),
        "{stderr}"
    );
    assert!(stderr.contains("--output"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_of_a_report_with_redacted_headers_asks_for_them() {
    let (addr, sim) = servebench::sim::serve(Default::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "version: 1\nname: again\ntargets:\n  t:\n    base_url: http://{addr}/v1\n    model: sim\n    headers: {{x-api-key: hdrSECRET1}}\nworkloads:\n  w: {{input_tokens: 32, output_tokens: 2}}\ndefaults: {{target: t, workload: w}}\nphases:\n  - {{name: one, concurrency: 1, requests: 2}}\n"
        ),
    )
    .unwrap();
    let run = |plan: std::path::PathBuf, out: &str, env: Option<&str>| {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_servebench"));
        cmd.args(["run", "--quiet", "--output"])
            .arg(dir.path().join(out))
            .arg(plan)
            .env_remove("SERVEBENCH_SECRET_T_X_API_KEY");
        if let Some(value) = env {
            cmd.env("SERVEBENCH_SECRET_T_X_API_KEY", value);
        }
        cmd.output()
    };
    let first = run(plan, "first", None).await.unwrap();
    assert!(first.status.success(), "{first:?}");
    let sent = sim.stats().requests_total;
    let report = dir.path().join("first/report.json");

    let refused = run(report.clone(), "second", None).await.unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert_eq!(sim.stats().requests_total, sent, "nothing sent: {stderr}");
    assert!(
        stderr.contains("x-api-key") && stderr.contains("SERVEBENCH_SECRET_T_X_API_KEY"),
        "{stderr}"
    );

    let supplied = run(report, "third", Some("hdrSECRET1")).await.unwrap();
    assert!(supplied.status.success(), "{supplied:?}");
    assert_eq!(sim.stats().requests_total, sent + 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_model_with_nothing_listening_stops_before_any_request_and_records_nothing() {
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "version: 1\nname: nobody\ntargets:\n  t: {{base_url: http://127.0.0.1:{port}/v1, model: m}}\nworkloads:\n  w: {{input_tokens: 32, output_tokens: 2}}\ndefaults: {{target: t, workload: w}}\nphases:\n  - {{name: one, concurrency: 4, duration: 2s, warmup: {{duration: 1s}}}}\n"
        ),
    )
    .unwrap();
    let history = dir.path().join("history.sqlite");
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(["run", "--quiet", "--no-calibrate", "--output"])
        .arg(dir.path().join("out"))
        .arg("--history")
        .arg(&history)
        .arg(&plan)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "connection refused — is the server running at http://127.0.0.1:{port}?"
        )),
        "{stderr}"
    );
    // No warmup, no phase: nothing measured, no report, nothing recorded.
    assert!(!dir.path().join("out/report.json").exists());
    assert!(!dir.path().join("out/journal.jsonl").exists());
    assert!(!history.exists(), "{stderr}");
}
