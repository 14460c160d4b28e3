//! `exec` hooks: refused unless the run allows programs, then run without a shell with their
//! status and output tail in the report, killed with their process group on timeout.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use servebench::runner::{RunOptions, run};

const HEAD: &str = "version: 1\nname: exec\nseed: 3\ntargets:\n  sim:\n    simulator: {decode_ms_per_token: 1}\nworkloads:\n  w:\n    input_tokens: 16\n    output_tokens: 2\n    ignore_eos: true\ndefaults: {target: sim, workload: w}\n";

fn write_plan(dir: &Path, phases: &str) -> PathBuf {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, format!("{HEAD}phases:\n{phases}")).unwrap();
    path
}

fn write_script(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn cli(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn allowed(plan: &Path, out: &Path) -> RunOptions {
    let mut options = crate::common::quiet_run_options(plan.to_path_buf(), out);
    options.expand.allow_exec = true;
    options
}

fn report(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap()
}

#[test]
fn a_plan_with_exec_is_refused_without_allow_exec() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        "  - name: a\n    concurrency: 1\n    requests: 1\n    before:\n      - exec: [./touch-marker.sh]\n",
    );
    write_script(dir.path(), "touch-marker.sh", "touch marker\n");
    let plan_arg = plan.to_str().unwrap();
    let out = dir.path().join("out");
    for args in [
        vec!["validate", plan_arg],
        vec!["expand", plan_arg],
        vec![
            "run",
            plan_arg,
            "-q",
            "--no-calibrate",
            "--output",
            out.to_str().unwrap(),
        ],
    ] {
        let (code, stderr) = cli(&args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("phases[0].before[0].exec")
                && stderr.contains("plan.yaml:18:9")
                && stderr.contains("./touch-marker.sh")
                && stderr.contains("--allow-exec"),
            "{args:?}: {stderr}"
        );
    }
    assert!(!dir.path().join("marker").exists(), "nothing was run");
    let (code, stderr) = cli(&["validate", plan_arg, "--allow-exec"]);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_default_exec_hook_is_refused_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.yaml");
    let text = HEAD.replace(
        "defaults: {target: sim, workload: w}",
        "defaults: {target: sim, workload: w, after: [{exec: [./x.sh]}]}",
    );
    std::fs::write(
        &path,
        format!("{text}phases:\n  - {{name: a, concurrency: 1, requests: 1}}\n  - {{name: b, concurrency: 1, requests: 1}}\n"),
    )
    .unwrap();
    let (code, stderr) = cli(&["validate", path.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
    assert!(stderr.contains("plan.yaml:12:"), "{stderr}");
}

#[test]
fn untrusted_validation_names_every_exec_hook() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        "  - {name: a, concurrency: 1, requests: 1, before: [{sleep: 1ms}, {exec: [./reset.sh, --all]}]}\n  - {name: b, concurrency: 1, requests: 1, after: [{exec: [/usr/bin/true]}]}\n",
    );
    let plan_arg = plan.to_str().unwrap();
    // Even with --allow-exec: an untrusted plan may not execute anything.
    for args in [
        vec!["validate", "--untrusted", plan_arg],
        vec!["validate", "--untrusted", "--allow-exec", plan_arg],
    ] {
        let (code, stderr) = cli(&args);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.contains("phases[0] (`a`).before[1].exec")
                && stderr.contains("./reset.sh --all")
                && stderr.contains("phases[1] (`b`).after[0].exec")
                && stderr.contains("/usr/bin/true")
                && !stderr.contains("add `--allow-exec`"),
            "{stderr}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_program_runs_in_the_plan_dir_and_its_tail_is_reported() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    // 25 lines on stdout, one on stderr in between, then the phase name from the
    // environment: the tail keeps the last 20, in the order written.
    write_script(
        dir.path(),
        "talk.sh",
        "i=1\nwhile [ $i -le 25 ]; do echo \"out $i\"; i=$((i+1)); done\necho 'err line' >&2\necho \"phase=$SERVEBENCH_PHASE hook=$SERVEBENCH_HOOK\"\ntouch ran-here\n",
    );
    let plan = write_plan(
        dir.path(),
        "  - {name: a, concurrency: 1, requests: 2, after: [{exec: [./talk.sh, ignored-arg], timeout: 20s}]}\n",
    );
    let out = dir.path().join("out");
    run(allowed(&plan, &out)).await.unwrap();
    assert!(
        dir.path().join("ran-here").exists(),
        "ran in the plan's directory"
    );
    let value = report(&out);
    crate::common::assert_valid_report(&value);
    let hook = &value["phases"][0]["hooks"][0];
    assert_eq!(hook["when"], "after");
    assert_eq!(hook["action"], "exec ./talk.sh ignored-arg");
    assert_eq!(hook["outcome"], "ok", "{hook}");
    assert_eq!(hook["exit_status"], 0);
    let tail: Vec<&str> = hook["output_tail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(tail.len(), 20, "{tail:?}");
    assert_eq!(tail[0], "out 8");
    assert_eq!(tail[17], "out 25");
    assert_eq!(tail[18], "err line");
    assert_eq!(tail[19], "phase=a hook=after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_kills_the_whole_process_group() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    // A grandchild that would outlive its parent (and hold the output pipe open).
    write_script(
        dir.path(),
        "hang.sh",
        "sleep 300 &\necho $! > grandchild.pid\necho started\nsleep 300\n",
    );
    let plan = write_plan(
        dir.path(),
        "  - {name: a, concurrency: 1, requests: 1, before: [{exec: [./hang.sh], timeout: 1s, on_failure: warn}]}\n",
    );
    let out = dir.path().join("out");
    run(allowed(&plan, &out)).await.unwrap();
    let value = report(&out);
    let phase = &value["phases"][0];
    assert_eq!(phase["requests"], 1, "a warned hook lets the phase run");
    let hook = &phase["hooks"][0];
    assert_eq!(hook["outcome"], "warned", "{hook}");
    assert!(
        hook["detail"]
            .as_str()
            .unwrap()
            .contains("timed out after 1.0s"),
        "{hook}"
    );
    assert_eq!(hook["exit_status"], 128 + 9, "ended by SIGKILL: {hook}");
    assert_eq!(hook["output_tail"], serde_json::json!(["started"]));
    let pid: i32 = std::fs::read_to_string(dir.path().join("grandchild.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(dead_or_zombie(pid), "grandchild {pid} survived the timeout");
}

/// SIGKILL is queued at once but takes effect when the process next runs: wait (bounded)
/// for the process to leave the running states.
fn dead_or_zombie(pid: i32) -> bool {
    for _ in 0..200 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) => {
                let state = stat.rsplit(") ").next().and_then(|s| s.chars().next());
                if matches!(state, Some('Z' | 'X')) {
                    return true;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_program_ends_the_run_with_a_partial_report() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        "  - {name: a, concurrency: 1, requests: 1}\n  - {name: b, concurrency: 1, requests: 1, before: [{exec: [sh, -c, 'echo cannot reset >&2; exit 3']}]}\n  - {name: c, concurrency: 1, requests: 1}\n",
    );
    let out = dir.path().join("out");
    let error = run(allowed(&plan, &out)).await.unwrap_err();
    assert_eq!(error.exit_code(), servebench::exit::Exit::RunFailed);
    assert!(
        error.to_string().contains("exited with status 3"),
        "{error}"
    );
    let value = report(&out);
    let names: Vec<&str> = value["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"], "c never ran");
    assert_eq!(value["partial"], true);
    let b = &value["phases"][1];
    assert_eq!(b["partial"], true);
    assert_eq!(b["hooks"][0]["outcome"], "failed");
    assert_eq!(b["hooks"][0]["exit_status"], 3);
    assert_eq!(
        b["hooks"][0]["output_tail"],
        serde_json::json!(["cannot reset"])
    );

    // The markdown and HTML show the action next to its phase, marked as the failure.
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let hooks_md = md.split("### Phase hooks").nth(1).expect("a hooks table");
    let row = hooks_md.lines().find(|l| l.starts_with("| b |")).unwrap();
    assert!(
        row.contains("| before | exec | sh -c echo cannot reset") && row.contains("| **failed** |"),
        "{row}"
    );
    assert!(
        row.contains("| 3 |") && row.contains("| cannot reset |"),
        "{row}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<h3>Phase hooks</h3>"), "{html}");
    assert!(html.contains("exited with status 3"));
    assert!(
        html.contains("<details><summary>b · before · exec sh -c echo cannot reset &gt;&amp;2; exit 3: last 1 lines of output</summary><pre>cannot reset</pre></details>"),
        "{html}"
    );
}
