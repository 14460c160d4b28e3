//! Load as held: plans/load-held.yaml against the simulator over loopback, its mean requests
//! in flight against the planned concurrency and against rate × mean latency, and the gate
//! that names the figure.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use servebench::client::RequestRecord;
use servebench::report::Report;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Requests in flight integrated edge by edge over the records' window, apart from the tally.
fn swept_mean_in_flight(records: &[RequestRecord]) -> f64 {
    let mut edges: Vec<(f64, f64)> = records
        .iter()
        .flat_map(|r| {
            [
                (r.start_offset_ms, 1.0),
                (r.start_offset_ms + r.e2e_ms, -1.0),
            ]
        })
        .collect();
    edges.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (first, last) = (edges[0].0, edges[edges.len() - 1].0);
    let (mut area, mut now, mut at) = (0.0, 0.0, first);
    for (t, step) in edges {
        area += now * (t - at);
        now += step;
        at = t;
    }
    area / (last - first)
}

async fn run_example(out: &Path) -> Report {
    let mut options = crate::common::quiet_run_options(root().join("plans/load-held.yaml"), out);
    options.expand.set = vec!["duration=4s".to_string()];
    servebench::runner::run(options).await.unwrap();
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    crate::common::assert_valid_report(&serde_json::from_str(&text).unwrap());
    serde_json::from_str(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_loop_holds_its_concurrency_and_an_open_loop_its_rate_times_latency() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let report = run_example(&out).await;
    let (closed, open) = (&report.phases[0], &report.phases[1]);
    for phase in [closed, open] {
        assert_eq!(phase.summary.errors, 0, "{}", phase.header.phase);
        let held = phase.summary.in_flight.expect("in_flight");
        let swept = swept_mean_in_flight(&phase.request_timings);
        assert!(
            (held.requests - swept).abs() < 1e-6 * swept,
            "{}: {held:?} vs swept {swept}",
            phase.header.phase
        );
        // Every request holds at least its prompt (300 to 500 tokens) while in flight.
        assert!(held.tokens > 300.0 * held.requests, "{held:?}");
        assert!(held.tokens < (500.0 + 48.0) * held.requests, "{held:?}");
    }
    let held = closed.summary.in_flight.unwrap();
    assert!(
        (held.requests - 8.0).abs() / 8.0 <= 0.02,
        "closed loop c=8 held {} in flight",
        held.requests
    );
    let held = open.summary.in_flight.unwrap();
    let little = 50.0 * held.mean_latency_s;
    assert!(
        (held.requests - little).abs() / little <= 0.05,
        "open loop at 50 rps held {} in flight, rate × mean latency {little}",
        held.requests
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Load as held"), "{md}");
    assert!(md.contains("| c8 | c=8 |"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("id=\"load-as-held\""));

    // The figure gates like any other; a misspelt one is refused with the right name.
    let report_json = out.join("report.json");
    let gate = |expr: &str| {
        Command::cargo_bin("servebench")
            .unwrap()
            .arg("compare")
            .arg(&report_json)
            .arg(&report_json)
            .args(["--gate", expr])
            .output()
            .unwrap()
    };
    assert_eq!(gate("c8:in_flight.requests >= 7.8").status.code(), Some(0));
    assert_eq!(gate("c8:in_flight.requests > 8.5").status.code(), Some(1));
    let typo = gate("in_flight.request >= 1");
    assert_eq!(typo.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&typo.stderr);
    assert!(stderr.contains("in_flight.requests"), "{stderr}");
}
