//! The command line and plan surface: the exit-code table, renamed flags and plan keys still
//! read with a note, and the messages a newcomer meets first (a server that is not running).

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;
use servebench::exit::Exit;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn servebench_in(dir: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("servebench"));
    cmd.current_dir(dir);
    cmd
}

fn stderr_of(out: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&out.get_output().stderr).to_string()
}

fn stdout_of(out: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&out.get_output().stdout).to_string()
}

/// A loopback port with nothing listening: bound, then released.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn the_readme_and_help_list_the_exit_codes_from_the_table() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.contains(&Exit::markdown_table()),
        "README.md's exit-code table differs from src/exit.rs; it should read:\n{}",
        Exit::markdown_table()
    );
    let help = servebench_in(&root()).arg("--help").assert().success();
    let help = stdout_of(&help);
    assert!(help.contains("Exit codes:"), "{help}");
    for exit in Exit::ALL {
        let first_words: String = exit.meaning().chars().take(30).collect();
        assert!(
            help.contains(&format!("  {}  {first_words}", exit.code())),
            "{exit:?} missing from --help:\n{help}"
        );
    }
}

const OLD_NAMES: &str = "\
version: 1
name: old-names
targets:
  local:
    base_url: http://localhost/v1
    model: m
    socket: run/engine.sock
    metrics_url: http://localhost/metrics
workloads:
  w: {input_tokens: 16, output_tokens: 4}
phases:
  - {name: p, target: local, workload: w, concurrency: 1, requests: 2}
";

#[test]
fn old_plan_keys_still_load_with_a_warning_at_the_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.yaml"), OLD_NAMES).unwrap();

    let human = servebench_in(dir.path())
        .args(["validate", "old.yaml"])
        .assert()
        .code(Exit::Success.code());
    let stderr = stderr_of(&human);
    assert!(
        stderr
            .contains("warning: targets.local.socket: `socket` is deprecated; write `unix_socket`"),
        "{stderr}"
    );
    assert!(stderr.contains(" --> old.yaml:7:5\n"), "{stderr}");
    assert!(stderr.contains(" --> old.yaml:8:5\n"), "{stderr}");
    assert!(
        stdout_of(&human).contains("ok: old.yaml (1 phase), 2 warnings"),
        "{}",
        stdout_of(&human)
    );

    let github = servebench_in(dir.path())
        .args(["validate", "--format", "github", "old.yaml"])
        .assert()
        .success();
    let annotations = stdout_of(&github);
    assert!(
        annotations.contains(
            "::warning file=old.yaml,line=8,col=5,endColumn=16,title=deprecated plan spelling::"
        ),
        "{annotations}"
    );

    let json = servebench_in(dir.path())
        .args(["validate", "--format", "json", "old.yaml"])
        .assert()
        .success();
    let doc: Value = serde_json::from_str(&stdout_of(&json)).unwrap();
    assert_eq!(doc["ok"], true);
    let warning = &doc["plans"][0]["diagnostics"][0];
    assert_eq!(warning["severity"], "warning");
    assert_eq!(warning["kind"], "deprecated");
    assert_eq!(
        (&warning["line"], &warning["col"]),
        (&Value::from(7), &Value::from(5))
    );

    // The concrete plan says the new names only, and so does the report that embeds it.
    let expanded = servebench_in(dir.path())
        .args(["expand", "old.yaml"])
        .assert()
        .success();
    let text = stdout_of(&expanded);
    assert!(
        text.contains("unix_socket: run/engine.sock")
            && text.contains("metrics: http://localhost/metrics"),
        "{text}"
    );
    assert!(!text.contains("metrics_url"), "{text}");
    assert!(
        stderr_of(&expanded).contains("warning: old.yaml:7:5: targets.local.socket:"),
        "{}",
        stderr_of(&expanded)
    );
}

/// A report written before the rename embeds `socket` and `metrics_url`: it still reads, as
/// the new names.
#[test]
fn a_report_with_the_old_names_still_reads() {
    let plan: servebench::plan::Plan = serde_json::from_value(serde_json::json!({
        "version": 1,
        "name": "old",
        "targets": {"t": {"base_url": "http://localhost/v1", "socket": "s.sock",
                          "metrics_url": "http://localhost/metrics"}},
        "workloads": {},
        "phases": [],
    }))
    .unwrap();
    let target = &plan.targets["t"];
    assert_eq!(target.unix_socket.as_deref(), Some("s.sock"));
    assert_eq!(
        target.metrics.as_ref().and_then(|m| m.url()),
        Some("http://localhost/metrics")
    );
    let written = serde_json::to_value(&plan).unwrap();
    assert_eq!(written["targets"]["t"]["unix_socket"], "s.sock");
    assert_eq!(
        written["targets"]["t"]["metrics"],
        "http://localhost/metrics"
    );
}

