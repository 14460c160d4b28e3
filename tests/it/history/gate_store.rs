//! The baseline gate from the store alone (schema v5): the same verdicts with both runs'
//! directories deleted, a run recorded before v5 falling back and saying so; and which
//! client-bound runs the trends leave out.

use std::collections::BTreeMap;
use std::path::Path;

use servebench::history::kept::Kept;
use servebench::history::store::sql::Cell;
use servebench::history::{Location, OpenMode, SeriesKey, Store, open, synthetic};
use servebench::metrics::trust::{ClientLoad, TrustVerdict, judge};

use super::support::{backends, list_runs, servebench};
use super::trends::{address, history_cmd};

const PLAN: &str = "\
version: 1
name: gated
targets:
  sim: {simulator: {decode_ms_per_token: 1}}
workloads:
  chat: {input_tokens: 32, output_tokens: 8}
defaults: {target: sim, workload: chat}
phases:
  - {name: c2, concurrency: 2, requests: 40}
";

/// One passing change gate, one passing value gate, one failing value gate.
const GATES: [&str; 3] = ["ttft.p99 < +900%", "error_rate <= 0", "e2e.p50 < 1us"];

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Two runs of the plan into `dir/runs/{a,b}`, recorded into `store`; the baselines file
/// naming the first with [`GATES`], and the runs' report files.
fn two_runs(dir: &Path, store: &str) -> (std::path::PathBuf, [std::path::PathBuf; 2]) {
    let plan = dir.join("gated.yaml");
    std::fs::write(&plan, PLAN).unwrap();
    for out in ["runs/a", "runs/b"] {
        let ran = servebench()
            .current_dir(dir)
            .args(["run", "--quiet", "--no-calibrate", "--no-latency-hint"])
            .args(["--out", out, "--history", store])
            .arg(&plan)
            .output()
            .unwrap();
        assert!(ran.status.success(), "{}", text(&ran));
    }
    let runs = list_runs(store, &[]);
    assert_eq!(runs.len(), 2, "{runs:?}");
    let base = runs
        .iter()
        .min_by_key(|r| r["started_at"].as_str().unwrap().to_string())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let baselines = dir.join("baselines.yaml");
    let gates: Vec<String> = GATES.iter().map(|g| format!("{g:?}")).collect();
    std::fs::write(
        &baselines,
        format!("release: {{run: {base}, gates: [{}]}}\n", gates.join(", ")),
    )
    .unwrap();
    let reports = ["a", "b"]
        .map(|r| std::path::absolute(dir.join("runs").join(r).join("report.json")).unwrap());
    (baselines, reports)
}

fn gate(store: &str, baselines: &Path) -> std::process::Output {
    history_cmd(store)
        .args([
            "gate",
            "--plan",
            "gated",
            "--baseline",
            "release",
            "--baselines",
        ])
        .arg(baselines)
        .output()
        .unwrap()
}

/// Each gate's row of the printed table: (gate, phase) → passed.
fn verdicts(out: &std::process::Output) -> BTreeMap<(String, String), bool> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut found = BTreeMap::new();
    for line in stdout.lines().filter(|l| l.starts_with('|')) {
        // Markdown escapes `<` and `_` in cells.
        let cells: Vec<String> = line
            .split('|')
            .map(|c| c.trim().replace('\\', ""))
            .collect();
        if let Some(g) = GATES
            .iter()
            .find(|g| cells.get(1).map(String::as_str) == Some(**g))
        {
            let passed = !line.contains("FAIL");
            found.insert((g.to_string(), cells[2].to_string()), passed);
        }
    }
    found
}

/// The same from `--format json`: each check's (gate, phase) → passed, with exit code 1.
fn json_verdicts(out: &std::process::Output) -> BTreeMap<(String, String), bool> {
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["exit_code"], 1, "{found}");
    assert_eq!(found["passed"], false, "{found}");
    found["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let key = (
                c["gate"].as_str().unwrap().to_string(),
                c["phase"].as_str().unwrap_or("").to_string(),
            );
            (key, c["passed"].as_bool().unwrap())
        })
        .collect()
}

fn remove_runs(dir: &Path) {
    std::fs::remove_dir_all(dir.join("runs/a")).unwrap();
    std::fs::remove_dir_all(dir.join("runs/b")).unwrap();
}

