//! Plan language: the seed plans, valid and invalid fixtures, schemas, expansion via the CLI.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;
use servebench::plan::{self, ExpandOptions};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn servebench() -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("servebench"));
    cmd.current_dir(root());
    cmd
}

fn files_in(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .expect("fixture directory exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn every_seed_plan_validates() {
    let plans: Vec<String> = files_in("plans").iter().map(|p| relative(p)).collect();
    assert!(plans.len() >= 5, "{plans:?}");
    let out = servebench().arg("validate").args(&plans).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    for p in &plans {
        assert!(stdout.contains(&format!("ok: {p}")), "{stdout}");
        let text = std::fs::read_to_string(root().join(p)).unwrap();
        assert!(
            text.starts_with("# yaml-language-server: $schema=../schemas/plan.schema.json\n"),
            "{p} must start with the schema modeline"
        );
    }
}

#[test]
fn every_valid_fixture_validates() {
    let fixtures = files_in("tests/fixtures/valid");
    assert!(fixtures.len() >= 5);
    for f in fixtures {
        servebench()
            .arg("validate")
            .arg(relative(&f))
            .assert()
            .success();
    }
}

#[test]
fn gateway_expands_to_seed_004_phases_in_order() {
    let seed: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/seeds/004_00b102e15ffdad6e.txt"))
            .unwrap(),
    )
    .unwrap();
    let seed_phases = seed["phases"].as_array().unwrap();
    let want: Vec<&str> = seed_phases
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(want.len(), 14);

    let out = servebench()
        .args(["expand", "plans/gateway.yaml", "--format", "json"])
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let phases = doc["phases"].as_array().unwrap();
    let got: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(got, want);
    for (p, s) in phases.iter().zip(seed_phases) {
        // The seed's route is the target's name; workloads and concurrency match too.
        assert_eq!(p["target"], s["route"], "{}", s["phase"]);
        assert_eq!(p["workload"], s["workload"], "{}", s["phase"]);
        assert_eq!(p["concurrency"], s["concurrency"], "{}", s["phase"]);
        assert!(p.get("matrix").is_none() && p["duration"].is_string() && p["warmup"].is_object());
    }
    assert_eq!(phases[13]["duration"], "10m");
    assert_eq!(phases[1]["duration"], "1m");
    assert_eq!(phases[8]["recheck"], "gateway-c4");
    assert!(
        doc.get("defaults").is_none(),
        "an expanded plan carries no defaults"
    );

    // The YAML form is the default and holds the same fourteen names.
    let out = servebench()
        .args(["expand", "plans/gateway.yaml"])
        .assert()
        .success();
    let yaml = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let names: Vec<&str> = yaml
        .lines()
        .filter_map(|l| l.strip_prefix("- name: "))
        .collect();
    assert_eq!(names, want);
}

#[test]
fn set_shortens_gateway_durations() {
    let out = servebench()
        .args(["expand", "plans/gateway.yaml", "--format", "json"])
        .args([
            "--set",
            "duration=5s",
            "--set",
            "soak_duration=7s",
            "--set",
            "warmup=1s",
        ])
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let phases = doc["phases"].as_array().unwrap();
    assert!(phases[..13].iter().all(|p| p["duration"] == "5s"));
    assert_eq!(phases[13]["duration"], "7s");
    assert!(phases.iter().all(|p| p["warmup"]["duration"] == "1s"));
    assert_eq!(doc["vars"]["duration"], "5s");
}

/// The key path an invalid fixture must name, from its `# expect:` line.
fn expected_path(path: &Path, text: &str) -> Option<String> {
    if let Some(line) = text.lines().find_map(|l| l.strip_prefix("# expect: ")) {
        return Some(line.trim().to_string());
    }
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    match name.as_str() {
        "empty.yaml" => Some("(document)".into()),
        "unknown-key.json" => Some("phases[0].duraton".into()),
        _ => None,
    }
}

