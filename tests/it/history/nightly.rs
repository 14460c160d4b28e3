//! The nightly workflow a team runs: a 4-phase plan recorded once a night, then a 50% TPOT
//! step (the simulator's `decode_ms_per_token` 4 → 6 ms), a 2-night blip, an ack and an
//! exclusion, the gate read from a fresh process after every night, on both backends.

use servebench::history::synthetic::{self, Shape};
use servebench::history::{AlertState, Location, OpenMode, Store, open};

use super::trends::{address, history_cmd};

const PHASES: [&str; 4] = ["c1", "c2", "c4", "c8"];
const PLAN: &str = "quickstart";

/// Each figure a phase records, with how a 50% longer decode moves it (its factor).
const FIGURES: [(&str, f64); 12] = [
    ("tpot.p50", 1.5),
    ("tpot.p95", 1.5),
    ("tpot.p99", 1.5),
    ("mean_inter_token_latency_ms.p50", 1.5),
    ("decode_tok_s.p50", 1.0 / 1.5),
    ("ttft.p50", 1.0),
    ("ttft.p99", 1.0),
    ("e2e.p50", 1.45),
    ("e2e.p99", 1.45),
    ("output_tokens_per_second", 1.0 / 1.42),
    ("request_rate", 1.0 / 1.42),
    ("error_rate", 1.0),
];

/// Night `n` (1-based) of the plan, slow or not, with the simulator's small run-to-run
/// spread (0.3%).
fn night(n: usize, slow: bool) -> servebench::history::record::RunRows {
    let phases: Vec<(String, Vec<(String, f64)>)> = PHASES
        .iter()
        .enumerate()
        .map(|(p, phase)| {
            let figures = FIGURES
                .iter()
                .enumerate()
                .map(|(f, (figure, factor))| {
                    let shape = Shape {
                        runs: n,
                        level: 4.0 + p as f64 + f as f64,
                        noise: 0.003,
                        step: None,
                    };
                    let base = if *figure == "error_rate" {
                        0.0
                    } else {
                        synthetic::values(&shape, (p * 100 + f) as u64)[n - 1]
                    };
                    let value = if slow { base * factor } else { base };
                    (figure.to_string(), value)
                })
                .collect();
            (phase.to_string(), figures)
        })
        .collect();
    let provenance = serde_json::json!({"target": {"sim": {"engine": "servebench-sim"}}});
    let mut rows = synthetic::run_rows(PLAN, n, provenance, &phases);
    for phase in &mut rows.phases {
        phase.target = "sim".into();
    }
    rows
}

struct Gate {
    code: Option<i32>,
    stdout: String,
}

