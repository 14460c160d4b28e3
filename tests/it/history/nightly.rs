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
        let out = history_cmd(&address(&location))
            .args(["trend", "--plan", PLAN, "--format", "html"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{location}");
        let page = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            page.matches("<tr class=\"alert\">").count(),
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
