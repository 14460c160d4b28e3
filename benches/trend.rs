//! Trends: the detection rates over seeded synthetic series (`rates`), the rates of nearby
//! settings on seeds apart from the reported ones (`calibrate`, how the defaults were
//! chosen), what a test knowing the noise exactly would reach (`bound`), and the time to
//! bring a 1,000-run × 20-phase history up to date and render it (`render`).
//!
//! ```text
//! cargo bench --bench trend -- rates
//! cargo bench --bench trend -- calibrate
//! cargo bench --bench trend -- bound
//! cargo bench --bench trend -- render
//! cargo bench --bench trend -- store /tmp/trend-store.sqlite   # then time the commands on it
//! cargo bench --bench trend -- store postgres://…              # the same in PostgreSQL
//! ```

use std::time::Instant;

use servebench::history::render::{TrendReport, html, markdown};
use servebench::history::store::{RunFilter, Store};
use servebench::history::synthetic::{self, Shape, replay};
use servebench::history::trend::{Settings, provenance_changes};

const FIGURES: [&str; 8] = [
    "ttft.p50",
    "ttft.p99",
    "tpot.p50",
    "e2e.p50",
    "e2e.p99",
    "output_tokens_per_second",
    "request_rate",
    "error_rate",
];

/// One case of the rates table: a series shape and a range of seeds.
struct Case {
    name: &'static str,
    step: Shape,
    seeds: std::ops::RangeInclusive<u64>,
}

/// Step series that opened an alert by run 23 (pointing at runs 17–21) and none before run
/// 20, that opened one before run 20, the run of the first alert at or after run 20, where
/// the alerts stand at run 30 (at run 20, within a run of it), and noise-only series (the
/// same shape without the step) that raised any alert.
fn rates_of(case: &Case, settings: &Settings) -> String {
    let flat = Shape {
        step: None,
        ..case.step
    };
    let (mut timely, mut early, mut flat_alerts, mut placed, mut near) = (0, 0, 0, 0, 0);
    let mut first: Vec<usize> = Vec::new();
    for seed in case.seeds.clone() {
        let alerts = replay(&case.step, seed, settings, None);
        if alerts.iter().all(|a| a.opened_by >= 20) {
            placed += usize::from(alerts.iter().any(|a| a.change_at == 20));
            near += usize::from(alerts.iter().any(|a| a.change_at.abs_diff(20) <= 1));
        }
        if alerts.iter().any(|a| a.opened_by < 20) {
            early += 1;
        } else if alerts
            .iter()
            .any(|a| (20..=23).contains(&a.opened_by) && (17..=21).contains(&a.change_at))
        {
            timely += 1;
        }
        if let Some(a) = alerts.iter().find(|a| a.opened_by >= 20) {
            first.push(a.opened_by);
        }
        if !replay(&flat, seed, settings, None).is_empty() {
            flat_alerts += 1;
        }
    }
    let n = case.seeds.clone().count();
    let by = |run: usize| first.iter().filter(|&&r| r == run).count();
    let percent = |k: usize| 100.0 * k as f64 / n as f64;
    format!(
        "{}: step series timely {timely}/{n} ({:.1}%), early {early}/{n}; first alert at run 20/21/22/23/later: {}/{}/{}/{}/{}; placed at run 20 {placed}/{n}, within a run {near}/{n}; noise-only series with an alert {flat_alerts}/{n} ({:.1}%)",
        case.name,
        percent(timely),
        by(20),
        by(21),
        by(22),
        by(23),
        first.iter().filter(|&&r| r > 23).count(),
        percent(flat_alerts),
    )
}

