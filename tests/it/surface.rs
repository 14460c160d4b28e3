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

/// `run --phase` picks phases under the name `report --phase` and `history series --phase`
/// use; `--only`, its old spelling, still works with a note.
#[test]
fn run_picks_phases_with_phase_and_only_still_works_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let plan = root().join("plans/quickstart.yaml");
    let dry_run = |flag: &str| {
        let out = servebench_in(dir.path())
            .arg("run")
            .arg(&plan)
            .args(["--dry-run", flag, "c8"])
            .assert()
            .success();
        (stdout_of(&out), stderr_of(&out))
    };
    let (schedule, stderr) = dry_run("--phase");
    assert!(schedule.contains("c8"), "{schedule}");
    assert!(
        !schedule.contains("rate-20"),
        "only c8 is scheduled: {schedule}"
    );
    assert!(!stderr.contains("deprecated"), "{stderr}");
    let (old_schedule, old_stderr) = dry_run("--only");
    assert_eq!(old_schedule, schedule);
    assert!(
        old_stderr.contains("note: `--only` is deprecated and will be removed; write `--phase`"),
        "{old_stderr}"
    );
    assert_eq!(old_stderr.lines().count(), 1, "{old_stderr}");

    let unknown = servebench_in(dir.path())
        .arg("run")
        .arg(&plan)
        .args(["--dry-run", "--phase", "c9"])
        .assert()
        .code(Exit::InvalidInput.code());
    assert!(
        stderr_of(&unknown).contains("--phase: no phase named `c9`"),
        "{}",
        stderr_of(&unknown)
    );
    let help = servebench_in(dir.path())
        .args(["run", "--help"])
        .assert()
        .success();
    let help = stdout_of(&help);
    assert!(help.contains("--phase <PHASE>"), "{help}");
    assert!(
        !help.contains("--only"),
        "the old spelling stays out of the help: {help}"
    );
}

/// A one-phase plan against a server at `url` that names no model (so the run asks the
/// server for one) and spells `metrics` the old way (so it earns a warning).
fn discovering_plan(url: &str) -> String {
    format!(
        "version: 1
name: quiet
targets:
  srv: {{base_url: {url}/v1, metrics_url: {url}/metrics}}
workloads:
  w: {{input_tokens: 16, output_tokens: 4, ignore_eos: true}}
phases:
  - {{name: p, target: srv, workload: w, concurrency: 1, requests: 4}}
"
    )
}

/// `-q` leaves warnings, errors and the `report:` line, and nothing else: no phase line,
/// no model discovery, no history line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_runs_print_only_warnings_errors_and_the_report_line() {
    let _exclusive = crate::common::exclusive_run().await;
    let (addr, _sim) = servebench::sim::serve(servebench::sim::SimConfig::default())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plan.yaml"),
        discovering_plan(&format!("http://{addr}")),
    )
    .unwrap();
    let run = |quiet: bool, out: &str| {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("servebench"));
        cmd.current_dir(dir.path())
            .args(["run", "plan.yaml", "--no-calibrate", "-o", out])
            .args(["--history", "history.sqlite"]);
        if quiet {
            cmd.arg("-q");
        }
        let output = cmd.output().unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        assert!(output.status.success(), "{stdout}\n{stderr}");
        (stdout, stderr)
    };
    let (stdout, stderr) = tokio::task::block_in_place(|| run(false, "loud"));
    // What -q must leave out is there without it.
    assert!(stdout.contains("p: 4 requests, 0 errors"), "{stdout}");
    assert!(stderr.contains("target `srv`: using model"), "{stderr}");
    assert!(stderr.contains("history: recorded"), "{stderr}");

    let (stdout, stderr) = tokio::task::block_in_place(|| run(true, "quiet"));
    assert_eq!(stdout, "", "no phase lines on stdout");
    assert!(
        stderr.contains("targets.srv.metrics_url: `metrics_url` is deprecated"),
        "warnings still show: {stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "report: {}",
            Path::new("quiet").join("report.json").display()
        )),
        "{stderr}"
    );
    for line in stderr.lines() {
        assert!(
            ["warning: ", "error: ", "report: "]
                .iter()
                .any(|p| line.starts_with(p)),
            "-q printed `{line}`:\n{stderr}"
        );
    }
    assert!(dir.path().join("quiet/report.json").is_file());
}

