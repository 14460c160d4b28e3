//! The history's command line on synthetic stores: what it refuses (a `--plan` it holds no
//! run of, a baseline with no gates), what the gate says, `ack` of many alerts, time options.

use super::trends::{address, history_cmd, recorded};

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_plan_the_store_holds_no_run_of_fails_every_reading_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let baselines = dir.path().join("baselines.yaml");
    std::fs::write(&baselines, "pinned: {run: run-0003}\n").unwrap();
    let baselines = baselines.display().to_string();
    for location in recorded(dir.path(), "unknown plans on PostgreSQL", 12) {
        let path = address(&location);
        let series = [
            "series", "--plan", "nightyl", "--phase", "phase-00", "--target", "default",
            "--figure", "ttft.p99",
        ];
        let asked: [&[&str]; 5] = [
            &["gate", "--plan", "nightyl"],
            &["trend", "--plan", "nightyl"],
            &["list", "--plan", "nightyl"],
            &["baseline", "--plan", "nightyl", "--baselines", &baselines],
            &series,
        ];
        for args in asked {
            let out = history_cmd(&path).args(args).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
            assert!(
                text(&out).contains(&format!(
                    "no runs of plan `nightyl` in {location}; did you mean `nightly`?"
                )),
                "{args:?}: {}",
                text(&out)
            );
        }
        let far = history_cmd(&path)
            .args(["gate", "--plan", "gateway"])
            .output()
            .unwrap();
        assert_eq!(far.status.code(), Some(2));
        assert!(
            text(&far).contains("it holds runs of `nightly`"),
            "{}",
            text(&far)
        );
    }
}

/// Two copies of the sample report recorded into a fresh SQLite store; the store's path
/// and the first copy's id.
fn two_sample_runs(dir: &std::path::Path) -> (String, String) {
    let store = dir.join("history.sqlite").display().to_string();
    let mut ids = Vec::new();
    for (name, run_id) in [("a", "sample-a"), ("b", "sample-b")] {
        let path = super::support::write_report(dir, name, &super::support::sample(), run_id);
        let out = history_cmd(&store)
            .arg("record")
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        ids.push(String::from_utf8_lossy(&out.stdout).trim().to_string());
    }
    (store, ids.swap_remove(0))
}

