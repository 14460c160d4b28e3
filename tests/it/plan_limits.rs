//! Bounded template work: fuel, output size per value, and the `--template-fuel` flag.

use std::path::Path;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_servebench"))
}

/// A plan whose `vars.xs` is a 2,000-element list and whose one phase is named `name`.
fn plan_with_name(dir: &Path, name: &str) -> std::path::PathBuf {
    let xs: Vec<String> = (0..2000).map(|i| i.to_string()).collect();
    let text = format!(
        "version: 1\nname: l\nvars:\n  xs: [{}]\ntargets:\n  sim:\n    simulator: {{}}\nworkloads:\n  w: {{input_tokens: 32, output_tokens: 2}}\ndefaults: {{target: sim, workload: w}}\nphases:\n  - name: '{name}'\n    concurrency: 1\n    requests: 1\n",
        xs.join(", ")
    );
    let path = dir.join("plan.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

fn validate(plan: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let output = bin()
        .arg("validate")
        .arg(plan)
        .args(extra)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

const NESTED: &str =
    "{% for a in xs %}{% for b in xs %}{% for c in xs %}{% endfor %}{% endfor %}{% endfor %}p";

#[test]
fn three_nested_loops_over_2000_items_run_out_of_fuel_at_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_with_name(dir.path(), NESTED);
    let (code, stderr) = validate(&plan, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("phases[0].name"), "{stderr}");
    assert!(stderr.contains("plan.yaml:"), "located: {stderr}");
    assert!(
        stderr.contains("1000000 template instructions") && stderr.contains("--template-fuel"),
        "{stderr}"
    );
}

#[test]
fn template_fuel_flag_moves_the_limit_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    // One loop over 2,000 items: well inside the default, past a budget of 100.
    let plan = plan_with_name(dir.path(), "{% for a in xs %}{% endfor %}p");
    let (code, stderr) = validate(&plan, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = validate(&plan, &["--template-fuel", "100"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("100 template instructions"), "{stderr}");
    for args in [&["expand"][..], &["run", "--dry-run"][..]] {
        let output = bin()
            .args(args)
            .arg(&plan)
            .args(["--template-fuel", "100"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("--template-fuel"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_value_rendering_past_the_output_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_with_name(
        dir.path(),
        "{% for a in xs %}{{ \"x\" * 1000 }}{% endfor %}",
    );
    let (code, stderr) = validate(&plan, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("phases[0].name") && stderr.contains("1048576 bytes"),
        "{stderr}"
    );
}
