//! Trace context over loopback: every request's `traceparent` as the server saw it, its
//! trace id in the record and in the run's Parquet parts, unique across runs; `off` sends none; bad
//! plan values refused at their key.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use servebench::client::trace_id_of;
use servebench::report::Report;
use servebench::sim::{SimConfig, serve};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// plans/trace-context.yaml against `url`, with `set` overrides; the report.
async fn run_example(url: &str, out: &Path, set: &[&str]) -> Report {
    let mut options =
        crate::common::quiet_run_options(root().join("plans/trace-context.yaml"), out);
    options.expand.target_overrides = vec![format!("sim={url}")];
    options.expand.set = set.iter().map(|s| s.to_string()).collect();
    servebench::runner::run(options).await.unwrap();
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    crate::common::assert_valid_report(&serde_json::from_str(&text).unwrap());
    serde_json::from_str(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_carries_the_trace_id_its_record_keeps() {
    let _exclusive = crate::common::exclusive_run().await;
    let (addr, sim) = serve(SimConfig {
        decode_ms_per_token: Some(0.5),
        record_requests: Some(true),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let url = format!("http://{addr}/v1");
    let dir = tempfile::tempdir().unwrap();
    let first = run_example(&url, &dir.path().join("a"), &[]).await;
    let phase = &first.phases[0];
    assert_eq!(phase.summary.errors, 0);
    assert_eq!(phase.request_timings.len(), 40);

    // The server's view, by request id: the traceparent each request arrived with.
    let header = |seen: &servebench::sim::SeenRequest, name: &str| {
        seen.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let seen: BTreeMap<String, String> = sim
        .requests()
        .iter()
        .filter_map(|s| Some((header(s, "x-request-id")?, header(s, "traceparent")?)))
        .collect();
    let mut trace_ids = BTreeSet::new();
    for record in &phase.request_timings {
        let trace_id = record.trace_id.as_deref().expect("a trace id");
        let traceparent = &seen[record.sent_id()];
        assert_eq!(trace_id_of(traceparent), Some(trace_id), "{traceparent}");
        // The trace id's second half is the request index.
        assert_eq!(
            u64::from_str_radix(&trace_id[16..], 16).unwrap(),
            record.request_index
        );
        assert!(trace_ids.insert(trace_id.to_string()), "{trace_id} twice");
    }
    // The run's Parquet parts keep them, row by row.
    let rows = crate::common::record_rows(&dir.path().join("a"));
    let measured: Vec<_> = rows.iter().filter(|r| r.phase == "traced").collect();
    assert!(measured.len() >= 40);
    for row in measured {
        let id = row.record.trace_id.as_deref().expect("a trace id column");
        assert!(trace_id_of(&format!("00-{id}-00f067aa0ba902b7-01")).is_some());
    }

    // The same plan again (same run name, maybe the same second): no trace id repeats.
    let second = run_example(&url, &dir.path().join("b"), &[]).await;
    for record in &second.phases[0].request_timings {
        assert!(!trace_ids.contains(record.trace_id.as_deref().unwrap()));
    }

    // `off` sends no traceparent and records none.
    let before = sim.requests().len();
    let off = run_example(&url, &dir.path().join("c"), &["trace=off"]).await;
    assert!(
        off.phases[0]
            .request_timings
            .iter()
            .all(|r| r.trace_id.is_none())
    );
    let later = &sim.requests()[before..];
    assert!(!later.is_empty());
    assert!(later.iter().all(|s| header(s, "traceparent").is_none()));
    sim.shutdown().await;
}

#[test]
fn a_bad_trace_context_is_refused_at_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let validate = |yaml: &str| {
        let path = dir.path().join("plan.yaml");
        std::fs::write(&path, yaml).unwrap();
        let out = Command::cargo_bin("servebench")
            .unwrap()
            .arg("validate")
            .arg(&path)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let plan = "version: 1\nname: t\ntargets:\n  sim:\n    trace_context: w3c\n    simulator: {}\n\
                workloads:\n  w: {input_tokens: 10, output_tokens: 2}\n\
                phases:\n  - {name: a, target: sim, workload: w, concurrency: 1, requests: 1}\n";
    let (code, stderr) = validate(plan);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = validate(&plan.replace("trace_context: w3c", "trace_context: zipkin"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("trace_context"), "{stderr}");
    assert!(stderr.contains("plan.yaml:5:20"), "{stderr}");
    let (code, stderr) = validate(&plan.replace("trace_context: w3c", "trace_contxt: w3c"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("trace_context"), "did you mean: {stderr}");
}