#[test]
fn a_baseline_with_no_gates_to_check_is_refused_not_passed() {
    let dir = tempfile::tempdir().unwrap();
    let (store, first) = two_sample_runs(dir.path());
    let plan = super::support::sample()["plan"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let baselines = dir.path().join("baselines.yaml");
    std::fs::write(&baselines, format!("release: {{run: {first}}}\n")).unwrap();
    let gate = |extra: &[&str]| {
        history_cmd(&store)
            .args([
                "gate",
                "--plan",
                &plan,
                "--baseline",
                "release",
                "--baselines",
            ])
            .arg(&baselines)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = gate(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("baseline `release` has no gates to check"),
        "{}",
        text(&out)
    );
    // A gate from the command line gives it something to check.
    let out = gate(&["--gate", "error_rate <= 1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn a_quiet_gate_says_how_many_series_it_could_not_test_yet() {
    let dir = tempfile::tempdir().unwrap();
    // 4 runs: fewer than the 3 either side a change needs.
    for location in recorded(dir.path(), "untested series on PostgreSQL", 4) {
        let out = history_cmd(&address(&location))
            .args(["gate", "--plan", "nightly"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(
            text(&out).contains("no open alerts\n")
                && text(&out).contains("1 series cannot be tested yet: fewer than 6 eligible runs"),
            "{location}: {}",
            text(&out)
        );
    }
    let dir = tempfile::tempdir().unwrap();
    for location in recorded(dir.path(), "tested series on PostgreSQL", 6) {
        let out = history_cmd(&address(&location))
            .args(["gate", "--plan", "nightly"])
            .output()
            .unwrap();
        assert!(
            !text(&out).contains("cannot be tested"),
            "{location}: {}",
            text(&out)
        );
    }
}

#[test]
fn the_gate_writes_an_alert_s_change_as_the_trend_report_does() {
    let dir = tempfile::tempdir().unwrap();
    for location in recorded(dir.path(), "alert text on PostgreSQL", 30) {
        let path = address(&location);
        let gate = history_cmd(&path)
            .args(["gate", "--plan", "nightly"])
            .output()
            .unwrap();
        assert_eq!(gate.status.code(), Some(5), "{}", text(&gate));
        let trend = history_cmd(&path)
            .args(["trend", "--plan", "nightly"])
            .output()
            .unwrap();
        let trend = String::from_utf8_lossy(&trend.stdout).to_string();
        let row = trend
            .lines()
            .find(|l| l.starts_with("| 1 | **open** |"))
            .unwrap_or_else(|| panic!("{trend}"));
        let change = row.split(" | ").nth(2).unwrap();
        assert!(
            change.starts_with("regression in phase-00 → default at run-"),
            "{row}"
        );
        assert!(
            text(&gate).contains(&format!("alert 1 open: {change} (opened by")),
            "{change}\n{}",
            text(&gate)
        );
        // The wording is stable: the same line at the next gate.
        let again = history_cmd(&path)
            .args(["gate", "--plan", "nightly"])
            .output()
            .unwrap();
        assert_eq!(text(&again), text(&gate));
    }
}

#[test]
fn ack_takes_several_alerts_or_every_open_one_of_a_plan() {
    use servebench::history::{AlertState, OpenMode, Store as _, open, synthetic};
    let dir = tempfile::tempdir().unwrap();
    for location in super::support::backends(dir.path(), "ack on PostgreSQL") {
        let mut store = open(&location, OpenMode::Create).unwrap();
        // Phases 0, 3 and 6 step up at the same run, each against a target of its own: an
        // alert per target (one change moves both figures of a phase).
        for mut rows in synthetic::runs("nightly", 30, 7, &["ttft.p99", "e2e.p99"]) {
            for phase in &mut rows.phases {
                phase.target = format!("t{}", phase.phase.trim_start_matches("phase-0"));
            }
            store.record_rows(&rows).unwrap();
        }
        let path = address(&location);
        let gate = history_cmd(&path)
            .args(["gate", "--plan", "nightly"])
            .output()
            .unwrap();
        assert_eq!(gate.status.code(), Some(5), "{}", text(&gate));
        let ids: Vec<String> = store
            .alerts(None)
            .unwrap()
            .iter()
            .map(|a| a.id.to_string())
            .collect();
        assert!(ids.len() >= 3, "{location}: {ids:?}");
        let states = || -> Vec<AlertState> {
            let store = open(&location, OpenMode::Existing).unwrap();
            store
                .alerts(None)
                .unwrap()
                .into_iter()
                .map(|a| a.state)
                .collect()
        };

        // One unknown number acknowledges nothing.
        let out = history_cmd(&path)
            .args(["ack", &ids[0], "999", "--reason", "x"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(states().iter().all(|s| *s == AlertState::Open));

        let out = history_cmd(&path)
            .args(["ack", &ids[0], &ids[1], "--reason", "new tokenizer"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            text(&out).contains(&format!("acknowledged 2 alerts: {}, {}", ids[0], ids[1])),
            "{}",
            text(&out)
        );
        let out = history_cmd(&path)
            .args([
                "ack",
                "--plan",
                "nightly",
                "--all",
                "--reason",
                "new engine",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            text(&out).contains(&match ids.len() - 2 {
                1 => "acknowledged 1 alert of plan `nightly`".to_string(),
                n => format!("acknowledged {n} alerts of plan `nightly`"),
            }),
            "{}",
            text(&out)
        );
        assert!(states().iter().all(|s| *s == AlertState::Acknowledged));
        let gate = history_cmd(&path)
            .args(["gate", "--plan", "nightly"])
            .output()
            .unwrap();
        assert_eq!(gate.status.code(), Some(0), "{}", text(&gate));
        // --all needs the plan, and the plan must be one the store holds.
        let out = history_cmd(&path)
            .args(["ack", "--all", "--reason", "x"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let out = history_cmd(&path)
            .args(["ack", "--plan", "nightyl", "--all", "--reason", "x"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    }
}

#[test]
fn since_takes_a_plain_date_as_its_midnight_utc() {
    let dir = tempfile::tempdir().unwrap();
    // Run 1 starts 2023-11-14T23:13:20Z, each next one an hour later.
    for location in recorded(dir.path(), "--since a date on PostgreSQL", 12) {
        let path = address(&location);
        let by_date = super::support::list_runs(&path, &["--since", "2023-11-15"]);
        let by_time = super::support::list_runs(&path, &["--since", "2023-11-15T00:00:00Z"]);
        assert_eq!(by_date.len(), 11, "{location}");
        assert_eq!(by_date, by_time);
        let out = history_cmd(&path)
            .args(["list", "--since", "15/11/2023"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out).contains("or a date (2026-12-06"),
            "{}",
            text(&out)
        );
    }
}

#[test]
fn the_gate_says_what_it_left_out_and_can_require_tested_series() {
    use servebench::history::{OpenMode, Store as _, open, synthetic};
    let dir = tempfile::tempdir().unwrap();
    for location in super::support::backends(dir.path(), "left out on PostgreSQL") {
        let mut store = open(&location, OpenMode::Create).unwrap();
        // Five runs of a quiet phase: too few to test; the second client-bound, the third
        // excluded.
        for (n, mut rows) in synthetic::runs("nightly", 5, 2, &["ttft.p99"])
            .into_iter()
            .enumerate()
        {
            rows.phases.retain(|p| p.phase == "phase-01");
            if n == 1 {
                rows.phases[0].trust = Some(servebench::metrics::trust::TrustVerdict::ClientBound);
            }
            store.record_rows(&rows).unwrap();
        }
        store.exclude("run-0003", "noisy neighbour").unwrap();
        let path = address(&location);
        let gate = |extra: &[&str]| {
            history_cmd(&path)
                .args(["gate", "--plan", "nightly"])
                .args(extra)
                .output()
                .unwrap()
        };
        let out = gate(&[]);
        assert_eq!(out.status.code(), Some(0), "{location}: {}", text(&out));
        assert!(
            text(&out).contains("left out: 1 client-bound, 1 excluded\n"),
            "{location}: {}",
            text(&out)
        );
        let out = gate(&["--require-tested"]);
        assert_eq!(out.status.code(), Some(4), "{location}: {}", text(&out));
        assert!(
            text(&out).contains("1 watched series could not be tested yet"),
            "{location}: {}",
            text(&out)
        );
        // The same verdict as one object for scripts.
        let out = gate(&["--require-tested", "--format", "json"]);
        assert_eq!(out.status.code(), Some(4), "{location}: {}", text(&out));
        let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(found["exit_code"], 4, "{found}");
        assert_eq!(
            found["gate"]["left_out"],
            serde_json::json!({"client-bound": 1, "excluded": 1}),
            "{found}"
        );
        assert_eq!(found["gate"]["untested_watched"], 1, "{found}");
        assert_eq!(found["gate"]["open"], serde_json::json!([]), "{found}");
    }
    // An empty store has nothing to gate on; a read never makes a file into a store.
    let empty = dir.path().join("empty.sqlite");
    open(
        &servebench::history::Location::Sqlite(empty.clone()),
        OpenMode::Create,
    )
    .unwrap();
    let out = history_cmd(empty.to_str().unwrap())
        .arg("gate")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("holds no runs"), "{}", text(&out));
    let zero = dir.path().join("zero.sqlite");
    std::fs::write(&zero, b"").unwrap();
    let out = history_cmd(zero.to_str().unwrap())
        .arg("list")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("is an empty file"), "{}", text(&out));
    assert_eq!(std::fs::metadata(&zero).unwrap().len(), 0);
}
