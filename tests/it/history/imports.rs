//! Imports: the seeds' formats, AIPerf's JSON export and vLLM's bench serve result (fixtures
//! written from their documented fields), each joining a servebench series by an explicit
//! mapping and compared with a servebench run of the same workload on the figures both
//! define.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use servebench::history::{Location, OpenMode, SeriesKey, Store, open};

use super::support::servebench;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The same workload the peers' fixtures describe: 512 tokens in, 128 out, 4 at a time.
const PLAN: &str = "\
version: 1
name: nightly
targets:
  sim: {simulator: {decode_ms_per_token: 6, prefill_tok_s: 20000}}
workloads:
  chat: {input_tokens: 512, output_tokens: 128, ignore_eos: true}
defaults: {target: sim, workload: chat}
phases:
  - {name: c4, concurrency: 4, duration: 2s}
";

fn import(history: &Path, file: &Path, mapping: &[&str]) -> std::process::Output {
    servebench()
        .args(["history", "import", "--history"])
        .arg(history)
        .arg(file)
        .args(mapping)
        .output()
        .unwrap()
}

#[test]
fn peer_results_join_a_series_by_mapping_and_compare_on_shared_figures() {
    let _guard = crate::common::exclusive_run_blocking();
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.sqlite");
    let plan = dir.path().join("nightly.yaml");
    std::fs::write(&plan, PLAN).unwrap();
    let run = servebench()
        .args([
            "run",
            "--quiet",
            "--no-calibrate",
            "--no-latency-hint",
            "--history",
        ])
        .arg(&history)
        .arg("--out")
        .arg(dir.path().join("run"))
        .arg(&plan)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    let mapping = ["--plan", "nightly", "--phase", "c4", "--target", "sim"];
    for file in [
        "history/profile_export_aiperf.json",
        "history/vllm-bench-serve.json",
    ] {
        // No mapping: refused, nothing stored.
        let out = import(&history, &fixture(file), &[]);
        assert_eq!(out.status.code(), Some(2), "{file}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--plan, --phase and --target"));
        let out = import(&history, &fixture(file), &mapping);
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Importing the same file again finds it.
        let again = import(&history, &fixture(file), &mapping);
        assert_eq!(again.stdout, out.stdout, "{file}");
    }

    let store = open(&Location::Sqlite(history), OpenMode::Existing).unwrap();
    let runs = store.runs(&Default::default()).unwrap();
    assert_eq!(runs.len(), 3);
    let by_source = |name: &str| {
        let summary = runs.iter().find(|r| r.source.name() == name).unwrap();
        store.run(&summary.id).unwrap()
    };
    let ours = by_source("servebench");
    let figures = |run: &servebench::history::store::StoredRun| -> BTreeSet<String> {
        run.rows.phases[0]
            .figures
            .iter()
            .map(|f| f.figure.clone())
            .collect()
    };
    let mine = figures(&ours);
    for peer in ["aiperf", "vllm_bench_serve"] {
        let theirs = by_source(peer);
        assert_eq!(theirs.rows.run.plan, "nightly");
        let shared: BTreeSet<String> = mine.intersection(&figures(&theirs)).cloned().collect();
        for must in [
            "ttft.p50",
            "ttft.p99",
            "ttft.mean",
            "tpot.p50",
            "tpot.p99",
            "e2e.p50",
            "e2e.p99",
            "output_tokens_per_second",
            "request_rate",
            "requests",
            "errors",
            "error_rate",
        ] {
            assert!(
                shared.contains(must),
                "{peer}: {must} not shared: {shared:?}"
            );
        }
        // What only servebench measures stays out of the comparison.
        assert!(!shared.contains("time_to_first_output.p50"), "{peer}");
        assert!(!shared.iter().any(|f| f.contains("itl")), "{peer}");
        // Each figure whose definition differs keeps its note; e2e is the same everywhere.
        let rows = &theirs.rows.phases[0].figures;
        let note = |name: &str| rows.iter().find(|f| f.figure == name).unwrap().note.clone();
        assert!(
            note("ttft.p99").is_some_and(|n| n.contains("reasoning")),
            "{peer}"
        );
        assert_eq!(note("e2e.p99"), None, "{peer}");
        assert!(note("output_tokens_per_second").is_some(), "{peer}");
    }
    // Units: the peers' milliseconds became seconds, as servebench's ttft is.
    let vllm = by_source("vllm_bench_serve");
    let value = |name: &str| {
        vllm.rows.phases[0]
            .figures
            .iter()
            .find(|f| f.figure == name)
            .unwrap()
            .value
    };
    assert_eq!(value("ttft.p50"), 38.75e-3);
    assert_eq!(value("requests"), 200.0);
    assert_eq!(value("error_rate"), 0.01);
    assert_eq!(vllm.rows.run.started_at, "2026-12-01T09:30:00.000Z");
    let aiperf = by_source("aiperf");
    assert_eq!(aiperf.rows.phases[0].requests, 203);
    assert_eq!(aiperf.rows.phases[0].errors_by_cause[0].status, Some(503));
    assert_eq!(aiperf.rows.phases[0].concurrency, Some(4));

    // One series holds all three, oldest first.
    let key = SeriesKey {
        plan: "nightly".into(),
        phase: "c4".into(),
        target: "sim".into(),
        figure: "ttft.p99".into(),
    };
    let points = store.series(&key).unwrap();
    assert_eq!(points.len(), 3);
    assert_eq!(
        points.last().unwrap().run,
        ours.summary.id,
        "the servebench run is the newest"
    );
    assert!(points.iter().all(|p| p.value > 0.0 && p.value < 1.0));
}

#[test]
fn the_seeds_import_under_their_own_names_or_a_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.sqlite");
    let single = fixture("seeds/000_adbc5efdce65c6e3.txt");
    let gateway = fixture("seeds/004_00b102e15ffdad6e.txt");
    let out = import(
        &history,
        &single,
        &["--plan", "capacity", "--phase", "c8", "--target", "vllm"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Seed 004 states no start time: the import asks for one.
    let out = import(&history, &gateway, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--started-at"));
    let out = import(
        &history,
        &gateway,
        &["--started-at", "2026-11-02T09:00:00Z"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A many-phase report cannot be renamed to one phase.
    let out = import(
        &history,
        &gateway,
        &["--phase", "x", "--started-at", "2026-11-02T09:00:00Z"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("phases"));

    let store = open(&Location::Sqlite(history), OpenMode::Existing).unwrap();
    let runs = store.runs(&Default::default()).unwrap();
    let sources: BTreeSet<&str> = runs.iter().map(|r| r.source.name()).collect();
    assert_eq!(sources, BTreeSet::from(["anvil", "multi_phase"]));
    let anvil = runs.iter().find(|r| r.source.name() == "anvil").unwrap();
    let stored = store.run(&anvil.id).unwrap();
    assert_eq!(stored.rows.run.plan, "capacity");
    assert_eq!(stored.rows.phases[0].phase, "c8");
    assert_eq!(stored.rows.phases[0].target, "vllm");
    let gateway_run = runs
        .iter()
        .find(|r| r.source.name() == "multi_phase")
        .unwrap();
    assert_eq!(gateway_run.phases, 14);
}

#[test]
fn a_file_of_no_known_format_is_refused_with_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.json");
    std::fs::write(&file, r#"{"hello": 1}"#).unwrap();
    let out = import(&dir.path().join("h.sqlite"), &file, &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("AIPerf") && stderr.contains("vLLM"),
        "{stderr}"
    );
    assert!(!dir.path().join("h.sqlite").exists(), "nothing was stored");
}