#[test]
fn old_flag_spellings_still_work_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let plan = root().join("plans/quickstart.yaml");
    let dry = servebench_in(dir.path())
        .arg("run")
        .arg(&plan)
        .args(["--dry-run", "--out", "runs/x"])
        .assert()
        .success();
    let stderr = stderr_of(&dry);
    assert!(
        stderr.contains("note: `--out` is deprecated and will be removed; write `-o/--output`"),
        "{stderr}"
    );
    let both = servebench_in(dir.path())
        .arg("run")
        .arg(&plan)
        .args(["--dry-run", "--out", "a", "-o", "b"])
        .assert()
        .code(Exit::InvalidInput.code());
    assert!(
        stderr_of(&both).contains("cannot be used with"),
        "{}",
        stderr_of(&both)
    );

    // An output that cannot be written is refused before minutes of measurement, under
    // either spelling.
    for flag in ["-o", "--out"] {
        let refused = servebench_in(dir.path())
            .args(["selftest", "--quick", flag, "no-such-dir/selftest.json"])
            .assert()
            .code(Exit::InvalidInput.code());
        let stderr = stderr_of(&refused);
        assert!(
            stderr.contains("cannot write no-such-dir/selftest.json"),
            "{stderr}"
        );
        assert_eq!(stderr.contains("`--out` is deprecated"), flag == "--out");
    }
}

#[test]
fn init_takes_name_equals_url_and_refuses_other_forms() {
    let dir = tempfile::tempdir().unwrap();
    for (arg, why) in [
        ("server", "expected NAME=URL"),
        (
            "s=127.0.0.1:8000/v1",
            "expected an http:// or https:// URL after `=`",
        ),
        ("my server=http://127.0.0.1:8000/v1", "is not a target name"),
    ] {
        let out = servebench_in(dir.path())
            .args(["init", "--target", arg])
            .assert()
            .code(Exit::InvalidInput.code());
        assert!(stderr_of(&out).contains(why), "{arg}: {}", stderr_of(&out));
    }
    assert!(!dir.path().join("plan.yaml").exists());
}

/// What a newcomer who forgot to start the server sees, from `run` and from `init`.
#[test]
fn a_server_that_is_not_running_is_named_as_such() {
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let expected =
        format!("connection refused — is the server running at http://127.0.0.1:{port}?");
    let dir = tempfile::tempdir().unwrap();

    let run = servebench_in(dir.path())
        .arg("run")
        .arg(root().join("plans/quickstart.yaml"))
        .args(["--target", &format!("sim={url}"), "-o", "run", "-q"])
        .assert()
        .code(Exit::RunFailed.code());
    let stderr = stderr_of(&run);
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(
        !stderr.contains("set `model:`"),
        "naming a model would not help: {stderr}"
    );

    let init = servebench_in(dir.path())
        .args(["init", "--target", &format!("vllm={url}")])
        .assert()
        .code(Exit::RunFailed.code());
    assert!(stderr_of(&init).contains(&expected), "{}", stderr_of(&init));
}

/// A target that names its model skips discovery, but not the connection check before the
/// first phase: the run stops there, before any request, in the same words.
#[test]
fn refused_requests_say_the_server_may_not_be_running() {
    let _guard = crate::common::exclusive_run_blocking();
    let port = closed_port();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plan.yaml"),
        format!(
            "version: 1\nname: down\ntargets:\n  t: {{base_url: \"http://127.0.0.1:{port}/v1\", model: m}}\n\
             workloads:\n  w: {{input_tokens: 16, output_tokens: 4}}\n\
             phases:\n  - {{name: p, target: t, workload: w, concurrency: 1, requests: 2}}\n"
        ),
    )
    .unwrap();
    let run = servebench_in(dir.path())
        .args(["run", "plan.yaml", "-o", "run", "-q", "--no-calibrate"])
        .assert()
        .code(Exit::RunFailed.code());
    let stderr = stderr_of(&run);
    assert!(
        stderr.contains(&format!(
            "target `t`: http://127.0.0.1:{port}/v1/chat/completions: connection refused — is \
             the server running at http://127.0.0.1:{port}?"
        )),
        "{stderr}"
    );
    assert!(!dir.path().join("run/report.json").exists(), "{stderr}");
}

/// A simulator target that names a model serves that name, so a plan written for a server
/// (whose `model:` is the served name) runs against the simulator unchanged.
#[test]
fn a_simulator_target_serves_the_model_its_target_names() {
    let _guard = crate::common::exclusive_run_blocking();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plan.yaml"),
        "version: 1\nname: named\ntargets:\n  t:\n    model: Llama-3.1-8B-Instruct\n    \
         simulator: {prefill_tok_s: 0, decode_ms_per_token: 0, decode_ms_per_running: 0}\n\
         workloads:\n  w: {input_tokens: 16, output_tokens: 4}\n\
         phases:\n  - {name: p, target: t, workload: w, concurrency: 1, requests: 3}\n",
    )
    .unwrap();
    servebench_in(dir.path())
        .args(["run", "plan.yaml", "-o", "run", "-q", "--no-calibrate"])
        .assert()
        .success();
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run/report.json")).unwrap())
            .unwrap();
    // The summary is flattened into the phase.
    let summary = &report["phases"][0];
    assert_eq!(
        (&summary["requests"], &summary["errors"]),
        (&Value::from(3), &Value::from(0))
    );
}