#[test]
fn the_baseline_gate_gives_the_same_verdicts_with_both_run_directories_deleted() {
    let _guard = crate::common::exclusive_run_blocking();
    let dir = tempfile::tempdir().unwrap();
    for (i, location) in backends(dir.path(), "gate from the store on PostgreSQL")
        .into_iter()
        .enumerate()
    {
        let here = dir.path().join(format!("b{i}"));
        std::fs::create_dir_all(&here).unwrap();
        let store = address(&location);
        let (baselines, [a, b]) = two_runs(&here, &store);
        let before = gate(&store, &baselines);
        assert_eq!(before.status.code(), Some(1), "{}", text(&before));
        let found = verdicts(&before);
        assert_eq!(found.len(), GATES.len(), "{}", text(&before));
        assert_eq!(found.values().filter(|p| !**p).count(), 1, "{found:?}");
        // A phase of at most 2,000 records: the table `compare` prints from the files.
        let compared = servebench()
            .arg("compare")
            .args([&a, &b])
            .args(GATES.iter().flat_map(|g| ["--gate", g]))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&compared.stdout),
            String::from_utf8_lossy(&before.stdout),
            "{location}"
        );

        remove_runs(&here);
        let after = gate(&store, &baselines);
        assert_eq!(
            after.status.code(),
            before.status.code(),
            "{}",
            text(&after)
        );
        assert_eq!(verdicts(&after), found, "{location}");
        assert_eq!(after.stdout, before.stdout, "{location}: the same table");
        assert!(!text(&after).contains("cannot read"), "{}", text(&after));
        let json = history_cmd(&store)
            .args([
                "gate",
                "--plan",
                "gated",
                "--baseline",
                "release",
                "--format",
                "json",
            ])
            .arg("--baselines")
            .arg(&baselines)
            .output()
            .unwrap();
        assert_eq!(json.status.code(), Some(1), "{}", text(&json));
        assert_eq!(json_verdicts(&json), found, "{location}");
    }
}

#[test]
fn a_run_recorded_before_version_5_reads_its_file_then_its_figures_and_says_so() {
    let _guard = crate::common::exclusive_run_blocking();
    let dir = tempfile::tempdir().unwrap();
    for (i, location) in backends(dir.path(), "gate fallback on PostgreSQL")
        .into_iter()
        .enumerate()
    {
        let here = dir.path().join(format!("b{i}"));
        std::fs::create_dir_all(&here).unwrap();
        let store = address(&location);
        let (baselines, _) = two_runs(&here, &store);
        // A run recorded before version 5 has no report kept: the migration adds none.
        let base = {
            let opened = open(&location, OpenMode::Existing).unwrap();
            let runs = list_runs(&store, &[]);
            let base = runs
                .iter()
                .min_by_key(|r| r["started_at"].as_str().unwrap().to_string())
                .unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string();
            opened
                .driver()
                .execute(
                    "DELETE FROM kept_reports WHERE run = $1",
                    &[Cell::from(&base)],
                )
                .unwrap();
            assert_eq!(opened.kept_report(&base).unwrap(), None);
            base
        };
        let from_file = gate(&store, &baselines);
        assert_eq!(from_file.status.code(), Some(1), "{}", text(&from_file));
        let said = String::from_utf8_lossy(&from_file.stderr).to_string();
        assert!(
            said.contains(&format!(
                "run {base} was recorded before schema v5: read from its report file"
            )),
            "{said}"
        );
        remove_runs(&here);
        let from_figures = gate(&store, &baselines);
        assert_eq!(from_figures.status.code(), from_file.status.code());
        assert_eq!(verdicts(&from_figures), verdicts(&from_file), "{location}");
        let said = String::from_utf8_lossy(&from_figures.stderr).to_string();
        assert!(
            said.contains(&format!(
                "run {base} was recorded before schema v5 and its report file is gone"
            )),
            "{said}"
        );
    }
}

/// The client's load with `late` of 84 ticks late.
fn load(late: u32) -> ClientLoad {
    ClientLoad {
        wall_s: 0.84,
        ticks: 84,
        late_wake_share: Some(f64::from(late) / 84.0),
        ..ClientLoad::default()
    }
}

#[test]
fn a_client_bound_run_is_left_out_only_when_its_late_band_is_wide() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(judge(load(3), None).verdict, TrustVerdict::Trusted);
    assert_eq!(judge(load(30), None).verdict, TrustVerdict::ClientBound);
    for location in backends(dir.path(), "late bands on PostgreSQL") {
        let mut store = open(&location, OpenMode::Create).unwrap();
        for n in 0..8 {
            let value = 1.0 + 0.001 * (n % 3) as f64;
            let phases = [("c4".to_string(), vec![("ttft.p99".to_string(), value)])];
            let mut rows = synthetic::run_rows("busy", n, serde_json::json!({}), &phases);
            // Runs 2 and 5 late 30 of 84 ticks with a band of ±0.2% (in), run 6 with ±5%
            // (out); the rest 3 of 84 (trusted, whatever their band).
            let (late, spread) = match n {
                2 | 5 => (30, 0.002),
                6 => (30, 0.05),
                _ => (3, 0.05),
            };
            let trust = judge(load(late), None);
            rows.phases[0].trust = Some(trust.verdict);
            rows.phases[0].conditions.late_share = trust.load.late_wake_share;
            let band = (value * (1.0 - spread), value * (1.0 + spread));
            let bands = vec![BTreeMap::from([("ttft.p99".to_string(), band)])];
            store
                .record_kept(
                    &rows,
                    &Kept {
                        report: None,
                        bands,
                    },
                )
                .unwrap();
        }
        let key = SeriesKey {
            plan: "busy".into(),
            phase: "c4".into(),
            target: "default".into(),
            figure: "ttft.p99".into(),
        };
        let points = store.series(&key).unwrap();
        assert_eq!(points[6].conditions.late_share, Some(30.0 / 84.0));
        assert!(points[6].late_band.is_some(), "{location}");
        drop(store);
        let out = history_cmd(&address(&location))
            .args(["gate", "--plan", "busy"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("left out: 1 client-bound"),
            "{location}: {stdout}"
        );
    }
}