fn rates() {
    let settings = Settings::default();
    let step = Shape {
        runs: 30,
        level: 0.8,
        noise: 0.05,
        step: Some((20, 0.15)),
    };
    let smaller = Shape {
        noise: 0.03,
        step: Some((20, 0.10)),
        ..step
    };
    for case in [
        Case {
            name: "15% step, 5% noise, seeds 1-200",
            step,
            seeds: 1..=200,
        },
        Case {
            name: "15% step, 5% noise, seeds 1001-1200",
            step,
            seeds: 1001..=1200,
        },
        Case {
            name: "10% step, 3% noise, seeds 1-200",
            step: smaller,
            seeds: 1..=200,
        },
        Case {
            name: "10% step, 3% noise, seeds 1001-1200",
            step: smaller,
            seeds: 1001..=1200,
        },
    ] {
        println!("{}", rates_of(&case, &settings));
    }
}

/// The 15% step at 5% noise on seeds 10001–12000, which BENCHMARKS.md does not report, for
/// the full test's p and the newest runs' p near the defaults.
fn calibrate() {
    let step = Shape {
        runs: 30,
        level: 0.8,
        noise: 0.05,
        step: Some((20, 0.15)),
    };
    for (max_p, newest_max_p) in [
        (0.003, 0.0),
        (0.001, 0.0),
        (0.001, 0.005),
        (0.001, 0.01),
        (0.001, 0.02),
        (0.002, 0.01),
        (0.003, 0.01),
    ] {
        let settings = Settings {
            max_p,
            newest_max_p,
            ..Settings::default()
        };
        let case = Case {
            name: "15% step, 5% noise, seeds 10001-12000",
            step,
            seeds: 10001..=12000,
        };
        println!(
            "max_p {max_p}, newest_max_p {newest_max_p}: {}",
            rates_of(&case, &settings)
        );
    }
}

/// The rates of a test no series can run: every split with 3 runs or more either side scanned
/// at every run with the noise's true standard deviation (a z-test), an alert when the
/// newest level is up by `z` standard errors. What 95% in time costs in false alarms when
/// the noise need not be estimated (seeds 10001–12000).
fn bound() {
    let step = Shape {
        runs: 30,
        level: 0.8,
        noise: 0.05,
        step: Some((20, 0.15)),
    };
    let flat = Shape { step: None, ..step };
    let sigma = step.level * step.noise;
    // The first run (1-based) of the new level the scan finds in `values`, if any.
    let found = |values: &[f64], z: f64| -> Option<usize> {
        let n = values.len();
        (3..=n.saturating_sub(3))
            .map(|tau| {
                let (left, right) = values.split_at(tau);
                let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                let se = sigma * (1.0 / left.len() as f64 + 1.0 / right.len() as f64).sqrt();
                (tau, (mean(right) - mean(left)) / se)
            })
            .filter(|&(_, score)| score >= z)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(tau, _)| tau + 1)
    };
    for z in [3.2, 3.4, 3.6, 3.8] {
        let (mut timely, mut early, mut flat_alerts) = (0, 0, 0);
        for seed in 10001..=12000 {
            let v = synthetic::values(&step, seed);
            let looks: Vec<(usize, Option<usize>)> =
                (6..=30).map(|n| (n, found(&v[..n], z))).collect();
            if looks.iter().any(|&(n, at)| n < 20 && at.is_some()) {
                early += 1;
            } else if looks.iter().any(|&(n, at)| {
                (20..=23).contains(&n) && at.is_some_and(|a| (17..=21).contains(&a))
            }) {
                timely += 1;
            }
            let f = synthetic::values(&flat, seed);
            if (6..=30).any(|n| found(&f[..n], z).is_some()) {
                flat_alerts += 1;
            }
        }
        println!(
            "known noise, z ≥ {z}: step series timely {timely}/2000 ({:.1}%), early {early}/2000; noise-only series with an alert {flat_alerts}/2000 ({:.1}%)",
            timely as f64 / 20.0,
            flat_alerts as f64 / 20.0
        );
    }
}

