//! The results history's trends: the detection rates the noise model promises, over seeded
//! synthetic series recorded run by run into a store.

use servebench::history::synthetic::{Shape, replay};
use servebench::history::trend::Settings;

const STEP: Shape = Shape {
    runs: 30,
    level: 0.8,
    noise: 0.05,
    step: Some((20, 0.15)),
};

const FLAT: Shape = Shape { step: None, ..STEP };

/// Seeds 1–200: the same ones BENCHMARKS.md reports.
const SEEDS: std::ops::RangeInclusive<u64> = 1..=200;

#[test]
fn a_15_percent_step_opens_an_alert_by_run_23_and_none_before_run_20_in_190_of_200_series() {
    let settings = Settings::default();
    let (mut good, mut placed, mut near) = (0, 0, 0);
    for seed in SEEDS {
        let alerts = replay(&STEP, seed, &settings, None);
        let early = alerts.iter().any(|a| a.opened_by < 20);
        let timely = alerts
            .iter()
            .any(|a| (20..=23).contains(&a.opened_by) && (17..=21).contains(&a.change_at));
        if timely && !early {
            good += 1;
        }
        // Where the alert stands at run 30: at the step's first run, or one run off where
        // run 19 or 20 lies past the midpoint of the two levels (1.5 noise deviations).
        if !early && alerts.iter().any(|a| a.change_at == 20) {
            placed += 1;
        }
        if !early && alerts.iter().any(|a| a.change_at.abs_diff(20) <= 1) {
            near += 1;
        }
    }
    // The goal, 95%: these settings reach 190 (see BENCHMARKS.md).
    assert!(
        good >= 190,
        "{good} of 200 seeds opened an alert by run 23 and none before 20"
    );
    // Least squares places a 3-sigma step exactly in about 80% of series: a run either side
    // past the levels' midpoint (6.7% each) moves it one run.
    assert!(
        placed >= 150 && near >= good,
        "{placed} of 200 alerts at run 20 and {near} within a run of it; {good} found"
    );
}

#[test]
fn noise_alone_raises_an_alert_in_at_most_2_percent_of_series() {
    let settings = Settings::default();
    let raised = SEEDS
        .filter(|&seed| !replay(&FLAT, seed, &settings, None).is_empty())
        .count();
    assert!(
        raised <= 4,
        "{raised} of 200 noise-only series raised an alert"
    );
}

#[test]
fn a_client_bound_run_in_the_middle_changes_nothing() {
    let settings = Settings::default();
    for seed in 1..=40 {
        for shape in [STEP, FLAT] {
            assert_eq!(
                replay(&shape, seed, &settings, Some(12)),
                replay(&shape, seed, &settings, None),
                "seed {seed}"
            );
        }
    }
}

// ------------------------------------------------------------------ the trend report and CLI

use std::path::Path;
use std::process::Command;

use servebench::history::render::{MARKDOWN_LIMIT, TrendReport, html, markdown};
use servebench::history::store::{RunFilter, Store};
use servebench::history::synthetic;
use servebench::history::trend::provenance_changes;
use servebench::history::{AlertState, Location, OpenMode, open};

/// The figures a phase's series cover in these tests.
pub(super) const FIGURES: [&str; 16] = [
    "requests",
    "errors",
    "error_rate",
    "output_tokens_per_second",
    "request_rate",
    "inputs_per_second",
    "ttft.p50",
    "ttft.p95",
    "ttft.p99",
    "tpot.p50",
    "tpot.p95",
    "tpot.p99",
    "e2e.p50",
    "e2e.p95",
    "e2e.p99",
    "cached_token_ratio",
];

/// Markdown and HTML of a synthetic store of `phases` phases and `runs` runs.
pub(super) fn rendered(runs: usize, phases: usize) -> (String, String) {
    let mut store = synthetic::store("nightly", runs, phases, &FIGURES);
    let settings = Settings::default();
    render_store(&mut store, &settings)
}

/// Markdown and HTML of the `nightly` plan in `store`.
pub(super) fn render_store(store: &mut dyn Store, settings: &Settings) -> (String, String) {
    let updated = servebench::history::update(store, None, Some(settings)).unwrap();
    let runs = store.runs(&RunFilter::default()).unwrap();
    let provenance = provenance_changes(&runs);
    let report = TrendReport {
        plan: Some("nightly"),
        trends: &updated.trends,
        alerts: &updated.alerts,
        provenance: &provenance,
        settings,
        watched: &updated.watched,
    };
    (markdown(&report), html(&report))
}

