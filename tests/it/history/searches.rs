//! Capacity searches in the history, over SQLite and PostgreSQL: each run's searches stored
//! through the schema's version 3 (an older store upgrades), listed by `history show`, in the
//! export, and each search's capacity a series whose fall (intervals apart) opens an alert
//! that fails the gate, while a lower bound changes nothing.
//!
//! The simulator's TPOT is `decode_ms_per_token + decode_ms_per_running × (running − 1)`, and
//! a closed loop of `c` workers keeps `c` requests running: with 4 + 4 × (c − 1) ms and a
//! TPOT p50 limit of 18 ms the knee is 4 (16 ms; 20 ms at 5), with 4 + 12 × (c − 1) ms it is 2
//! (16 ms; 28 ms at 3): half the capacity, same plan, same asked-for work.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use servebench::history::searches::{SearchAnswer, search_rows};
use servebench::history::store::{open_at_version, schema};
use servebench::history::{AlertState, Location, OpenMode, RunFilter, Store as _, open};
use servebench::report::Report;

use super::support::{backends, report, rich_sample, servebench, write_report};

fn plan(per_running_ms: f64) -> String {
    format!(
        "version: 1\nname: capacity-nightly\nseed: 1\ntargets:\n  sim:\n    simulator: \
         {{prefill_tok_s: 0, decode_ms_per_token: 4, decode_ms_per_running: {per_running_ms}, \
         max_running: 256}}\nworkloads:\n  w: {{input_tokens: 16, output_tokens: 8, ignore_eos: true}}\n\
         defaults: {{target: sim, workload: w}}\nphases:\n  - name: capacity\n    search: \
         {{load: concurrency, min: 1, max: 8, slo: {{tpot: {{p50: 18ms}}}}, \
         probe: {{duration: 3s, warmup: {{requests: 6}}}}}}\n"
    )
}

fn address(location: &Location) -> String {
    match location {
        Location::Sqlite(path) => path.display().to_string(),
        Location::Postgres(url) => url.clone(),
    }
}

