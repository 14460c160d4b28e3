//! Plans in CI: `validate --format github|json`, and the example workflow in examples/ci/.

use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn servebench() -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("servebench"));
    cmd.current_dir(root());
    cmd
}

const MIXED: [&str; 3] = [
    "tests/fixtures/invalid/tokenizer-wrong-shape.yaml",
    "tests/fixtures/valid/minimal.yaml",
    "tests/fixtures/invalid/unknown-key-phase.yaml",
];

#[test]
fn validate_github_prints_annotations() {
    let out = servebench()
        .args(["validate", "--format", "github"])
        .args(MIXED)
        .assert()
        .code(2);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        out.get_output().stderr.is_empty(),
        "annotations go to stdout"
    );
    insta::assert_snapshot!("validate_github", stdout);
}

#[test]
fn validate_json_lists_every_plan_and_problem() {
    let out = servebench()
        .args(["validate", "--format", "json"])
        .args(MIXED)
        .assert()
        .code(2);
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["ok"], false);
    let plans = doc["plans"].as_array().unwrap();
    let files: Vec<&str> = plans.iter().map(|p| p["file"].as_str().unwrap()).collect();
    assert_eq!(files, MIXED);
    assert_eq!(plans[1]["ok"], true);
    assert_eq!(plans[1]["phases"], 1);
    let d = &plans[0]["diagnostics"][0];
    assert_eq!(d["path"], "targets.sim.tokenizer");
    assert_eq!((d["line"].as_u64(), d["col"].as_u64()), (Some(8), Some(5)));
    assert!(d["hint"].as_str().unwrap().contains("`server`"));
    assert_eq!(plans[2]["ok"], false);
    assert!(!plans[2]["diagnostics"].as_array().unwrap().is_empty());

    let out = servebench()
        .args(["validate", "--format", "json", MIXED[1]])
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["ok"], true);
}

/// The `--gate` expressions of the example workflow, as written there.
fn workflow_gates(workflow: &str) -> Vec<String> {
    workflow
        .lines()
        .filter_map(|l| l.trim().strip_prefix("--gate '"))
        .map(|g| g.split('\'').next().unwrap().to_string())
        .collect()
}

#[test]
fn example_workflow_validates_plans_and_gates_against_its_baseline() {
    let workflow = std::fs::read_to_string(root().join("examples/ci/plans.yml")).unwrap();
    let doc: Value = serde_saphyr::from_str(&workflow).expect("the workflow is YAML");
    assert!(doc["jobs"]["validate"].is_object() && doc["jobs"]["gate"].is_object());
    assert!(workflow.contains("servebench validate --format github"));
    let gates = workflow_gates(&workflow);
    assert!(gates.len() >= 3, "{gates:?}");
    // The committed baseline against itself passes every gate the workflow sets.
    let baseline = "examples/ci/baseline/quickstart.json";
    let mut cmd = servebench();
    cmd.args(["compare", baseline, baseline, "--format", "json"]);
    for g in &gates {
        cmd.args(["--gate", g]);
    }
    cmd.assert().success();
    // And a gate that cannot hold fails with exit 1, so the job would fail.
    servebench()
        .args(["compare", baseline, baseline, "--gate", "errors > 0"])
        .assert()
        .code(1);
}