#[test]
fn markdown_for_a_20_phase_plan_fits_a_pr_comment() {
    let (md, _) = rendered(40, 20);
    let chars = md.chars().count();
    assert!(chars < MARKDOWN_LIMIT, "{chars} characters");
    assert!(md.contains("## Alerts"), "{md}");
    assert!(
        md.contains("| **open** | regression in phase-00, phase-03, phase-06, phase-09,"),
        "{md}"
    );
    // Markdown text escapes underscores, so the name reads as written once rendered.
    assert!(md.contains("engine\\_version: 0.9.1 → 0.9.2"), "{md}");
    assert!(md.contains("## phase-19 → default"), "every phase is there");
    // Charts are the HTML page's; the PR comment has none.
    assert!(!md.contains("<svg"), "{md}");
}

pub(super) fn history_cmd(store: &str) -> Command {
    let mut cmd = super::support::servebench();
    cmd.arg("history").arg("--history").arg(store);
    cmd
}

/// The store's address as `--history` takes it.
pub(super) fn address(location: &Location) -> String {
    match location {
        Location::Sqlite(path) => path.display().to_string(),
        Location::Postgres(url) => url.clone(),
    }
}

/// A fresh store per backend holding the synthetic `runs` of a one-phase plan `nightly`.
pub(super) fn recorded(dir: &Path, what: &str, runs: usize) -> Vec<Location> {
    let backends = super::support::backends(dir, what);
    for location in &backends {
        let mut store = open(location, OpenMode::Create).unwrap();
        for rows in synthetic::runs("nightly", runs, 1, &["ttft.p99"]) {
            store.record_rows(&rows).unwrap();
        }
    }
    backends
}

#[test]
fn the_gate_fails_while_an_alert_is_open_and_passes_once_it_is_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    for location in recorded(dir.path(), "the gate on PostgreSQL", 30) {
        let path = address(&location);
        let gate = history_cmd(&path)
            .args(["gate", "--plan", "nightly"])
            .output()
            .unwrap();
        assert_eq!(
            gate.status.code(),
            Some(servebench::exit::Exit::AlertOpen.code()),
            "{location}: {}{}",
            String::from_utf8_lossy(&gate.stdout),
            String::from_utf8_lossy(&gate.stderr)
        );
        let trend = history_cmd(&path)
            .args(["trend", "--plan", "nightly"])
            .output()
            .unwrap();
        assert!(
            trend.status.success(),
            "{location}: {}",
            String::from_utf8_lossy(&trend.stderr)
        );
        let text = String::from_utf8_lossy(&trend.stdout);
        assert!(
            text.contains("| 1 | **open** | regression in phase-00 → default at run-00"),
            "{location}: {text}"
        );
        assert!(text.contains(": ttft.p99 +"), "{location}: {text}");
        assert!(text.contains("engine\\_version: 0.9.1 → 0.9.2"), "{text}");

        let ack = history_cmd(&path)
            .args(["ack", "1", "--reason", "new tokenizer, expected"])
            .output()
            .unwrap();
        assert!(
            ack.status.success(),
            "{location}: {}",
            String::from_utf8_lossy(&ack.stderr)
        );
        let gate = history_cmd(&path)
            .args(["gate", "--plan", "nightly"])
            .output()
            .unwrap();
        assert_eq!(
            gate.status.code(),
            Some(0),
            "{location}: {}",
            String::from_utf8_lossy(&gate.stdout)
        );
        // Read back from the store itself, in this process.
        let store = open(&location, OpenMode::Existing).unwrap();
        let alerts = store.alerts(None).unwrap();
        assert_eq!(
            alerts.len(),
            1,
            "{location}: the alert is kept, not opened again: {alerts:?}"
        );
        assert_eq!(alerts[0].state, AlertState::Acknowledged);
        assert_eq!(alerts[0].note.as_deref(), Some("new tokenizer, expected"));

        let unknown = history_cmd(&path)
            .args(["ack", "9", "--reason", "x"])
            .output()
            .unwrap();
        assert_eq!(unknown.status.code(), Some(2));
    }
}

