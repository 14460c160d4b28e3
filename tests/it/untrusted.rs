//! `validate --untrusted`: plans from pull requests may read only files beside them.

use std::path::Path;
use std::process::Command;

fn validate(plan: &Path, untrusted: bool) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_servebench"));
    cmd.arg("validate").arg(plan);
    if untrusted {
        cmd.arg("--untrusted");
    }
    let output = cmd.output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn plan_reading(dir: &Path, dataset: &str) -> std::path::PathBuf {
    let path = dir.join("plan.yaml");
    std::fs::write(
        &path,
        format!(
            "version: 1\nname: u\ntargets:\n  sim:\n    simulator: {{}}\nworkloads:\n  w:\n    dataset: {{path: \"{dataset}\", format: jsonl}}\n    output_tokens: 2\ndefaults: {{target: sim, workload: w}}\nphases:\n  - {{name: a, concurrency: 1, requests: 1}}\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn untrusted_refuses_datasets_outside_the_plan_directory() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("plans");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let line = "{\"prompt\": \"hello there\"}\n";
    std::fs::write(root.path().join("outside.jsonl"), line).unwrap();
    std::fs::write(dir.join("data/inside.jsonl"), line).unwrap();
    let outside_abs = root.path().join("outside.jsonl").display().to_string();

    for dataset in ["../outside.jsonl", "data/../../outside.jsonl", &outside_abs] {
        let plan = plan_reading(&dir, dataset);
        // Trusted, the same plan is fine: the rule is --untrusted's alone.
        let (code, stderr) = validate(&plan, false);
        assert_eq!(code, Some(0), "{dataset}: {stderr}");
        let (code, stderr) = validate(&plan, true);
        assert_eq!(code, Some(2), "{dataset}: {stderr}");
        assert!(
            stderr.contains("workloads.w.dataset.path")
                && stderr.contains(dataset)
                && stderr.contains("outside the plan's directory"),
            "{dataset}: {stderr}"
        );
    }
    for dataset in ["data/inside.jsonl", "./data/../data/inside.jsonl"] {
        let plan = plan_reading(&dir, dataset);
        let (code, stderr) = validate(&plan, true);
        assert_eq!(code, Some(0), "{dataset}: {stderr}");
    }
}
