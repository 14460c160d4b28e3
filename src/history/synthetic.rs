//! Seeded synthetic histories for the trend tests and benchmarks: a series with Gaussian
//! run-to-run noise and an optional step, and stores of many phases and runs.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use super::record::{FigureRow, PhaseRow, RunRow, RunRows, RunSource};
use super::series::{Conditions, PhaseFacts, Point, SeriesKey};
use super::store::{MemoryStore, Store as _};

/// A series' shape: its level, noise and an optional step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub runs: usize,
    pub level: f64,
    /// Run-to-run noise, as a fraction of the level (its standard deviation).
    pub noise: f64,
    /// `(first run of the new level, 1-based; relative step)`.
    pub step: Option<(usize, f64)>,
}

/// The values of one seeded series of `shape`.
pub fn values(shape: &Shape, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let noise = Normal::new(0.0, shape.noise).unwrap_or_else(|_| Normal::new(0.0, 0.0).unwrap());
    (1..=shape.runs)
        .map(|run| {
            let stepped = shape.step.is_some_and(|(at, _)| run >= at);
            let level = shape.level
                * (1.0
                    + if stepped {
                        shape.step.map_or(0.0, |s| s.1)
                    } else {
                        0.0
                    });
            level * (1.0 + noise.sample(&mut rng))
        })
        .collect()
}

/// Run `n`'s id and start time (runs one hour apart).
pub fn run_id(n: usize) -> (String, String) {
    let start = chrono::DateTime::from_timestamp(1_700_000_000 + 3600 * n as i64, 0)
        .unwrap_or_default()
        .to_rfc3339();
    (format!("run-{n:04}"), start)
}

/// A plain, eligible point of run `n`.
pub fn point(n: usize, value: f64) -> Point {
    let (run, started_at) = run_id(n);
    let facts = PhaseFacts {
        run,
        started_at,
        work: "work-a".into(),
        deployment: "deploy-a".into(),
        client_bound: false,
        partial: false,
        excluded: None,
        conditions: Conditions::default(),
    };
    Point::new(std::sync::Arc::new(facts), value, None)
}

/// Run `n` of `plan` as the store records it: one phase per entry of `phases` (its name and
/// its figures' values), against target `default`, with `provenance` as the run's JSON.
pub fn run_rows(
    plan: &str,
    n: usize,
    provenance: serde_json::Value,
    phases: &[(String, Vec<(String, f64)>)],
) -> RunRows {
    let (run_id, started_at) = run_id(n);
    RunRows {
        run: RunRow {
            record_key: format!("synthetic:{plan}:{run_id}"),
            run_id,
            plan: plan.into(),
            source: RunSource::Servebench,
            started_at: started_at.clone(),
            finished_at: Some(started_at.clone()),
            complete: true,
            stop_reason: None,
            tool: "servebench synthetic".into(),
            hostname: None,
            plan_sha256: None,
            report_path: None,
            report_sha256: None,
            records_path: None,
            records_sha256: None,
            metadata: "{}".into(),
            provenance: Some(provenance.to_string()),
            history: None,
        },
        phases: phases
            .iter()
            .map(|(phase, figures)| PhaseRow {
                phase: phase.clone(),
                target: "default".into(),
                route: "chat".into(),
                workload: "synthetic".into(),
                concurrency: Some(1),
                rate_rps: None,
                recheck_of: None,
                started_at: started_at.clone(),
                partial: false,
                work_sha256: Some("work-a".into()),
                deployment_sha256: "deploy-a".into(),
                trust: None,
                trust_reasons: "[]".into(),
                requests: 100,
                errors: 0,
                elapsed_s: 60.0,
                conditions: Conditions::default(),
                split: None,
                figures: figures
                    .iter()
                    .map(|(figure, value)| FigureRow {
                        figure: figure.clone(),
                        value: *value,
                        interval: None,
                        note: None,
                    })
                    .collect(),
                errors_by_cause: Vec::new(),
            })
            .collect(),
        searches: Vec::new(),
    }
}

/// `runs` runs of a `phases`-phase plan, each phase with `figures` series at 5% noise, every
/// third phase with a 15% regression two thirds of the way, and the engine version changing
/// half way: the rows to record, oldest first.
pub fn runs(plan: &str, runs: usize, phases: usize, figures: &[&str]) -> Vec<RunRows> {
    // values[phase][figure][run]
    let values: Vec<Vec<Vec<f64>>> = (0..phases)
        .map(|phase| {
            let shape = Shape {
                runs,
                level: 1.0 + phase as f64 * 0.1,
                noise: 0.05,
                step: (phase % 3 == 0).then_some((runs * 2 / 3, 0.15)),
            };
            (0..figures.len())
                .map(|f| values(&shape, (phase * 1000 + f) as u64))
                .collect()
        })
        .collect();
    (1..=runs)
        .map(|n| {
            let version = if n <= runs / 2 { "0.9.1" } else { "0.9.2" };
            let provenance = serde_json::json!({
                "target": {"default": {"engine_version": version}},
                "host": {"cpu": "x86-64, 16 cores"},
            });
            let phase_values: Vec<(String, Vec<(String, f64)>)> = (0..phases)
                .map(|phase| {
                    let row = figures
                        .iter()
                        .enumerate()
                        .map(|(f, figure)| (figure.to_string(), values[phase][f][n - 1]))
                        .collect();
                    (format!("phase-{phase:02}"), row)
                })
                .collect();
            run_rows(plan, n, provenance, &phase_values)
        })
        .collect()
}

/// A store in memory holding [`runs`].
pub fn store(plan: &str, runs: usize, phases: usize, figures: &[&str]) -> MemoryStore {
    let mut store = MemoryStore::new();
    for rows in self::runs(plan, runs, phases, figures) {
        // The memory store records any rows.
        let _ = store.record_rows(&rows);
    }
    store
}

/// An alert as the run numbers it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    pub opened_by: usize,
    pub change_at: usize,
}

/// Record the series of `shape` (seed `seed`) run by run into a fresh store, bringing the
/// trends up to date after each run as CI would; every alert opened, in order. With
/// `client_bound_at`, one more run is recorded before that run, client-bound and three
/// times as slow.
pub fn replay(
    shape: &Shape,
    seed: u64,
    settings: &super::trend::Settings,
    client_bound_at: Option<usize>,
) -> Vec<Opened> {
    let key = SeriesKey {
        plan: "synthetic".into(),
        phase: "steady".into(),
        target: "default".into(),
        figure: "ttft.p99".into(),
    };
    let mut points: Vec<Point> = values(shape, seed)
        .into_iter()
        .enumerate()
        .map(|(i, v)| point(i + 1, v))
        .collect();
    if let Some(at) = client_bound_at {
        let mut odd = point(at, points[at - 1].value * 3.0);
        let facts = odd.facts_mut();
        facts.run = format!("{}-client-bound", facts.run);
        facts.client_bound = true;
        points.insert(at - 1, odd);
    }
    let number = |run: &str| -> usize {
        run.trim_start_matches("run-")
            .split('-')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let mut store = MemoryStore::new();
    for p in points {
        store.push_point(&key, p);
        // The memory store never fails.
        let _ = super::update(&mut store, Some("synthetic"), Some(settings));
    }
    let mut alerts = store.alerts(None).unwrap_or_default();
    alerts.sort_by_key(|a| a.id);
    alerts
        .iter()
        .map(|a| Opened {
            opened_by: number(&a.opened_by),
            change_at: number(&a.change_at),
        })
        .collect()
}
