//! Helpers shared by the integration test modules.

use std::sync::OnceLock;

use tokio::sync::{Mutex, MutexGuard};

fn heavy_runs() -> &'static Mutex<()> {
    static LOCK: OnceLock<Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| Mutex::new(()))
}

/// Tests that run whole plans or check timings hold this, so that on a two-core machine they
/// never compete with each other for the CPU and skew each other's clocks.
pub async fn exclusive_run() -> MutexGuard<'static, ()> {
    heavy_runs().lock().await
}

/// [`exclusive_run`] for tests that are not async.
pub fn exclusive_run_blocking() -> MutexGuard<'static, ()> {
    heavy_runs().blocking_lock()
}

/// Run options for tests: no progress, no calibration, no machine-wide wake hint, no busy
/// polling; tests override what they exercise with struct-update syntax.
pub fn quiet_run_options(
    plan: std::path::PathBuf,
    out: &std::path::Path,
) -> servebench::runner::RunOptions {
    servebench::runner::RunOptions {
        plan,
        expand: servebench::plan::ExpandOptions::default(),
        out_dir: Some(out.to_path_buf()),
        only: Vec::new(),
        dry_run: false,
        progress: servebench::scheduler::progress::ProgressMode::Quiet,
        calibrate: false,
        latency_hint: false,
        busy_poll: false,
        shard: None,
        start_at: None,
        salt: None,
        long_run: servebench::runner::LongRunOptions::default(),
    }
}

/// Write `yaml` as `dir/plan.yaml`, run it quietly into `dir/out` and read its report.
pub async fn run_plan_text(dir: &std::path::Path, yaml: &str) -> servebench::report::Report {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("plan.yaml");
    std::fs::write(&path, yaml).unwrap();
    let out = dir.join("out");
    servebench::runner::run(quiet_run_options(path, &out))
        .await
        .expect("run");
    servebench::report::read_report(&out.join("report.json")).expect("report")
}

/// Fail with every violation when `value` does not match schemas/report.schema.json.
pub fn assert_valid_report(value: &serde_json::Value) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/report.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the report schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "report does not match schemas/report.schema.json:\n{}",
        errors.join("\n")
    );
}

/// Every file under `dir`, subdirectories included, with its bytes: what a run left behind,
/// for tests that a secret is in none of it.
pub fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            let bytes = std::fs::read(&path).unwrap();
            out.push((path, bytes));
        }
    }
    out
}

/// A finished run's journal as it was before its records moved to closed parts: every
/// record of `requests/` as a journal line (`{"phase", "window", ...record}`), then the
/// journal's own lines (each phase's facts, rolling summaries, any record no part holds).
pub fn records_and_journal(dir: &std::path::Path) -> Vec<serde_json::Value> {
    use servebench::report::formats::records::RecordsSet;
    let mut lines = Vec::new();
    if let Some(set) = RecordsSet::in_dir(dir).unwrap() {
        for row in set.rows() {
            let row = row.unwrap();
            let mut line = serde_json::to_value(&row.record).unwrap();
            line["phase"] = row.phase.into();
            line["window"] = row.window.as_str().into();
            lines.push(line);
        }
    }
    let journal = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap_or_default();
    lines.extend(
        journal
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("journal line is JSON")),
    );
    lines
}

/// Every row of a run directory's records (its closed parts), in order.
pub fn record_rows(dir: &std::path::Path) -> Vec<servebench::report::formats::records::RecordRow> {
    servebench::report::formats::records::RecordsSet::in_dir(dir)
        .unwrap()
        .expect("the run directory holds records")
        .rows()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// `servebench validate` on `yaml`, written to `dir/plan.yaml`: the exit code and stderr.
pub fn validate_yaml(dir: &std::path::Path, yaml: &str) -> (i32, String) {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, yaml).unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin!("servebench"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("validate")
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.code().unwrap_or(-1), stderr)
}

/// A plan named `name` with one four-request phase of `workload` (a YAML flow mapping)
/// against the simulator on `api`; its sixth line is the workload's.
pub fn one_phase_sim_plan(name: &str, workload: &str, api: &str) -> String {
    format!(
        "version: 1
name: {name}
targets:
  sim: {{simulator: {{}}, api: {api}}}
workloads:
  w: {workload}
phases:
  - {{name: p, target: sim, workload: w, concurrency: 1, requests: 4}}
"
    )
}

/// Each `(workload, api, want, at)`: a one-phase plan of `workload` is refused (exit 2) with an
/// error holding `want` whose caret is on the workload's line at the column where `at` is.
pub fn assert_refused_at_their_key(name: &str, cases: &[(&str, &str, &str, &str)]) {
    let dir = tempfile::tempdir().unwrap();
    for &(workload, api, want, at) in cases {
        let yaml = one_phase_sim_plan(name, workload, api);
        let line = yaml.lines().nth(5).unwrap();
        let column = line.find(at).unwrap() + 1;
        let (code, stderr) = validate_yaml(dir.path(), &yaml);
        assert_eq!(code, 2, "{workload}: {stderr}");
        let report = stderr
            .split("error: ")
            .find(|e| e.contains(want))
            .unwrap_or_else(|| panic!("{workload}: no `{want}` in {stderr}"));
        assert!(
            report.contains(&format!("plan.yaml:6:{column}\n")),
            "{workload}: {report}"
        );
    }
}

/// The binary, with no history variable leaking in from the environment.
pub fn servebench() -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("servebench"));
    cmd.env_remove(servebench::history::store::HISTORY_ENV)
        .env_remove(servebench::history::hook::PAUSE_ENV);
    cmd
}

/// `servebench history --history STORE ARGS…`, asserted to succeed; its stdout.
pub fn history_ok(store: &str, args: &[&str]) -> Vec<u8> {
    let out = servebench()
        .args(["history", "--history", store])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `history series --format json` of one figure of a phase run against target `sim`.
pub fn sim_series(store: &str, plan: &str, phase: &str, figure: &str) -> serde_json::Value {
    let args = [
        "series", "--plan", plan, "--phase", phase, "--target", "sim", "--figure", figure,
        "--format", "json",
    ];
    serde_json::from_slice(&history_ok(store, &args)).unwrap()
}