/// Two different plans: the headline says so first; `0 significant regressions` alone would
/// read as a pass. The exit code is what it was.
#[test]
fn compare_of_two_plans_says_so_in_its_headline() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("tests/fixtures/reports/sample.json")).unwrap();
    let sample: Value = serde_json::from_str(&text).unwrap();
    let (mut base, mut new) = (sample.clone(), sample.clone());
    new["plan"]["name"] = "other-plan".into();
    let phases = sample["phases"].as_array().unwrap().len();
    for (report, work) in [(&mut base, "a"), (&mut new, "b")] {
        for phase in report["phases"].as_array_mut().unwrap() {
            phase["work_sha256"] = work.repeat(64).into();
        }
    }
    let same = sample.clone();
    for (name, report) in [
        ("base.json", &base),
        ("new.json", &new),
        ("same.json", &same),
    ] {
        std::fs::write(dir.path().join(name), report.to_string()).unwrap();
    }
    let compare = |a: &str, b: &str, format: &str| {
        let out = servebench_in(dir.path())
            .args(["compare", a, b, "--format", format])
            .assert()
            .success();
        stdout_of(&out)
    };
    let md = compare("base.json", "new.json", "md");
    let headline = md
        .lines()
        .find(|l| l.starts_with("**"))
        .unwrap_or_else(|| panic!("no headline: {md}"));
    assert_eq!(
        headline,
        format!(
            "**The two runs ran different plans (gateway-demo and other-plan): {phases} \
             phase(s) in both asked for different work, not compared. No phase was compared.**"
        ),
        "{md}"
    );
    let json: Value = serde_json::from_str(&compare("base.json", "new.json", "json")).unwrap();
    assert_eq!(json["plans_differ"], true, "{json}");

    // The same plan keeps the plain counts.
    let md = compare("same.json", "same.json", "md");
    assert!(
        md.contains("**0 significant regressions, 0 significant improvements"),
        "{md}"
    );
    assert!(!md.contains("different plans"), "{md}");
    let json: Value = serde_json::from_str(&compare("same.json", "same.json", "json")).unwrap();
    assert!(json.get("plans_differ").is_none(), "{json}");
}

/// A plan that parses gets its schema problems and its semantic ones in one pass, each at
/// its file:line:col.
#[test]
fn validate_reports_a_schema_typo_and_a_semantic_error_together() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "version: 1
name: both
targets:
  sim: {simulator: {}}
workloads:
  w: {input_tokens: 16, output_tokens: 4, ignore_eoss: true}
phases:
  - {name: p, target: sim, workload: w, concurrency: 1, requests: 4}
  - {name: q, target: nope, workload: w, concurrency: 1, requests: 4}
";
    let (code, stderr) = crate::common::validate_yaml(dir.path(), yaml);
    assert_eq!(code, Exit::InvalidInput.code(), "{stderr}");
    assert!(stderr.contains("unknown key `ignore_eoss`"), "{stderr}");
    assert!(
        stderr.contains("plan.yaml:6:43\n"),
        "the typo's place: {stderr}"
    );
    assert!(stderr.contains("`nope`"), "the semantic error: {stderr}");
    assert!(
        stderr.contains("plan.yaml:9:"),
        "the semantic error's place: {stderr}"
    );
    assert!(stderr.contains("2 errors"), "{stderr}");

    // Fixing the typo leaves the semantic error, and nothing new.
    let (code, fixed) =
        crate::common::validate_yaml(dir.path(), &yaml.replace("ignore_eoss", "ignore_eos"));
    assert_eq!(code, Exit::InvalidInput.code(), "{fixed}");
    assert!(
        fixed.contains("`nope`") && !fixed.contains("unknown key"),
        "{fixed}"
    );
    assert!(!fixed.contains("2 errors"), "{fixed}");
}

/// A URL without a scheme in `--target` is the command line's mistake: the error quotes the
/// argument and points there, not at the plan's target.
#[test]
fn a_target_argument_without_a_scheme_is_refused_at_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let plan = root().join("plans/quickstart.yaml");
    for verb in ["validate", "run"] {
        let out = servebench_in(dir.path())
            .arg(verb)
            .arg(&plan)
            .args(["--target", "sim=127.0.0.1:8000"])
            .assert()
            .code(Exit::InvalidInput.code());
        let stderr = stderr_of(&out);
        assert!(
            stderr.contains(
                "error: --target sim=127.0.0.1:8000: expected an http:// or https:// URL after `=`"
            ),
            "{verb}: {stderr}"
        );
        assert!(
            stderr.contains(" --> command line:1:14\n"),
            "{verb}: {stderr}"
        );
        assert!(
            stderr.contains("for example --target sim=http://127.0.0.1:8000"),
            "{verb}: {stderr}"
        );
        assert!(!stderr.contains("quickstart.yaml"), "{verb}: {stderr}");
        assert!(!dir.path().join("runs").exists(), "{verb}: nothing ran");
    }
}