fn render() {
    let mut store = synthetic::store("nightly", 1000, 20, &FIGURES);
    let settings = Settings::default();
    for pass in ["first (alerts opened)", "again (steady)"] {
        let start = Instant::now();
        let updated = servebench::history::update(&mut store, None, Some(&settings)).unwrap();
        let (trends, alerts, watched) = (updated.trends, updated.alerts, updated.watched);
        let analysed = start.elapsed();
        let runs = store.runs(&RunFilter::default()).unwrap();
        let provenance = provenance_changes(&runs);
        let report = TrendReport {
            plan: Some("nightly"),
            trends: &trends,
            alerts: &alerts,
            provenance: &provenance,
            settings: &settings,
            watched: &watched,
        };
        let md = markdown(&report);
        let after_md = start.elapsed();
        let page = html(&report);
        let total = start.elapsed();
        println!(
            "{pass}: {} series × 1000 runs: analysed {:.2} s, markdown {:.2} s ({} chars), html {:.2} s ({:.1} MB), total {:.2} s; {} alerts",
            trends.len(),
            analysed.as_secs_f64(),
            (after_md - analysed).as_secs_f64(),
            md.chars().count(),
            (total - after_md).as_secs_f64(),
            page.len() as f64 / 1e6,
            total.as_secs_f64(),
            alerts.len()
        );
    }
}

/// The distributions a chat phase records, each with every statistic (`Stat::ALL`).
const STORE_DISTRIBUTIONS: [&str; 11] = [
    "cached_tokens",
    "decode_tok_s",
    "e2e",
    "input_tokens",
    "max_inter_chunk_ms",
    "mean_inter_token_latency_ms",
    "output_tokens",
    "request_bytes",
    "time_to_first_output",
    "tpot",
    "ttft",
];

/// The phase figures a chat phase records beside its distributions.
const STORE_SCALARS: [&str; 13] = [
    "cached_token_ratio",
    "elapsed",
    "error_rate",
    "errors",
    "in_flight.requests",
    "in_flight.tokens",
    "output_tokens_per_second",
    "request_bytes_per_second",
    "request_rate",
    "requests",
    "success",
    "total_input_tokens",
    "total_output_tokens",
];

/// The 79 figures a phase of the quickstart plan records (`history list` of a real run).
fn store_figures() -> Vec<String> {
    let stats = servebench::figure::Stat::ALL;
    STORE_DISTRIBUTIONS
        .iter()
        .flat_map(|d| stats.iter().map(move |s| format!("{d}.{}", s.name())))
        .chain(STORE_SCALARS.iter().map(|s| s.to_string()))
        .collect()
}

/// A store of 1,000 runs × 20 phases (79 figures each, as real runs record them) at
/// `location` (a SQLite path or a PostgreSQL URL), for timing the history commands on it:
/// `servebench history --history LOCATION trend --plan nightly`.
fn store(location: &str) {
    use servebench::history::{Location, OpenMode, open};
    let start = Instant::now();
    let figures = store_figures();
    let names: Vec<&str> = figures.iter().map(String::as_str).collect();
    let mut store = open(&Location::parse(location), OpenMode::Create).unwrap();
    for rows in synthetic::runs("nightly", 1000, 20, &names) {
        store.record_rows(&rows).unwrap();
    }
    println!(
        "recorded 1000 runs × 20 phases × {} figures into {location} in {:.1} s ({:.0} MB)",
        names.len(),
        start.elapsed().as_secs_f64(),
        std::fs::metadata(location).map_or(0.0, |m| m.len() as f64 / 1e6)
    );
}

fn main() {
    let which: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let all = which.is_empty();
    if let Some(at) = which.iter().position(|w| w == "store") {
        let path = which
            .get(at + 1)
            .map_or("trend-store.sqlite", String::as_str);
        store(path);
        return;
    }
    if all || which.iter().any(|w| w == "rates") {
        rates();
    }
    if which.iter().any(|w| w == "calibrate") {
        calibrate();
    }
    if which.iter().any(|w| w == "bound") {
        bound();
    }
    if all || which.iter().any(|w| w == "render") {
        render();
    }
}
