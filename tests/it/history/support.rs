//! What the history tests share: the PostgreSQL server `.ci/run` starts (a fresh database
//! per test), decorated sample reports, and the binary.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};
use servebench::history::Location;

/// The environment variable `.ci/run` sets to the throwaway server's URL.
pub const POSTGRES_ENV: &str = "SERVEBENCH_TEST_POSTGRES";

/// The test server's admin URL, or `None` after one `skipped:` line (locally); with `CI` set
/// a missing server fails the test, so CI never passes by skipping.
pub fn postgres(what: &str) -> Option<String> {
    match std::env::var(POSTGRES_ENV) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            let why =
                format!("{POSTGRES_ENV} is unset (source .ci/postgres.sh && start_test_postgres)");
            assert!(std::env::var_os("CI").is_none(), "{what}: {why}");
            eprintln!("skipped: {what}: {why}");
            None
        }
    }
}

/// A new, empty database on the test server; its URL.
pub fn fresh_database(admin: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "history_{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst),
        chrono::Utc::now().timestamp_micros()
    );
    let mut client = postgres::Client::connect(admin, postgres::NoTls).expect("test server");
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("create database");
    let base = admin.rsplit_once('/').map_or(admin, |(base, _)| base);
    format!("{base}/{name}")
}

/// A fresh SQLite store in `dir`, and a fresh PostgreSQL one when the server is there.
pub fn backends(dir: &Path, what: &str) -> Vec<Location> {
    let mut all = vec![Location::Sqlite(dir.join("history.sqlite"))];
    if let Some(admin) = postgres(what) {
        all.push(Location::Postgres(fresh_database(&admin)));
    }
    all
}

pub fn sample() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reports/sample.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The sample report with what it lacks: a client-bound phase, errors by cause, a latency
/// split with the server's queue time.
pub fn rich_sample() -> Value {
    let mut doc = sample();
    doc["phases"][2]["client_trust"] = json!({
        "verdict": "client_bound",
        "reasons": ["cpu_share 0.97 > 0.9"],
        "wall_s": 10.0,
        "ticks": 1000,
        "cpu_share": 0.97
    });
    doc["phases"][0]["client_trust"] = json!({"verdict": "trusted", "wall_s": 10.0, "ticks": 1000});
    doc["phases"][1]["errors_by_cause"] = json!([
        {"cause": "HTTP 503 · overloaded", "kind": "http_status", "status": 503, "count": 2,
         "example": "server overloaded"},
        {"cause": "idle_timeout", "kind": "idle_timeout", "count": 1, "example": "no chunk for 30 s"}
    ]);
    doc["phases"][1]["server_timing_gap"] = json!({
        "requests": 24,
        "split": {
            "requests": 24, "connect_ms": 0.25, "tls_ms": 0.0, "server_queue_ms": 12.5,
            "server_prefill_ms": 40.125, "server_decode_ms": 300.0625, "frontend_network_ms": 3.0,
            "network_other_min_ms": -0.5, "e2e_ms": 355.9375
        }
    });
    doc
}

/// `doc` as a report file `dir/<name>/report.json`, with `run_id` set; its path.
pub fn write_report(dir: &Path, name: &str, doc: &Value, run_id: &str) -> PathBuf {
    let mut doc = doc.clone();
    doc["run_id"] = Value::from(run_id);
    let run_dir = dir.join(name);
    std::fs::create_dir_all(&run_dir).unwrap();
    let path = run_dir.join("report.json");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

pub fn report(doc: &Value) -> servebench::report::Report {
    serde_json::from_value(doc.clone()).expect("a report")
}

pub use crate::common::servebench;

/// `history list --format json` of a store, from a fresh process: every run's JSON.
pub fn list_runs(location: &str, extra: &[&str]) -> Vec<Value> {
    let out = servebench()
        .args(["history", "list", "--format", "json", "--history", location])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "history list failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("list JSON")
}
