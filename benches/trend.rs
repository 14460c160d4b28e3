//! Trends: the detection rates over seeded synthetic series (`rates`), and the time to
//! bring a 1,000-run × 20-phase history up to date and render it (`render`).
//!
//! ```text
//! cargo bench --bench trend -- rates
//! cargo bench --bench trend -- render
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

fn rates() {
    let settings = Settings::default();
    let step = Shape {
        runs: 30,
        level: 0.8,
        noise: 0.05,
        step: Some((20, 0.15)),
    };
    let flat = Shape { step: None, ..step };
    let (mut timely, mut early, mut flat_alerts) = (0, 0, 0);
    let mut first: Vec<usize> = Vec::new();
    for seed in 1..=200 {
        let alerts = replay(&step, seed, &settings, None);
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
        if !replay(&flat, seed, &settings, None).is_empty() {
            flat_alerts += 1;
        }
    }
    let by = |run: usize| first.iter().filter(|&&r| r == run).count();
    println!(
        "step series (200 seeds): {timely} opened an alert by run 23 with none before run 20; {early} opened one before run 20"
    );
    println!(
        "first alert at run 20/21/22/23/later: {}/{}/{}/{}/{}",
        by(20),
        by(21),
        by(22),
        by(23),
        first.iter().filter(|&&r| r > 23).count()
    );
    println!("noise-only series (200 seeds): {flat_alerts} raised an alert");
}

fn render() {
    let mut store = synthetic::store("nightly", 1000, 20, &FIGURES);
    let settings = Settings::default();
    for pass in ["first (alerts opened)", "again (steady)"] {
        let start = Instant::now();
        let (trends, alerts) = servebench::history::update(&mut store, None, &settings).unwrap();
        let analysed = start.elapsed();
        let runs = store.runs(&RunFilter::default()).unwrap();
        let provenance = provenance_changes(&runs);
        let report = TrendReport {
            plan: Some("nightly"),
            trends: &trends,
            alerts: &alerts,
            provenance: &provenance,
            settings: &settings,
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

fn main() {
    let which: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let all = which.is_empty();
    if all || which.iter().any(|w| w == "rates") {
        rates();
    }
    if all || which.iter().any(|w| w == "render") {
        render();
    }
}
