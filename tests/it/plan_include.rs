//! `include:`: shared plan files, their diagnostics, cycles, and re-runs without them.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn servebench_in(dir: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("servebench"));
    cmd.current_dir(dir);
    cmd
}

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const PLAN: &str = "\
version: 1
name: shared
include: [common/targets.yaml, common/more.yaml]
workloads:
  short: {input_tokens: 32, output_tokens: 8}
phases:
  - {name: first, target: a, workload: short, concurrency: 1, requests: 3}
  - include: common/phases.yaml
";

const TARGETS: &str = "\
vars: {who: base}
targets:
  a:
    simulator: {seed: 1, decode_ms_per_token: 1}
  b:
    simulator: {seed: 2}
";

const MORE: &str = "\
vars: {who: more}
targets:
  b:
    simulator: {seed: 3}
";

const PHASES: &str = "\
- {name: second, target: b, workload: short, concurrency: 2, requests: 4}
";

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "plan.yaml", PLAN);
    write(dir.path(), "common/targets.yaml", TARGETS);
    write(dir.path(), "common/more.yaml", MORE);
    write(dir.path(), "common/phases.yaml", PHASES);
    dir
}

#[test]
fn included_sections_merge_key_by_key_and_phases_splice_in() {
    let dir = project();
    let out = servebench_in(dir.path())
        .args(["expand", "plan.yaml", "--format", "json"])
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    // `b` from the later file wins; `a` stays from the earlier one.
    assert_eq!(doc["targets"]["b"]["simulator"]["seed"], 3);
    assert_eq!(doc["targets"]["a"]["simulator"]["seed"], 1);
    assert_eq!(doc["vars"]["who"], "more");
    let names: Vec<&str> = doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first", "second"]);
    assert!(doc.get("include").is_none());
}

#[test]
fn the_plan_overrides_what_it_includes() {
    let dir = project();
    let plan = PLAN.replace(
        "workloads:",
        "targets:\n  b:\n    simulator: {seed: 9}\nworkloads:",
    );
    write(dir.path(), "plan.yaml", &plan);
    let out = servebench_in(dir.path())
        .args(["expand", "plan.yaml", "--format", "json"])
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["targets"]["b"]["simulator"]["seed"], 9);
    assert_eq!(doc["targets"]["a"]["simulator"]["seed"], 1);
}

#[test]
fn an_error_in_an_included_file_points_at_that_file() {
    let dir = project();
    write(
        dir.path(),
        "common/targets.yaml",
        &TARGETS.replace("decode_ms_per_token: 1", "decode_ms_per_tokn: 1"),
    );
    write(
        dir.path(),
        "common/phases.yaml",
        &PHASES.replace("concurrency: 2", "concurrency: two"),
    );
    let out = servebench_in(dir.path())
        .args(["validate", "plan.yaml"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains("--> common/targets.yaml:4:") && stderr.contains("decode_ms_per_tokn"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--> common/phases.yaml:1:") && stderr.contains("two"),
        "{stderr}"
    );
    insta::assert_snapshot!("include_error_in_included_file", stderr);
}

#[test]
fn cycles_and_missing_files_name_the_chain() {
    let dir = project();
    write(
        dir.path(),
        "common/more.yaml",
        &format!("include: [../plan.yaml]\n{MORE}"),
    );
    let out = servebench_in(dir.path())
        .args(["validate", "plan.yaml"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains("include cycle: plan.yaml → common/more.yaml → common/../plan.yaml"),
        "{stderr}"
    );
    assert!(stderr.contains("--> common/more.yaml:1:"), "{stderr}");

    let dir = project();
    std::fs::remove_file(dir.path().join("common/more.yaml")).unwrap();
    let out = servebench_in(dir.path())
        .args(["validate", "plan.yaml"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains("cannot read `common/more.yaml`"),
        "{stderr}"
    );
    assert!(stderr.contains("--> plan.yaml:3:"), "{stderr}");
    assert!(
        stderr.contains("include chain: plan.yaml → common/more.yaml"),
        "{stderr}"
    );
}

#[test]
fn a_report_reruns_without_the_included_files() {
    let dir = project();
    servebench_in(dir.path())
        .args([
            "run",
            "plan.yaml",
            "--quiet",
            "--no-calibrate",
            "--output",
            "first",
        ])
        .assert()
        .success();
    std::fs::remove_dir_all(dir.path().join("common")).unwrap();
    servebench_in(dir.path())
        .args(["validate", "plan.yaml"])
        .assert()
        .code(2);
    servebench_in(dir.path())
        .args([
            "run",
            "first/report.json",
            "--quiet",
            "--no-calibrate",
            "--output",
            "again",
        ])
        .assert()
        .success();
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("again/report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(report["plan"]["targets"]["b"]["simulator"]["seed"], 3);
    assert_eq!(report["phases"].as_array().unwrap().len(), 2);
}

#[test]
fn two_shipped_plans_share_common_targets() {
    for plan in ["plans/sweep.yaml", "plans/open-loop.yaml"] {
        let text = std::fs::read_to_string(root().join(plan)).unwrap();
        assert!(text.contains("include: [common/targets.yaml]"), "{plan}");
    }
}