#[test]
fn a_version_4_store_migrates_and_keeps_reports_from_then_on() {
    let dir = tempfile::tempdir().unwrap();
    for location in backends(dir.path(), "version 5 migration on PostgreSQL") {
        let sample = super::support::rich_sample();
        let report = super::support::report(&sample);
        let mut old =
            servebench::history::store::open_at_version(&location, OpenMode::Create, 4).unwrap();
        let before = old.record(&report, None).unwrap();
        drop(old);
        let mut store = open(&location, OpenMode::Existing).unwrap();
        assert_eq!(servebench::history::store::schema::SCHEMA_VERSION, 6);
        assert_eq!(store.kept_report(&before).unwrap(), None, "{location}");
        assert_eq!(
            store.run(&before).unwrap().rows.phases.len(),
            report.phases.len()
        );
        let mut doc = sample.clone();
        doc["run_id"] = serde_json::json!("after-v5");
        // Started a day before the first, so retention of the newest one drops it.
        doc["started_at"] = serde_json::json!("2026-11-29T10:00:00Z");
        doc["finished_at"] = serde_json::json!("2026-11-29T10:30:00Z");
        let after = store.record(&super::support::report(&doc), None).unwrap();
        let kept = store.kept_report(&after).unwrap().expect("kept at v5");
        let back: servebench::report::Report = serde_json::from_str(&kept).unwrap();
        assert_eq!(back.phases.len(), report.phases.len());
        if let Location::Sqlite(_) = location {
            // Retention takes the kept report with its run.
            let gone = store
                .retain(&servebench::history::store::Retention {
                    keep_last: Some(1),
                    ..Default::default()
                })
                .unwrap();
            assert_eq!(gone, [after]);
            let left = store
                .driver()
                .query("SELECT COUNT(*) FROM kept_reports", &[])
                .unwrap();
            assert_eq!(left[0][0].int(), Some(0));
        }
    }
}

#[test]
fn a_version_5_store_s_reports_are_kept_compressed_and_read_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    for location in backends(dir.path(), "version 6 migration on PostgreSQL") {
        let report = super::support::report(&super::support::rich_sample());
        let json = servebench::history::kept::kept(&report).report.unwrap();
        let mut old =
            servebench::history::store::open_at_version(&location, OpenMode::Create, 5).unwrap();
        let id = old.record(&report, None).unwrap();
        // What a version 5 build kept beside the run: its report as JSON text.
        old.driver()
            .execute(
                "INSERT INTO reports (run, report) VALUES ($1, $2)",
                &[Cell::from(&id), Cell::from(&json)],
            )
            .unwrap();
        drop(old);
        let store = open(&location, OpenMode::Existing).unwrap();
        assert_eq!(
            store.kept_report(&id).unwrap().as_deref(),
            Some(json.as_str())
        );
        let stored = store
            .driver()
            .query("SELECT encoding, report FROM kept_reports", &[])
            .unwrap();
        assert_eq!(stored.len(), 1, "{location}");
        assert_eq!(stored[0][0].text(), Some("gzip"));
        let bytes = stored[0][1].bytes().expect("bytes").len();
        assert!(
            bytes * 4 < json.len(),
            "{location}: {bytes} of {}",
            json.len()
        );
        // The version 5 table is gone, its rows moved.
        assert!(
            store
                .driver()
                .query("SELECT COUNT(*) FROM reports", &[])
                .is_err(),
            "{location}"
        );
        // A run recorded now is kept compressed too, and reads back as it was kept.
        let mut store = store;
        let mut doc = super::support::rich_sample();
        doc["run_id"] = serde_json::json!("after-v6");
        let after = super::support::report(&doc);
        let id = store.record(&after, None).unwrap();
        assert_eq!(
            store.kept_report(&id).unwrap(),
            servebench::history::kept::kept(&after).report,
            "{location}"
        );
        // Bytes that are not what the store wrote are a damaged store, not a report.
        store
            .driver()
            .execute(
                "UPDATE kept_reports SET report = $1 WHERE run = $2",
                &[Cell::from(b"{\"phases\": []}".to_vec()), Cell::from(&id)],
            )
            .unwrap();
        let damaged = store.kept_report(&id).unwrap_err();
        assert!(
            matches!(damaged, servebench::history::HistoryError::Corrupt { .. }),
            "{location}: {damaged}"
        );
    }
}