#[test]
fn the_gate_passes_a_store_whose_series_did_not_change() {
    let dir = tempfile::tempdir().unwrap();
    // Phase 1 of the synthetic plan has noise and an engine version change but no step.
    for location in super::support::backends(dir.path(), "a quiet gate on PostgreSQL") {
        let mut store = open(&location, OpenMode::Create).unwrap();
        for rows in synthetic::runs("nightly", 30, 2, &["ttft.p99"]) {
            let mut rows = rows;
            rows.phases.retain(|p| p.phase == "phase-01");
            store.record_rows(&rows).unwrap();
        }
        let gate = history_cmd(&address(&location))
            .args(["gate", "--plan", "nightly"])
            .output()
            .unwrap();
        assert_eq!(
            gate.status.code(),
            Some(0),
            "{location}: {}{}",
            String::from_utf8_lossy(&gate.stdout),
            String::from_utf8_lossy(&gate.stderr)
        );
        assert!(
            open(&location, OpenMode::Existing)
                .unwrap()
                .alerts(None)
                .unwrap()
                .is_empty()
        );
    }
}

#[test]
fn a_baseline_file_names_runs_by_id_tag_and_best_of_last() {
    let dir = tempfile::tempdir().unwrap();
    for location in recorded(dir.path(), "baselines on PostgreSQL", 13) {
        let path = address(&location);
        let tag = history_cmd(&path)
            .args(["tag", "run-0013", "v1.2"])
            .output()
            .unwrap();
        assert!(
            tag.status.success(),
            "{}",
            String::from_utf8_lossy(&tag.stderr)
        );
        let baselines = dir.path().join("baselines.yaml");
        std::fs::write(
            &baselines,
            "pinned: {run: run-0003}\nrelease: {tag: v1.2}\nbest: {best_of_last: 12, figure: ttft.p99}\nmissing: {tag: v9}\n",
        )
        .unwrap();
        let out = history_cmd(&path)
            .args(["baseline", "--plan", "nightly", "--baselines"])
            .arg(&baselines)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("pinned: run run-0003 → run-0003"), "{text}");
        assert!(
            text.contains("release: newest run tagged v1.2 → run-0013"),
            "{text}"
        );
        let values = synthetic::values(
            &synthetic::Shape {
                runs: 13,
                level: 1.0,
                noise: 0.05,
                step: Some((8, 0.15)),
            },
            0,
        );
        // The last 12 of 13 runs.
        let best = values
            .iter()
            .enumerate()
            .skip(1)
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i + 1)
            .unwrap();
        assert!(
            text.contains(&format!(
                "best: best ttft.p99 of the last 12 → run-{best:04}"
            )),
            "{location}: {text}"
        );
        assert!(
            text.contains("missing: newest run tagged v9 → error"),
            "{text}"
        );
        assert_eq!(out.status.code(), Some(2));
    }
}

#[test]
fn trend_html_shows_the_alert_and_the_provenance_change_in_headless_chromium() {
    let (_, page) = rendered(30, 2);
    assert!(page.contains("class=\"alert\""));
    assert!(page.contains("1 at run-0016: target.default.engine_version: 0.9.1 → 0.9.2"));
    let Some(browser) = crate::report::browser::chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let charts = 2 * FIGURES.len();
    let shot = crate::report::browser::check_in_browser(browser, &page, charts, dir.path());
    if let Some(keep) = std::env::var_os("SERVEBENCH_KEEP_TREND_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

/// The rates for nearby settings, for BENCHMARKS.md:
/// `cargo test --test it history::trends::rates_for_nearby_settings -- --ignored --nocapture`.
#[test]
#[ignore]
fn rates_for_nearby_settings() {
    for (max_p, newest_max_p, min_effect) in [
        (0.003, 0.0, 0.10),
        (0.001, 0.0, 0.10),
        (0.001, 0.005, 0.10),
        (0.001, 0.01, 0.10),
        (0.001, 0.02, 0.10),
        (0.002, 0.01, 0.10),
        (0.001, 0.01, 0.07),
    ] {
        let settings = Settings {
            max_p,
            newest_max_p,
            min_effect,
            ..Settings::default()
        };
        let (mut timely, mut early, mut flat) = (0, 0, 0);
        for seed in SEEDS {
            let alerts = replay(&STEP, seed, &settings, None);
            if alerts.iter().any(|a| a.opened_by < 20) {
                early += 1;
            } else if alerts
                .iter()
                .any(|a| (20..=23).contains(&a.opened_by) && (17..=21).contains(&a.change_at))
            {
                timely += 1;
            }
            if !replay(&FLAT, seed, &settings, None).is_empty() {
                flat += 1;
            }
        }
        println!(
            "max_p {max_p}, newest_max_p {newest_max_p}, min_effect {min_effect}: step series timely {timely}/200, early {early}/200; noise-only with an alert {flat}/200"
        );
    }
}