fn gate(path: &str) -> Gate {
    let out = history_cmd(path)
        .args(["gate", "--plan", PLAN])
        .output()
        .unwrap();
    Gate {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

/// Record the nights `slow` describes (one entry a night) into a fresh store per backend,
/// calling `each(location, night, gate)` after every night from `check_from` on.
fn nights(
    what: &str,
    slow: &[bool],
    check_from: usize,
    mut each: impl FnMut(&Location, usize, &Gate),
) -> Vec<Location> {
    let dir = tempfile::tempdir().unwrap();
    let backends = super::support::backends(dir.path(), what);
    for location in &backends {
        let mut store = open(location, OpenMode::Create).unwrap();
        for (i, &is_slow) in slow.iter().enumerate() {
            let n = i + 1;
            store.record_rows(&night(n, is_slow)).unwrap();
            if n >= check_from {
                each(location, n, &gate(&address(location)));
            }
        }
    }
    std::mem::forget(dir);
    backends
}

fn alerts(location: &Location) -> Vec<servebench::history::Alert> {
    open(location, OpenMode::Existing)
        .unwrap()
        .alerts(Some(PLAN))
        .unwrap()
}

fn steady_then(slow: &[bool]) -> Vec<bool> {
    let mut all = vec![false; 12];
    all.extend_from_slice(slow);
    all
}

#[test]
fn a_50_percent_tpot_step_is_one_alert_at_the_first_slow_night_after_three_slow_nights() {
    nights(
        "the nightly step on PostgreSQL",
        &steady_then(&[true; 5]),
        13,
        |location, n, gate| {
            let alerts = alerts(location);
            if n < 15 {
                assert_eq!(gate.code, Some(0), "{location} night {n}: {}", gate.stdout);
                assert!(alerts.is_empty(), "{location} night {n}: {alerts:?}");
                return;
            }
            assert_eq!(gate.code, Some(5), "{location} night {n}: {}", gate.stdout);
            assert!(
                gate.stdout.lines().count() <= 20,
                "{location}: {}",
                gate.stdout
            );
            assert_eq!(alerts.len(), 1, "{location} night {n}: {alerts:#?}");
            let alert = &alerts[0];
            assert_eq!(alert.change_at, "run-0013", "{location} night {n}");
            assert_eq!(alert.opened_by, "run-0015", "{location} night {n}");
            assert_eq!(alert.phases(), PHASES.to_vec(), "{location}");
            // Watched figures only, TPOT's aliases never beside it.
            let mut figures: Vec<&str> = alert.moved.iter().map(|m| m.figure.as_str()).collect();
            figures.sort_unstable();
            figures.dedup();
            assert_eq!(
                figures,
                [
                    "e2e.p99",
                    "output_tokens_per_second",
                    "request_rate",
                    "tpot.p50",
                    "tpot.p99"
                ],
                "{location}"
            );
            // The levels are kept true as slow nights arrive: every one after the step.
            for m in alert.moved.iter().filter(|m| m.figure == "tpot.p50") {
                let ratio = m.after / m.before;
                assert!((ratio - 1.5).abs() < 0.01, "{location} night {n}: {m:?}");
                assert_eq!(m.change_at, "run-0013");
            }
            let line = gate
                .stdout
                .lines()
                .find(|l| l.starts_with("alert 1 open"))
                .unwrap_or_else(|| panic!("{}", gate.stdout));
            assert!(
                line.contains("regression in c1, c2, c4, c8 → sim at run-0013: tpot."),
                "{line}"
            );
            assert!(line.contains("tpot.p99 +50."), "{line}");
        },
    );
}

#[test]
fn a_two_night_blip_never_alerts() {
    let mut slow = steady_then(&[true, true]);
    slow.extend_from_slice(&[false; 5]);
    nights(
        "the nightly blip on PostgreSQL",
        &slow,
        12,
        |location, n, gate| {
            assert_eq!(gate.code, Some(0), "{location} night {n}: {}", gate.stdout);
            assert!(
                alerts(location).is_empty(),
                "{location} night {n}: {:?}",
                alerts(location)
            );
        },
    );
}

#[test]
fn an_ack_holds_when_the_first_slow_night_is_excluded() {
    for location in nights(
        "ack and exclusion on PostgreSQL",
        &steady_then(&[true; 4]),
        16,
        |location, _, gate| assert_eq!(gate.code, Some(5), "{location}: {}", gate.stdout),
    ) {
        let path = address(&location);
        let ack = history_cmd(&path)
            .args(["ack", "1", "--reason", "longer decode expected"])
            .output()
            .unwrap();
        assert!(ack.status.success(), "{location}");
        let exclude = history_cmd(&path)
            .args(["exclude", "run-0013", "--reason", "noisy neighbour"])
            .output()
            .unwrap();
        assert!(exclude.status.success(), "{location}");
        let after = gate(&path);
        assert_eq!(after.code, Some(0), "{location}: {}", after.stdout);
        assert!(
            after.stdout.contains("no open alerts, 1 acknowledged"),
            "{location}: {}",
            after.stdout
        );
        let kept = alerts(&location);
        assert_eq!(kept.len(), 1, "{location}: {kept:#?}");
        assert_eq!(kept[0].state, AlertState::Acknowledged);
        assert_eq!(
            kept[0].change_at, "run-0014",
            "the change moved past the exclusion"
        );
        assert_eq!(kept[0].note.as_deref(), Some("longer decode expected"));
    }
}

#[test]
fn the_html_trend_of_the_step_shows_one_alert_row_with_its_phases_and_the_change() {
    let locations = nights(
        "the nightly trend page on PostgreSQL",
        &steady_then(&[true; 3]),
        usize::MAX,
        |_, _, _| {},
    );
    for location in locations {
        // For scripts: the same alert, and each series with its unit and changes.
        let out = history_cmd(&address(&location))
            .args(["trend", "--plan", PLAN, "--format", "json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{location}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["alerts"].as_array().map(Vec::len), Some(1), "{doc}");
        assert_eq!(doc["alerts"][0]["change_at"], "run-0013");
        let c1_tpot = doc["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"]["phase"] == "c1" && s["key"]["figure"] == "tpot.p50")
            .unwrap();
        assert_eq!(c1_tpot["unit"], "s");
        assert_eq!(c1_tpot["alert"], 1);
        assert_eq!(c1_tpot["changes"][0]["run"], "run-0013");
        assert_eq!(c1_tpot["changes"][0]["verdict"], "regression");
        let out = history_cmd(&address(&location))
            .args(["trend", "--plan", PLAN, "--format", "html"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{location}");
        let page = String::from_utf8_lossy(&out.stdout);
        // One row in the alerts table: its state cell.
        assert_eq!(
            page.matches("<td class=\"bad\">open</td>").count(),
            1,
            "{location}"
        );
        assert!(
            page.contains("regression in c1, c2, c4, c8 → sim at run-0013"),
            "{location}"
        );
        // The change point drawn on the chart of c1's tpot.p50 is at the first slow night.
        let chart = page
            .split("<svg")
            .find(|svg| svg.contains("c1 → sim · tpot.p50"))
            .unwrap_or_default();
        assert!(
            chart.contains("class=\"change\"><title>regression") && chart.contains("at run-0013"),
            "{location}: {chart}"
        );
    }
}

// ------------------------------------------------------------ the simulator behind a URL

/// The quickstart plan's simulator as `servebench sim` serves it, with `decode_ms_per_token`.
fn sim_config(dir: &std::path::Path, decode_ms: u32) -> std::path::PathBuf {
    let path = dir.join(format!("sim-{decode_ms}.yaml"));
    std::fs::write(
        &path,
        format!(
            "seed: 7\nmax_running: 16\nprefill_tok_s: 20000\ndecode_ms_per_token: {decode_ms}\n\
             decode_ms_per_running: 0.2\nchunk_tokens: 1\njitter: 0.05\n\
             prefix_cache: {{capacity_tokens: 200000}}\n"
        ),
    )
    .unwrap();
    path
}

/// `servebench sim` on a free loopback port, answering `/health`.
async fn serve_sim(config: &std::path::Path) -> (crate::real_support::ChildProcess, u16) {
    let port = crate::real_support::free_port();
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("servebench"));
    command
        .args(["sim", "--port", &port.to_string(), "--config"])
        .arg(config);
    let mut sim = crate::real_support::ChildProcess::spawn("servebench sim", command, false);
    sim.wait_healthy(&format!("http://127.0.0.1:{port}/health"))
        .await;
    (sim, port)
}

/// The quickstart plan run against the simulator at `port` (phases of 500 ms), recorded
/// into `store` as a nightly job records it.
fn nightly_run(dir: &std::path::Path, store: &str, port: u16, n: usize) {
    let out = super::support::servebench()
        .args(["run", "plans/quickstart.yaml", "-q", "--no-calibrate"])
        .args(["--set", "duration=500ms", "--history", store])
        .arg("--target")
        .arg(format!("sim=http://127.0.0.1:{port}/v1"))
        .arg("-o")
        .arg(dir.join(format!("night-{n:02}")))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "night {n}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Per phase of the quickstart plan, the runs (from `from` on, by id) its TPOT series keeps
/// for detection: complete and trusted.
fn kept_slow_runs(store: &str, from: &str) -> Vec<(&'static str, Vec<String>)> {
    let store = open(&Location::Sqlite(store.into()), OpenMode::Existing).unwrap();
    ["c1", "c1-recheck", "c8", "rate-20"]
        .into_iter()
        .map(|phase| {
            let series = store
                .series(&servebench::history::SeriesKey {
                    plan: PLAN.into(),
                    phase: phase.into(),
                    target: "sim".into(),
                    figure: "tpot.p50".into(),
                })
                .unwrap();
            let start = series
                .iter()
                .position(|p| p.run == from)
                .unwrap_or(series.len());
            let kept = series[start..]
                .iter()
                .filter(|p| servebench::history::trend::eligible(p))
                .map(|p| p.run.clone())
                .collect();
            (phase, kept)
        })
        .collect()
}

/// The id of the newest run in `store`.
fn newest_run(store: &str) -> String {
    let mut runs = open(&Location::Sqlite(store.into()), OpenMode::Existing)
        .unwrap()
        .runs(&servebench::history::RunFilter::default())
        .unwrap();
    runs.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    runs.last().map(|r| r.id.clone()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_quickstart_plan_run_nightly_against_a_slower_simulator_raises_one_alert() {
    let _alone = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs/history.sqlite").display().to_string();
    let (sim, port) = serve_sim(&sim_config(dir.path(), 4)).await;
    // Six steady nights: the full test sees a step of the simulator's size against them
    // (twelve, as a team would have, cost a minute more and test nothing more here).
    for n in 1..=6 {
        tokio::task::block_in_place(|| nightly_run(dir.path(), &store, port, n));
    }
    drop(sim);
    // Another simulator with a 50% longer decode: the plan is unchanged.
    let (_slow, port) = serve_sim(&sim_config(dir.path(), 6)).await;
    // A busy machine may leave a phase's run out as client-bound: what each phase should show
    // is judged from the runs its own series kept.
    let mut first_slow = String::new();
    let mut ready: Vec<&str> = Vec::new();
    for n in 7..=10 {
        tokio::task::block_in_place(|| nightly_run(dir.path(), &store, port, n));
        if n == 7 {
            first_slow = newest_run(&store);
        }
        let gate = tokio::task::block_in_place(|| gate(&store));
        let alerts = alerts(&Location::Sqlite(store.clone().into()));
        // Phases whose series kept at least 3 slow runs: the ones a change is due in.
        let kept = kept_slow_runs(&store, &first_slow);
        ready = kept
            .iter()
            .filter(|(_, runs)| runs.len() >= 3)
            .map(|(phase, _)| *phase)
            .collect();
        assert!(gate.stdout.lines().count() <= 20, "{}", gate.stdout);
        if ready.is_empty() {
            // One or two slow runs are never a change.
            assert_eq!(gate.code, Some(0), "night {n}: {}", gate.stdout);
            assert!(alerts.is_empty(), "night {n}: {alerts:#?}");
            continue;
        }
        assert_eq!(gate.code, Some(5), "night {n}: {}", gate.stdout);
        assert_eq!(alerts.len(), 1, "night {n}: {alerts:#?}");
        assert_eq!(alerts[0].phases(), ready, "night {n}: {kept:?}");
        // At the first slow run each ready phase kept.
        let firsts: Vec<&String> = kept
            .iter()
            .filter(|(phase, _)| ready.contains(phase))
            .map(|(_, runs)| &runs[0])
            .collect();
        assert!(
            firsts.contains(&&alerts[0].change_at),
            "night {n}: {alerts:#?}"
        );
        // At concurrency 1 the decode is the simulator's 4 → 6 ms a token (more running
        // requests add to it at c8 and rate-20).
        for m in alerts[0]
            .moved
            .iter()
            .filter(|m| m.figure == "tpot.p50" && m.phase.starts_with("c1"))
        {
            assert!(
                (m.after / m.before - 1.5).abs() < 0.08,
                "TPOT moved 4 → 6 ms: {m:?}"
            );
        }
    }
    // The plan's `history:` section came with the runs.
    let rules = open(&Location::Sqlite(store.clone().into()), OpenMode::Existing)
        .unwrap()
        .plan_history(PLAN)
        .unwrap()
        .expect("the quickstart plan's history section");
    assert_eq!(rules.min_runs_after, Some(3));
    assert!(
        rules
            .watch
            .is_some_and(|w| w.contains(&"tpot.p50".to_string()))
    );
    assert!(
        !ready.is_empty(),
        "every phase left out two or more of 4 slow runs: {:?}",
        kept_slow_runs(&store, &first_slow)
    );
}

#[test]
fn a_slowdown_that_went_away_is_listed_as_closed_with_the_nights_it_was_open() {
    let mut slow = steady_then(&[true; 4]);
    slow.extend_from_slice(&[false; 5]);
    let mut red = Vec::new();
    let locations = nights(
        "a closed alert on PostgreSQL",
        &slow,
        13,
        |location, n, gate| {
            if gate.code == Some(5) && matches!(location, Location::Sqlite(_)) {
                red.push(n);
            }
        },
    );
    // Red from the third slow night until three fast ones show the return.
    assert_eq!(red.first(), Some(&15), "{red:?}");
    let closed = red.last().map_or(0, |n| n + 1);
    assert!((19..=20).contains(&closed), "{red:?}");
    for location in locations {
        let path = address(&location);
        let gate_now = gate(&path);
        assert_eq!(gate_now.code, Some(0), "{location}: {}", gate_now.stdout);
        let kept = alerts(&location);
        assert_eq!(kept.len(), 1, "{location}: {kept:#?}");
        assert_eq!(kept[0].state, AlertState::Resolved);
        assert_eq!(kept[0].resolved_by.as_deref(), Some("run-0017"));
        let trend = history_cmd(&path)
            .args(["trend", "--plan", PLAN])
            .output()
            .unwrap();
        let md = String::from_utf8_lossy(&trend.stdout);
        let row = md
            .lines()
            .skip_while(|l| !l.starts_with("## Closed in the last 10 runs"))
            .find(|l| l.starts_with("| 1 | resolved |"))
            .unwrap_or_else(|| panic!("{location}: {md}"));
        assert!(
            row.contains("regression in c1, c2, c4, c8 → sim at run-0013"),
            "{row}"
        );
        assert!(row.contains("| back at run-0017 |"), "{row}");
        assert!(
            row.contains(&format!("| {} runs |", closed - 15)),
            "open from night 15 to night {closed}: {row}"
        );
    }
}