#[test]
fn every_invalid_fixture_exits_2_with_location_and_key_path() {
    let fixtures = files_in("tests/fixtures/invalid");
    assert!(
        fixtures.len() >= 30,
        "only {} invalid fixtures",
        fixtures.len()
    );
    let mut messages = std::collections::HashSet::new();
    for f in &fixtures {
        let rel = relative(f);
        let text = std::fs::read_to_string(f).unwrap();
        let expect =
            expected_path(f, &text).unwrap_or_else(|| panic!("{rel}: no `# expect:` line"));
        let out = servebench().arg("validate").arg(&rel).assert().code(2);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(!stderr.contains("panicked"), "{rel}:\n{stderr}");
        // `--> file:line:col` with numbers.
        let arrow = stderr
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("--> "))
            .unwrap_or_else(|| panic!("{rel}: no location:\n{stderr}"));
        let rest = arrow
            .strip_prefix(&format!("{rel}:"))
            .unwrap_or_else(|| panic!("{rel}: location names another file: {arrow}"));
        let (line, col) = rest.split_once(':').unwrap();
        assert!(
            line.parse::<usize>().unwrap() >= 1 && col.parse::<usize>().unwrap() >= 1,
            "{arrow}"
        );
        let first = stderr.lines().next().unwrap_or_default();
        if expect == "(document)" {
            assert!(first.starts_with("error: "), "{rel}: {first}");
        } else {
            assert!(
                first.starts_with(&format!("error: {expect}: ")),
                "{rel}: want `{expect}`, got:\n{stderr}"
            );
        }
        assert!(
            messages.insert(first.to_string()),
            "{rel}: same first message as another fixture: {first}"
        );
        let name = f.file_name().unwrap().to_string_lossy().replace('.', "_");
        insta::assert_snapshot!(name, stderr);
    }
}

#[test]
fn committed_schemas_match_the_types() {
    for (kind, file, generated) in [
        ("plan", "plan", plan::schema::plan_schema()),
        (
            "plan-expanded",
            "plan.expanded",
            plan::schema::expanded_schema(),
        ),
        (
            "report",
            "report",
            servebench::report::model::schema::report_schema(),
        ),
    ] {
        let path = root().join(format!("schemas/{file}.schema.json"));
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == plan::schema::to_pretty(&generated),
            "schemas/{file}.schema.json is out of date; regenerate it with\n    cargo run -- schema {kind} > schemas/{file}.schema.json"
        );
    }
}

#[test]
fn committed_plan_schema_rejects_an_unknown_key() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schemas/plan.expanded.schema.json")).unwrap(),
    )
    .unwrap();
    let loaded = plan::prepare(
        &root().join("plans/quickstart.yaml"),
        &ExpandOptions::default(),
    )
    .unwrap();
    let mut doc = plan::to_document(&loaded.plan);
    let validator = jsonschema::draft202012::new(&schema).expect("the committed schema compiles");
    assert!(validator.is_valid(&doc), "an expanded plan is valid");
    doc["phases"][0]["concurency"] = Value::from(4);
    assert!(!validator.is_valid(&doc), "an unknown key must be rejected");
    let mut doc = plan::to_document(&loaded.plan);
    doc["colour"] = Value::from("blue");
    assert!(!validator.is_valid(&doc));
}

#[test]
fn expanded_plans_expand_to_themselves() {
    for p in files_in("plans")
        .into_iter()
        .chain(files_in("tests/fixtures/valid"))
    {
        let first = plan::prepare(&p, &ExpandOptions::default()).unwrap();
        let doc = plan::to_document(&first.plan);
        let again = plan::prepare_from_value(doc.clone(), "expanded", &ExpandOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(again.plan, first.plan, "{}", p.display());
        assert_eq!(plan::to_document(&again.plan), doc);
    }
}

#[test]
fn expand_output_reads_back_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let plans = files_in("plans")
        .into_iter()
        .chain(files_in("tests/fixtures/valid"));
    for (plan, format) in plans.flat_map(|p| [(p.clone(), "yaml"), (p, "json")]) {
        let out = servebench()
            .args(["expand", &relative(&plan), "--format", format])
            .assert()
            .success();
        let first = out.get_output().stdout.clone();
        let path = dir.path().join(format!("expanded.{format}"));
        std::fs::write(&path, &first).unwrap();
        let out = servebench()
            .args(["expand", path.to_str().unwrap(), "--format", format])
            .assert()
            .success();
        assert_eq!(
            out.get_output().stdout,
            first,
            "{} as {format}",
            plan.display()
        );
    }
}

