//! `examples/gateways/run.sh`, shortened: plans/gateway.yaml through a real router in front of
//! two simulator replicas, each gateway and replica listed as a metrics endpoint. Skips with
//! one line (fails under `CI`) when the routers' venv is missing.

use servebench::report::Report;

use crate::real_support::{RealEngines, repo_path};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_example_fills_backend_figures_for_every_phase() {
    if RealEngines::find("vllm-router").is_none() {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let status = tokio::process::Command::new("bash")
        .arg(repo_path("examples/gateways/run.sh"))
        .args([
            "--set",
            "duration=2s",
            "--set",
            "warmup=1s",
            "--set",
            "soak_duration=2s",
        ])
        .args([
            "--phase",
            "gateway-c4",
            "--phase",
            "prefix-random",
            "--phase",
            "prefix-aware",
        ])
        .args(["-q", "--no-calibrate", "--no-latency-hint", "--output"])
        .arg(&out)
        .env("SERVEBENCH", assert_cmd::cargo::cargo_bin!("servebench"))
        .env("SERVEBENCH_REAL_DIR", crate::real_support::real_dir())
        .env("ROUTER", "vllm")
        .status()
        .await
        .expect("bash runs");
    assert!(status.success(), "run.sh exited {status}");
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    crate::common::assert_valid_report(&value);
    let report: Report = serde_json::from_value(value).unwrap();
    let names: Vec<&str> = report
        .phases
        .iter()
        .map(|p| p.header.phase.as_str())
        .collect();
    assert_eq!(names, ["gateway-c4", "prefix-random", "prefix-aware"]);
    for phase in &report.phases {
        let name = &phase.header.phase;
        assert_eq!(phase.summary.errors, 0, "{name}");
        let m = phase.server_metrics.as_ref().expect("server metrics");
        assert!(m.warnings.is_empty(), "{name}: {:?}", m.warnings);
        assert!(
            m.prefix_cache_hit_avg.is_some(),
            "{name}: no prefix_cache_hit_avg"
        );
        let rows: Vec<(&str, f64)> = m
            .backends
            .iter()
            .map(|b| (b.name.as_str(), b.requests))
            .collect();
        assert_eq!(rows.len(), 2, "{name}: {rows:?}");
        let served: f64 = rows.iter().map(|r| r.1).sum();
        assert_eq!(served, phase.summary.requests as f64, "{name}: {rows:?}");
        assert!(
            m.backend_requests_from
                .as_deref()
                .is_some_and(|s| s.starts_with("gateway: ")),
            "{name}: {:?}",
            m.backend_requests_from
        );
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| prefix-aware | replica-1 |"), "{md}");
}
