//! A run SIGKILLed mid-phase, after its report and inside the store's commit leaves no
//! complete row, checked from a fresh process. The last two points are reached through the
//! test hook `SERVEBENCH_HISTORY_TEST_PAUSE` (the process says it paused, then waits).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use servebench::history::hook::{PAUSE_ENV, PAUSED_LINE};
use servebench::history::{Location, OpenMode, Store, open};

use super::support::{backends, list_runs, report, rich_sample, servebench};

const PLAN: &str = "\
version: 1
name: killed
vars: {duration: 1s}
targets:
  sim: {simulator: {decode_ms_per_token: 2}}
workloads:
  chat: {input_tokens: 64, output_tokens: 16}
defaults: {target: sim, workload: chat}
phases:
  - {name: c2, concurrency: 2, duration: '{{ duration }}'}
";

/// Where the run is killed.
#[derive(Debug, Clone, Copy)]
enum KillAt {
    MidPhase,
    AfterReport,
    InCommit,
}

fn start_run(dir: &Path, history: &str, at: KillAt) -> Child {
    let plan = dir.join("killed.yaml");
    std::fs::write(&plan, PLAN).unwrap();
    let mut cmd = servebench();
    cmd.args([
        "run",
        "--quiet",
        "--no-calibrate",
        "--no-latency-hint",
        "--history",
        history,
    ])
    .arg("--out")
    .arg(dir.join("run"))
    .arg(&plan)
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    match at {
        KillAt::MidPhase => {
            cmd.args(["--set", "duration=60s"]);
        }
        KillAt::AfterReport => {
            cmd.env(PAUSE_ENV, "after-report");
        }
        KillAt::InCommit => {
            cmd.env(PAUSE_ENV, "in-commit");
        }
    }
    cmd.spawn().unwrap()
}

/// Wait until `child` reaches `at`, then SIGKILL it.
fn kill_at(mut child: Child, dir: &Path, at: KillAt) {
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "{at:?} never reached: {seen:?}");
        let reached = match at {
            // The report is written when the run starts; the phase then runs for 60 s.
            KillAt::MidPhase => dir.join("run/report.json").exists(),
            KillAt::AfterReport | KillAt::InCommit => {
                let name = if matches!(at, KillAt::AfterReport) {
                    "after-report"
                } else {
                    "in-commit"
                };
                seen.iter()
                    .any(|l: &String| l.contains(&format!("{PAUSED_LINE} {name}")))
            }
        };
        if reached {
            break;
        }
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
            seen.push(line);
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended first: {seen:?}"
        );
    }
    if matches!(at, KillAt::MidPhase) {
        // Well inside the 60 s phase.
        std::thread::sleep(Duration::from_millis(1500));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_run_killed_mid_phase_after_its_report_or_inside_the_commit_leaves_no_complete_row() {
    let _guard = crate::common::exclusive_run_blocking();
    let dir = tempfile::tempdir().unwrap();
    for location in backends(dir.path(), "killed recorders") {
        // A run already in the store, so the store exists and must stay readable.
        let mut store = open(&location, OpenMode::Create).unwrap();
        let before = store.record(&report(&rich_sample()), None).unwrap();
        drop(store);
        let history = match &location {
            Location::Sqlite(path) => path.display().to_string(),
            Location::Postgres(url) => url.clone(),
        };
        for at in [KillAt::MidPhase, KillAt::AfterReport, KillAt::InCommit] {
            let run_dir = tempfile::tempdir().unwrap();
            let child = start_run(run_dir.path(), &history, at);
            kill_at(child, run_dir.path(), at);
            assert!(
                run_dir.path().join("run/report.json").exists(),
                "{at:?}: a report"
            );
            // From a fresh process: the earlier run only, nothing of the killed one.
            let runs = list_runs(&history, &[]);
            let ids: Vec<&str> = runs.iter().map(|r| r["id"].as_str().unwrap()).collect();
            assert_eq!(ids, [before.as_str()], "{location} {at:?}");
            let complete = list_runs(&history, &["--complete"]);
            assert_eq!(complete.len(), 1, "{location} {at:?}");
        }
    }
}