#[test]
fn a_report_reruns_its_embedded_plan() {
    let report = root().join("tests/fixtures/valid/report-plan.json");
    let from_file = plan::prepare(&report, &ExpandOptions::default()).unwrap();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let from_value =
        plan::prepare_from_value(doc.clone(), "report.json", &ExpandOptions::default()).unwrap();
    assert_eq!(from_file.plan, from_value.plan);
    assert_eq!(plan::to_document(&from_file.plan), doc["plan"]);
    // Errors inside a report's plan still point into the report file.
    let mut broken = doc;
    broken["plan"]["phases"][0]["concurrency"] = Value::from(0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    std::fs::write(&path, serde_json::to_string_pretty(&broken).unwrap()).unwrap();
    let err = plan::prepare(&path, &ExpandOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("phases[0].concurrency: must be at least 1"),
        "{err}"
    );
    assert!(err.contains("report.json:"), "{err}");
    assert!(err.contains("\"concurrency\": 0"), "{err}");
}

#[test]
fn target_override_points_a_simulator_target_at_a_server() {
    let options = ExpandOptions {
        target_overrides: vec!["server=http://127.0.0.1:9/v1".into()],
        ..ExpandOptions::default()
    };
    let loaded = plan::prepare(&root().join("plans/capacity.yaml"), &options).unwrap();
    let target = &loaded.plan.targets["server"];
    assert_eq!(target.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
    assert!(target.simulator.is_none());
    assert_eq!(
        target.metrics.as_ref().and_then(|m| m.url()),
        Some("http://127.0.0.1:9/metrics")
    );
    assert_eq!(
        target.body["chat_template_kwargs"]["thinking_mode"],
        "disabled"
    );

    let out = servebench()
        .args([
            "expand",
            "plans/capacity.yaml",
            "--target",
            "sever=http://127.0.0.1:9/v1",
        ])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(stderr.contains("no target named `sever`"), "{stderr}");
    assert!(stderr.contains("did you mean `server`?"), "{stderr}");
}

#[test]
fn bad_set_arguments_exit_2() {
    for (arg, want) in [
        ("concurrency", "expected NAME=VALUE"),
        ("duraton=5s", "unknown variable `duraton`"),
        ("duration=[1, 2", "invalid YAML"),
    ] {
        let out = servebench()
            .args(["validate", "plans/quickstart.yaml", "--set", arg])
            .assert()
            .code(2);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(stderr.contains(want), "{arg}: {stderr}");
        assert!(stderr.contains("--> command line:1:"), "{arg}: {stderr}");
    }
}

#[test]
fn a_bad_value_given_with_set_is_reported_once_naming_the_command_line() {
    // quickstart.yaml's `defaults` give every phase `duration: "{{ duration }}"`.
    let out = servebench()
        .args(["validate", "plans/quickstart.yaml", "--set", "duration=abc"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
    assert!(
        stderr.contains("= note: `duration` is \"abc\" (from `--set duration=abc`)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the same in phases[1].duration, phases[2].duration"),
        "{stderr}"
    );
    // A value from the plan's own `vars` says so.
    let dir = tempfile::tempdir().unwrap();
    let plan = std::fs::read_to_string("plans/quickstart.yaml")
        .unwrap()
        .replacen("duration: 3s", "duration: 3 parsecs", 1);
    let path = dir.path().join("plan.yaml");
    std::fs::write(&path, plan).unwrap();
    let out = servebench()
        .args(["validate", path.to_str().unwrap()])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains("`duration` is \"3 parsecs\" (from the plan's `vars`)"),
        "{stderr}"
    );
}

#[test]
fn schema_and_completions_commands_print() {
    let out = servebench().args(["schema", "plan"]).assert().success();
    let schema: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(schema["title"], "Plan");
    let out = servebench().args(["schema", "report"]).assert().success();
    let schema: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(schema["title"], "Report");
    let out = servebench()
        .args(["completions", "bash"])
        .assert()
        .success();
    assert!(String::from_utf8_lossy(&out.get_output().stdout).contains("servebench"));
    servebench().arg("--version").assert().success();
    servebench()
        .args(["validate", "no/such/plan.yaml"])
        .assert()
        .code(2);
}

mod never_panics {
    use proptest::prelude::*;
    use servebench::plan::{self, ExpandOptions, source::Format};

    const QUICKSTART: &str = include_str!("../../plans/quickstart.yaml");

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn on_mangled_plans(start in 0usize..2000, len in 0usize..40, insert in "[ \\t\\n:{}\\[\\],-]{0,4}|[a-z{}]{0,6}") {
            let mut text = QUICKSTART.to_string();
            let start = start.min(text.len());
            let end = (start + len).min(text.len());
            if text.is_char_boundary(start) && text.is_char_boundary(end) {
                text.replace_range(start..end, &insert);
            }
            for format in [Format::Yaml, Format::Json, Format::Toml] {
                let _ = plan::prepare_from_str(&text, format, "mangled", &ExpandOptions::default());
            }
        }

        #[test]
        fn on_arbitrary_text(text in "\\PC{0,200}") {
            let _ = plan::prepare_from_str(&text, Format::Yaml, "arbitrary", &ExpandOptions::default());
        }
    }
}

#[test]
fn the_old_slo_spelling_runs_with_a_warning_at_its_place_and_expands_to_the_new() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.yaml");
    let text = "version: 1\nname: old-slo\nslo:\n  ttft: 2s\n  e2e: {p99: 5s}\n\
        targets:\n  sim: {simulator: {}}\nworkloads:\n  w: {input_tokens: 16, output_tokens: 4}\n\
        phases:\n  - {name: p, target: sim, workload: w, concurrency: 1, requests: 2}\n";
    std::fs::write(&path, text).unwrap();
    let file = path.display().to_string();
    let warning = format!(
        "warning: slo.ttft: `ttft: 2s` is deprecated: a bare duration is the old spelling of a \
         limit on every request\n --> {file}:4:3\n  |\n4 |   ttft: 2s\n  |   ^^^^\n  \
         = help: write `ttft: {{max: 2s}}`\n"
    );
    let out = servebench().args(["validate", &file]).assert().success();
    let output = out.get_output();
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!("{warning}\n")
    );
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("ok: "));
    let out = servebench()
        .args(["validate", "--format", "github", &file])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        stdout.starts_with(&format!("::warning file={file},line=4,col=3,")),
        "{stdout}"
    );
    // `run` says it too, and the plan it runs (and embeds in its report) has the new spelling.
    let out = servebench()
        .args(["run", &file, "--dry-run"])
        .assert()
        .success();
    let one_line = format!(
        "warning: {file}:4:3: slo.ttft: `ttft: 2s` is deprecated: a bare duration is the old \
         spelling of a limit on every request"
    );
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains(&one_line), "{stderr}");
    let loaded = plan::prepare(&path, &ExpandOptions::default()).unwrap();
    assert_eq!(
        plan::to_document(&loaded.plan)["slo"],
        serde_json::json!({"ttft": {"max": "2s"}, "e2e": {"p99": "5s"}})
    );
    assert_eq!(loaded.warnings.len(), 1);
}