fn history(location: &str, args: &[&str]) -> Output {
    servebench()
        .args(["history", "--history", location])
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Record `path` into the store; the id the store gave it.
fn record(location: &str, path: &Path) -> String {
    let out = servebench()
        .args(["history", "record", "--history", location])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn gate(location: &str) -> Output {
    history(location, &["gate", "--plan", "capacity-nightly"])
}

/// Run the plan until its search answers (a busy machine can leave one a lower bound); every
/// report, in order, the answered one last.
async fn run_until_answered(dir: &Path, name: &str, per_running_ms: f64) -> Vec<(PathBuf, Report)> {
    let mut runs = Vec::new();
    for attempt in 0..6 {
        let run_dir = dir.join(format!("{name}-{attempt}"));
        let report = crate::common::run_plan_text(&run_dir, &plan(per_running_ms)).await;
        let answered = SearchAnswer::of(&report.searches[0]) == SearchAnswer::Answer;
        runs.push((run_dir.join("out/report.json"), report));
        if answered {
            return runs;
        }
    }
    panic!(
        "{name}: no search answered in six runs: {:#?}",
        runs.last().map(|r| &r.1.searches)
    );
}

/// A copy of `base` whose search gave only a lower bound at `capacity`, started at `at`.
fn lower_bound_copy(dir: &Path, name: &str, base: &Path, capacity: f64, at: &str) -> PathBuf {
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(base).unwrap()).unwrap();
    doc["started_at"] = json!(at);
    doc["finished_at"] = json!(at);
    doc["searches"][0]["lower_bound"] = json!(true);
    doc["searches"][0]["capacity"] = json!(capacity);
    doc["searches"][0]["capacity_interval"] = json!([capacity, null]);
    doc["searches"][0]["bracket"] = json!([capacity, null]);
    doc["searches"][0]["stop_reason"] = json!("stopped: client-bound at concurrency 8");
    write_report(dir, name, &doc, name)
}

/// The store's alerts, read off the async test's worker (the PostgreSQL client blocks).
fn open_alerts(location: &Location) -> Vec<servebench::history::Alert> {
    tokio::task::block_in_place(|| {
        open(location, OpenMode::Existing)
            .unwrap()
            .alerts(None)
            .unwrap()
    })
}

/// RFC 3339 `at` plus `ms` milliseconds.
fn later(at: &str, ms: i64) -> String {
    (chrono::DateTime::parse_from_rfc3339(at).unwrap() + chrono::Duration::milliseconds(ms))
        .to_rfc3339()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capacity_that_halves_opens_an_alert_and_a_lower_bound_changes_nothing() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let mut normal = Vec::new();
    for n in 0..3 {
        normal.extend(run_until_answered(dir.path(), &format!("normal-{n}"), 4.0).await);
    }
    let half = run_until_answered(dir.path(), "half", 12.0).await;
    let answered = |runs: &[(PathBuf, Report)]| -> Vec<f64> {
        runs.iter()
            .map(|(_, r)| &r.searches[0])
            .filter(|s| SearchAnswer::of(s) == SearchAnswer::Answer)
            .filter_map(|s| s.capacity)
            .collect()
    };
    assert_eq!(answered(&normal), [4.0; 3], "the knee at 4");
    assert_eq!(answered(&half), [2.0], "half the capacity");
    let (half_path, half_report) = half.last().unwrap();
    assert_eq!(
        half_report.searches[0].capacity_interval,
        [Some(2.0), Some(3.0)]
    );
    // The asked-for work is the same: the fall stays in the series' segment.
    let rows = |r: &Report| search_rows(r).remove(0);
    assert_eq!(
        rows(&normal[0].1).work_sha256,
        rows(half_report).work_sha256
    );
    assert!(rows(half_report).work_sha256.is_some());

    // A lower bound far below, just after the last normal run started (times are to the
    // second, so the half run may share its finish's second): it opens nothing.
    let (last_normal, last_report) = normal.last().unwrap();
    let low = lower_bound_copy(
        dir.path(),
        "low-bound",
        last_normal,
        1.0,
        &later(&last_report.span.started_at, 1),
    );
    // A lower bound far above, after the half run: it resolves nothing.
    let high = lower_bound_copy(
        dir.path(),
        "high-bound",
        last_normal,
        8.0,
        &later(half_report.span.finished_at.as_deref().unwrap(), 1),
    );

    // Creating a fresh PostgreSQL database blocks: off the async test's worker.
    let locations =
        tokio::task::block_in_place(|| backends(dir.path(), "capacity searches on PostgreSQL"));
    for location in locations {
        let store = address(&location);
        let ids: Vec<String> = normal.iter().map(|(p, _)| record(&store, p)).collect();
        record(&store, &low);
        let out = gate(&store);
        assert_eq!(out.status.code(), Some(0), "{location}: {}", text(&out));

        let half_id = record(&store, half_path);
        let out = gate(&store);
        assert_eq!(
            out.status.code(),
            Some(servebench::exit::Exit::AlertOpen.code()),
            "{location}: {}",
            text(&out)
        );
        assert!(
            text(&out).contains("regression in capacity → sim at ")
                && text(&out).contains(": capacity −50.0% (opened by"),
            "{location}: {}",
            text(&out)
        );
        let alerts = open_alerts(&location);
        assert_eq!(alerts.len(), 1, "{location}: {alerts:?}");
        assert_eq!(alerts[0].moved.len(), 1, "{location}: {alerts:?}");
        assert_eq!(alerts[0].moved[0].figure, "capacity");
        assert_eq!(alerts[0].moved[0].phase, "capacity");
        assert_eq!(alerts[0].opened_by, half_id);
        assert_eq!(alerts[0].state, AlertState::Open);

        // The trend report shows the series with its intervals and the alert.
        let trend = history(&store, &["trend", "--plan", "capacity-nightly"]);
        let md = text(&trend);
        assert!(trend.status.success(), "{md}");
        assert!(
            md.contains("| 1 | **open** | regression in capacity → sim at "),
            "{md}"
        );
        assert!(
            md.contains("interval \\[2, 3\\] apart from the level's \\[4, 5\\]"),
            "{md}"
        );
        let html_path = dir.path().join("trend.html");
        let out = servebench()
            .args([
                "history",
                "--history",
                &store,
                "trend",
                "--plan",
                "capacity-nightly",
            ])
            .args(["--format", "html", "-o"])
            .arg(&html_path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let html = std::fs::read_to_string(&html_path).unwrap();
        assert!(
            html.contains("class=\"lower-bound\""),
            "the lower bound is drawn, marked"
        );
        assert!(html.contains("class=\"alert\""));

        // Against the first run as a baseline, the capacity fell: the gate fails.
        let baselines = dir.path().join("baselines.yaml");
        // The first normal run that answered (a retry's lower bound is not comparable).
        let first = normal
            .iter()
            .position(|(_, r)| SearchAnswer::of(&r.searches[0]) == SearchAnswer::Answer)
            .unwrap();
        std::fs::write(&baselines, format!("first: {{run: {}}}\n", ids[first])).unwrap();
        let out = servebench()
            .args([
                "history",
                "--history",
                &store,
                "gate",
                "--plan",
                "capacity-nightly",
            ])
            .args(["--baseline", "first", "--baselines"])
            .arg(&baselines)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(servebench::exit::Exit::GateFailed.code()),
            "{location}: {}",
            text(&out)
        );
        assert!(
            text(&out).contains("capacity of search `capacity` fell"),
            "{}",
            text(&out)
        );

        // A lower bound above the old level resolves nothing.
        record(&store, &high);
        let out = gate(&store);
        assert_eq!(
            out.status.code(),
            Some(servebench::exit::Exit::AlertOpen.code())
        );
        let after = open_alerts(&location);
        assert_eq!(after, alerts, "{location}");

        // The series lists every capacity, lower bounds marked.
        let series = history(
            &store,
            &[
                "series",
                "--plan",
                "capacity-nightly",
                "--phase",
                "capacity",
                "--target",
                "sim",
                "--figure",
                "capacity",
                "--format",
                "json",
            ],
        );
        assert!(series.status.success(), "{}", text(&series));
        let doc: Value = serde_json::from_slice(&series.stdout).unwrap();
        let points = doc["points"].as_array().unwrap();
        // Every normal run, the half run that answered, and the two lower-bound copies.
        let recorded = normal.len() + 3;
        let answers = points.iter().filter(|p| p["search"] == "answer").count();
        let bounds = points
            .iter()
            .filter(|p| p["search"] == "lower_bound")
            .count();
        assert_eq!(answers, 4, "{doc:#}");
        assert!(bounds >= 2 && points.len() <= recorded, "{doc:#}");
        let last = points.last().unwrap();
        assert_eq!(
            (last["value"].as_f64(), &last["search"]),
            (Some(8.0), &json!("lower_bound"))
        );

        // `history show` lists the run's search; the export holds every one.
        let show = history(&store, &["show", &half_id]);
        let shown = text(&show);
        assert!(shown.contains("## Capacity searches"), "{shown}");
        assert!(
            shown.contains(
                "| capacity | sim | concurrency | 2 | \\[2, 3\\] | answer | precision reached \
                 | tpot.p50 ≤ 0.018 s |"
            ),
            "{shown}"
        );
        let export = dir.path().join(format!("export-{}", ids.len()));
        let out = history(
            &store,
            &["export", export.to_str().unwrap(), "--format", "csv"],
        );
        assert!(out.status.success(), "{}", text(&out));
        let csv = std::fs::read_to_string(export.join("searches.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + recorded, "{csv}");
        assert!(
            csv.lines()
                .next()
                .unwrap()
                .contains("interval_lo,interval_hi"),
            "{csv}"
        );
        std::fs::remove_dir_all(&export).unwrap();
    }
}

/// The sample report with one capacity search.
fn with_search() -> Value {
    let mut doc = rich_sample();
    doc["searches"] = json!([{
        "phase": "capacity", "load": "rate", "capacity": 12.5, "capacity_interval": [12.5, 13.1],
        "goodput": 11.0, "bracket": [12.5, 13.1], "stop_reason": "precision reached",
        "probes": []
    }]);
    doc
}

#[test]
fn a_version_2_store_upgrades_and_then_keeps_searches() {
    let dir = tempfile::tempdir().unwrap();
    for location in backends(dir.path(), "search migration on PostgreSQL") {
        let mut old = open_at_version(&location, OpenMode::Create, 2).unwrap();
        let before = old.record(&report(&rich_sample()), None).unwrap();
        drop(old);
        let mut store = open(&location, OpenMode::Existing).unwrap();
        assert_eq!(schema::SCHEMA_VERSION, 6);
        let kept = store.run(&before).unwrap();
        assert!(kept.rows.searches.is_empty(), "{location}");
        assert_eq!(store.runs(&RunFilter::default()).unwrap().len(), 1);

        let mut doc = with_search();
        doc["run_id"] = json!("with-search");
        let with = report(&doc);
        let id = store.record(&with, None).unwrap();
        let read = store.run(&id).unwrap();
        assert_eq!(read.rows.searches, search_rows(&with), "{location}");
        assert_eq!(read.rows.searches[0].interval, [Some(12.5), Some(13.1)]);
        assert_eq!(read.rows.searches[0].answer, SearchAnswer::Answer);
        let keys = store.keys(Some(&with.plan.name)).unwrap();
        assert!(
            keys.iter()
                .any(|k| k.figure == "capacity" && k.phase == "capacity"),
            "{keys:?}"
        );
        // Retention takes a run's searches with it.
        store
            .retain(&servebench::history::store::Retention {
                keep_last: Some(0),
                ..Default::default()
            })
            .unwrap();
        let tables = store.tables().unwrap();
        let searches = tables.iter().find(|t| t.name == "searches").unwrap();
        assert!(searches.rows.is_empty(), "{location}");
    }
}
