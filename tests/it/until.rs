//! `until: {stable: …}`: a steady simulator phase ends early with tight intervals; a noisy one
//! runs to `max_duration` and carries a warning.

use std::path::Path;

use servebench::runner::run;

fn plan(simulator: &str, until: &str) -> String {
    format!(
        "version: 1
name: until
seed: 11
targets:
  sim:
    simulator: {simulator}
workloads:
  w: {{input_tokens: 64, output_tokens: 16, ignore_eos: true}}
defaults: {{target: sim, workload: w}}
phases:
  - name: p
    concurrency: 8
    until: {until}
"
    )
}

async fn run_plan(dir: &Path, yaml: &str) -> (serde_json::Value, String) {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, yaml).unwrap();
    let out = dir.join("out");
    run(crate::common::quiet_run_options(path, &out))
        .await
        .unwrap();
    let report = std::fs::read_to_string(out.join("report.json")).unwrap();
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    (serde_json::from_str(&report).unwrap(), md)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_phase_stops_once_its_intervals_are_tight() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let yaml = plan(
        "{decode_ms_per_token: 2, jitter: 0.02}",
        "{stable: [ttft.p50, tpot.p50], within: 5%, max_duration: 60s, check_every: 250ms}",
    );
    let (report, md) = run_plan(dir.path(), &yaml).await;
    let phase = &report["phases"][0];
    let until = &phase["until"];
    assert_eq!(until["stopped_by"], "stable", "{until}");
    assert!(until.get("warning").is_none(), "{until}");
    assert_eq!(until["within"].as_f64(), Some(0.05));
    assert!(until["checked_at_s"].as_f64().unwrap() < 60.0);
    assert!(
        phase["partial"] == false,
        "a stop for stability is no interrupt"
    );
    for metric in ["ttft", "tpot"] {
        let distribution = &phase[metric];
        let p50 = distribution["p50"].as_f64().unwrap();
        let ci = &distribution["ci95"]["p50"];
        let half = (ci["hi"].as_f64().unwrap() - ci["lo"].as_f64().unwrap()) / 2.0;
        assert!(half / p50 <= 0.05, "{metric}: ±{half} of {p50}");
    }
    for estimate in until["estimates"].as_array().unwrap() {
        assert!(estimate["relative"].as_f64().unwrap() <= 0.05, "{estimate}");
    }
    assert!(md.contains("## Run until stable"), "{md}");
    assert!(md.contains("| p | stable |"), "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_noisy_phase_runs_to_max_duration_with_a_warning() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let yaml = plan(
        "{decode_ms_per_token: 2, jitter: 0.9}",
        "{stable: [ttft.p99], within: 0.001, max_duration: 2s, check_every: 500ms}",
    );
    let (report, md) = run_plan(dir.path(), &yaml).await;
    let phase = &report["phases"][0];
    let until = &phase["until"];
    assert_eq!(until["stopped_by"], "max_duration", "{until}");
    let warning = until["warning"].as_str().unwrap();
    assert!(warning.contains("ttft.p99"), "{warning}");
    assert!(until["checks"].as_u64().unwrap() >= 2, "{until}");
    // Requests kept starting until the bound: the last one started within a check of it.
    let last_start = phase["request_timings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["start_offset_ms"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(last_start > 1500.0, "{last_start}");
    assert!(md.contains("**Warning:**"), "{md}");
}

#[test]
fn percentages_and_bounds_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.yaml");
    let yaml = plan("{}", "{stable: [ttft.p99], within: 150%, max_duration: 0s}");
    std::fs::write(&path, yaml).unwrap();
    let text = servebench::plan::prepare(&path, &Default::default())
        .unwrap_err()
        .to_string();
    assert!(text.contains("must be between 0 and 1"), "{text}");
    assert!(text.contains("must be longer than zero"), "{text}");
    let unknown = plan("{}", "{stable: [ttft.p42], within: 5%, max_duration: 1s}");
    std::fs::write(&path, unknown).unwrap();
    let text = servebench::plan::prepare(&path, &Default::default())
        .unwrap_err()
        .to_string();
    assert!(text.contains("ttft.p42"), "{text}");
}
