//! `servebench init`: starter plans for the simulator, a full server and one without /tokenize.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;

use assert_cmd::Command;

fn servebench_in(dir: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("servebench"));
    cmd.current_dir(dir);
    cmd
}

#[test]
fn init_without_a_target_writes_a_simulator_plan_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    servebench_in(dir.path()).arg("init").assert().success();
    let text = std::fs::read_to_string(dir.path().join("plan.yaml")).unwrap();
    assert!(text.contains("simulator: {seed: 1}") && text.contains("tokenizer: simulator"));
    servebench_in(dir.path())
        .args(["validate", "plan.yaml"])
        .assert()
        .success();
    // Another file name names the plan, and its header says how to run that file.
    servebench_in(dir.path())
        .args(["init", "-o", "nightly.yaml"])
        .assert()
        .success();
    let text = std::fs::read_to_string(dir.path().join("nightly.yaml")).unwrap();
    assert!(text.contains("\nname: nightly\n"), "{text}");
    assert!(
        text.contains("#   servebench run nightly.yaml --set duration=5s"),
        "{text}"
    );
    assert!(!text.contains("plan.yaml"), "{text}");
    std::fs::write(dir.path().join("plan.yaml"), "mine\n").unwrap();
    servebench_in(dir.path()).arg("init").assert().code(2);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("plan.yaml")).unwrap(),
        "mine\n"
    );
}

#[test]
fn init_against_the_simulator_finds_tokenize_and_metrics_and_runs() {
    let _guard = crate::common::exclusive_run_blocking();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (addr, _handle) = runtime
        .block_on(servebench::sim::serve(Default::default()))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://{addr}/v1");
    servebench_in(dir.path())
        .args([
            "init",
            "--target",
            &format!("vllm={url}"),
            "-o",
            "starter.yaml",
        ])
        .assert()
        .success();
    let text = std::fs::read_to_string(dir.path().join("starter.yaml")).unwrap();
    assert!(text.contains("tokenizer: server"), "{text}");
    assert!(
        text.contains(&format!("metrics: \"http://{addr}/metrics\"")),
        "{text}"
    );
    assert!(
        text.contains("targets:\n  vllm:\n") && text.contains("  target: vllm\n"),
        "{text}"
    );
    assert!(text.contains("model: \""), "{text}");
    assert!(
        text.contains("#   servebench validate starter.yaml\n"),
        "{text}"
    );
    servebench_in(dir.path())
        .args(["validate", "starter.yaml"])
        .assert()
        .success();
    servebench_in(dir.path())
        .args(["run", "starter.yaml", "--quiet", "--set", "duration=1s"])
        .args(["--output", "run"])
        .assert()
        .success();
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run/report.json")).unwrap())
            .unwrap();
    assert_eq!(report["phases"].as_array().unwrap().len(), 5);
}

/// A server that lists one model and answers 404 to everything else.
fn models_only_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let (status, text) = if request_line.starts_with("GET /v1/models ") {
                (
                    "200 OK",
                    r#"{"object":"list","data":[{"id":"tiny-model"}]}"#,
                )
            } else {
                ("404 Not Found", "not found")
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    format!("http://{addr}/v1")
}

#[test]
fn init_against_a_server_without_tokenize_says_why_it_chose_builtin() {
    let url = models_only_server();
    let dir = tempfile::tempdir().unwrap();
    // The old form, a bare URL, still works (target `server`) and says what to write instead.
    let old_form = servebench_in(dir.path())
        .args(["init", "--target", &url])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&old_form.get_output().stderr);
    assert!(
        stderr.contains(&format!("write `--target server={url}`")),
        "{stderr}"
    );
    let text = std::fs::read_to_string(dir.path().join("plan.yaml")).unwrap();
    assert!(text.contains("targets:\n  server:\n"), "{text}");
    let root = url.trim_end_matches("/v1");
    assert!(text.contains("model: \"tiny-model\""), "{text}");
    assert!(text.contains("tokenizer: builtin"), "{text}");
    assert!(
        text.contains(&format!("# {root}/tokenize answered 404 Not Found, so prompts are sized with the embedded BPE table")),
        "{text}"
    );
    assert!(!text.contains("metrics:"), "{text}");
    servebench_in(dir.path())
        .args(["validate", "plan.yaml"])
        .assert()
        .success();
}
