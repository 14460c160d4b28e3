//! Sharded runs: merge checks on hand-built shard reports, and two shards run concurrently
//! against one simulator, merged and compared with an unsharded run.

use crate::common::assert_valid_report;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use indexmap::IndexMap;
use servebench::client::RequestRecord;
use servebench::metrics::{self, PhaseSummary};
use servebench::plan::{ExpandOptions, PercentileMethod, Plan, prepare_from_value};
use servebench::report::{
    HostFacts, PhaseResult, PlanSource, PromptTokenCheck, REPORT_SCHEMA, Report, TimingMethodology,
    ToolInfo, WarmupResult,
};
use servebench::shard::{ShardInfo, merge_reports, plan_sha256};

fn servebench() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin!("servebench"))
}

fn small_plan(concurrency: u32) -> Plan {
    let doc = serde_json::json!({
        "version": 1,
        "name": "sharded",
        "seed": 5,
        "percentile_method": "nearest_rank",
        "targets": {"sim": {"simulator": {"seed": 1}}},
        "workloads": {"chat": {"input_tokens": 32, "output_tokens": 8}},
        "defaults": {"target": "sim", "workload": "chat"},
        "phases": [
            {"name": "c", "concurrency": concurrency, "requests": 10},
            {"name": "c-again", "recheck": "c", "requests": 10},
        ],
    });
    match prepare_from_value(doc, "small plan", &ExpandOptions::default()) {
        Ok(loaded) => loaded.plan,
        Err(e) => panic!("the test plan is invalid: {e}"),
    }
}

fn record(shard: u32, index: u64, start_ms: f64, ttft_ms: f64) -> RequestRecord {
    RequestRecord {
        request_index: index,
        // As the runner names them: the run id holds the shard.
        request_id: format!("sharded-shard{shard}of2-c-{index}"),
        start_offset_ms: start_ms,
        time_to_first_output_ms: Some(ttft_ms),
        ttft_ms: Some(ttft_ms),
        e2e_ms: ttft_ms + 70.0,
        prompt_tokens: Some(32),
        output_tokens: Some(8),
        ..RequestRecord::default()
    }
}

fn phase(
    name: &str,
    concurrency: u32,
    started_at: &str,
    records: Vec<RequestRecord>,
) -> PhaseResult {
    PhaseResult {
        phase: name.to_string(),
        route: "sim".to_string(),
        target: "sim".to_string(),
        workload: "chat".to_string(),
        concurrency: Some(concurrency),
        rate_rps: None,
        recheck_of: (name == "c-again").then(|| "c".to_string()),
        started_at: started_at.to_string(),
        start_offset_seconds: 0.0,
        end_offset_seconds: 0.0,
        partial: false,
        summary: PhaseSummary::default(),
        warmup: WarmupResult::default(),
        prompt_tokens: PromptTokenCheck::default(),
        dataset_sha256: None,
        send_lag_ms: None,
        achieved_rate_ratio: None,
        server_metrics: None,
        transport: Default::default(),
        request_timings: records,
        client_headroom: None,
    }
}

/// A shard report as `run --shard index/count` writes it, with the records given.
fn shard_report(plan: Plan, shard: Option<(u32, u32)>, phases: Vec<PhaseResult>) -> Report {
    Report {
        schema: REPORT_SCHEMA.to_string(),
        tool: ToolInfo {
            name: "servebench".to_string(),
            version: "test".to_string(),
        },
        run_id: "sharded-test".to_string(),
        started_at: "2026-12-02T14:00:00Z".to_string(),
        finished_at: Some("2026-12-02T14:01:00Z".to_string()),
        partial: false,
        stop_reason: None,
        host: HostFacts::default(),
        plan_source: PlanSource {
            path: "plan.yaml".to_string(),
            sha256: "0".repeat(64),
        },
        vars: IndexMap::new(),
        metadata: IndexMap::new(),
        timing_methodology: TimingMethodology {
            clock: String::new(),
            percentile_method: plan.percentile_method,
            time_to_first_output: String::new(),
            ttft: String::new(),
            generation: String::new(),
            decode: String::new(),
            mean_inter_token_latency: String::new(),
            tpot: String::new(),
            effective_prefill: String::new(),
            elapsed: String::new(),
        },
        shard: shard.map(|(index, count)| ShardInfo {
            index,
            count,
            plan_sha256: plan_sha256(&plan),
            start_at: None,
            phase_starts: Vec::new(),
        }),
        plan,
        phases,
        rechecks: Vec::new(),
        merged_from: None,
        client_calibration: None,
        client_busy_poll: false,
    }
}

fn simple_shard(index: u32, count: u32) -> Report {
    shard_report(
        small_plan(4),
        Some((index, count)),
        vec![phase(
            "c",
            2,
            "2026-12-02T14:00:00.000Z",
            vec![record(index, 0, 0.0, 10.0)],
        )],
    )
}

fn write(dir: &Path, name: &str, report: &Report) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(report).unwrap()).unwrap();
    path
}

/// Run `servebench merge` on the files; expect exit 2 and return stderr.
fn merge_fails(dir: &Path, files: &[PathBuf]) -> String {
    let out = servebench()
        .current_dir(dir)
        .arg("merge")
        .args(files)
        .arg("-o")
        .arg(dir.join("merged.json"))
        .assert()
        .code(2);
    assert!(!dir.join("merged.json").exists());
    String::from_utf8_lossy(&out.get_output().stderr).into_owned()
}

#[test]
fn merge_refuses_shards_of_different_plans() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", &simple_shard(0, 2));
    let mut other = simple_shard(1, 2);
    other.plan = small_plan(6);
    other.shard.as_mut().unwrap().plan_sha256 = plan_sha256(&other.plan);
    let b = write(dir.path(), "b.json", &other);
    let err = merge_fails(dir.path(), &[a, b]);
    assert!(err.contains("the reports ran different plans"), "{err}");
    assert!(err.contains("a.json ran plan sha256"), "{err}");
    assert!(err.contains("b.json ran plan sha256"), "{err}");
}

#[test]
fn merge_refuses_a_plan_edited_after_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", &simple_shard(0, 2));
    let mut edited = simple_shard(1, 2);
    edited.plan = small_plan(6);
    let b = write(dir.path(), "b.json", &edited);
    let err = merge_fails(dir.path(), &[a, b]);
    assert!(
        err.contains("b.json: its plan was edited after the run"),
        "{err}"
    );
}

#[test]
fn merge_refuses_duplicate_and_missing_shards() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", &simple_shard(0, 3));
    let b = write(dir.path(), "b.json", &simple_shard(0, 3));
    let c = write(dir.path(), "c.json", &simple_shard(2, 3));
    let err = merge_fails(dir.path(), &[a, b, c]);
    assert!(err.contains("shard 0 appears 2 times: "), "{err}");
    assert!(err.contains("a.json, "), "{err}");
    assert!(err.contains("missing shard(s) 1/3"), "{err}");
}

#[test]
fn merge_refuses_a_missing_shard() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", &simple_shard(0, 3));
    let b = write(dir.path(), "b.json", &simple_shard(1, 3));
    let err = merge_fails(dir.path(), &[a, b]);
    assert!(err.contains("missing shard(s) 2/3"), "{err}");
    assert!(err.contains("0/3 ("), "{err}");
    assert!(err.contains("b.json)"), "{err}");
}

#[test]
fn merge_refuses_mixed_shard_counts_unsharded_and_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", &simple_shard(0, 2));
    let b = write(dir.path(), "b.json", &simple_shard(1, 3));
    let err = merge_fails(dir.path(), &[a.clone(), b]);
    assert!(
        err.contains("the reports disagree on the number of shards"),
        "{err}"
    );

    let whole = shard_report(small_plan(4), None, Vec::new());
    let c = write(dir.path(), "whole.json", &whole);
    let err = merge_fails(dir.path(), &[a.clone(), c]);
    assert!(err.contains("whole.json: not a shard report"), "{err}");

    let foreign = dir.path().join("seed.json");
    std::fs::write(&foreign, r#"{"schema": "anvil-serving.benchmark/v1"}"#).unwrap();
    let garbage = dir.path().join("notes.txt");
    std::fs::write(&garbage, "hello").unwrap();
    let err = merge_fails(dir.path(), &[a, foreign, garbage]);
    assert!(err.contains("seed.json: not a servebench report"), "{err}");
    assert!(err.contains("notes.txt: not a JSON file"), "{err}");
}

#[test]
fn merge_recomputes_figures_from_the_union_of_records() {
    let plan = small_plan(4);
    // Shard 1 started its phase 100 ms after shard 0: its offsets move by 100 ms.
    let s0 = shard_report(
        plan.clone(),
        Some((0, 2)),
        vec![
            phase(
                "c",
                2,
                "2026-12-02T14:00:00.000Z",
                vec![
                    record(0, 0, 0.0, 10.0),
                    record(0, 1, 5.0, 20.0),
                    record(0, 2, 90.0, 90.0),
                ],
            ),
            phase(
                "c-again",
                2,
                "2026-12-02T14:00:10.000Z",
                vec![record(0, 0, 0.0, 10.0)],
            ),
        ],
    );
    let s1 = shard_report(
        plan,
        Some((1, 2)),
        vec![
            phase(
                "c",
                2,
                "2026-12-02T14:00:00.100Z",
                vec![record(1, 0, 0.0, 40.0), record(1, 1, 1.0, 50.0)],
            ),
            phase(
                "c-again",
                2,
                "2026-12-02T14:00:10.000Z",
                vec![record(1, 0, 0.0, 30.0)],
            ),
        ],
    );
    let merged = merge_reports(vec![("s0.json".into(), s0), ("s1.json".into(), s1)]).unwrap();
    assert_eq!(merged.merged_from.as_ref().map(Vec::len), Some(2));
    assert!(merged.shard.is_none());
    assert!(!merged.partial);
    let names: Vec<&str> = merged.phases.iter().map(|p| p.phase.as_str()).collect();
    assert_eq!(names, ["c", "c-again"]);
    let c = &merged.phases[0];
    assert_eq!(c.concurrency, Some(4));
    assert_eq!(c.started_at, "2026-12-02T14:00:00.000Z");
    assert_eq!(c.request_timings.len(), 5);
    let order: Vec<(&str, u64, f64)> = c
        .request_timings
        .iter()
        .map(|r| (r.request_id.as_str(), r.request_index, r.start_offset_ms))
        .collect();
    assert_eq!(
        order,
        [
            ("sharded-shard0of2-c-0", 0, 0.0),
            ("sharded-shard0of2-c-1", 1, 5.0),
            ("sharded-shard0of2-c-2", 2, 90.0),
            ("sharded-shard1of2-c-0", 3, 100.0),
            ("sharded-shard1of2-c-1", 4, 101.0),
        ]
    );
    // Exact nearest-rank percentiles over all five TTFTs, not an average of two shards'.
    let ttft = c.summary.ttft.expect("ttft distribution");
    assert_eq!(ttft.p50, 0.040);
    assert_eq!(ttft.max, 0.090);
    assert_eq!(ttft.samples, 5);
    assert_eq!(
        c.summary,
        metrics::summarize(&c.request_timings, PercentileMethod::NearestRank, None)
    );
    // The recheck pairs the merged summaries.
    assert_eq!(merged.rechecks.len(), 1);
    let p50 = merged.rechecks[0]
        .metrics
        .iter()
        .find(|m| m.metric == "ttft.p50")
        .unwrap();
    assert_eq!(p50.original, Some(0.040));
    assert_eq!(p50.recheck, Some(0.010));
}

fn write_plan(dir: &Path, yaml: &str) -> PathBuf {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

const TWO_PHASE_PLAN: &str = r#"
version: 1
name: sharded-cli
targets:
  sim:
    model: sim
    simulator: {}
workloads:
  chat:
    input_tokens: 32
    output_tokens: 8
defaults: {target: sim, workload: chat}
phases:
  - name: by-count
    concurrency: 3
    requests: 12
  - name: timed
    rate: {rps: 10}
    duration: 5s
"#;

#[test]
fn run_checks_shard_and_start_at_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), TWO_PHASE_PLAN);
    let out = servebench()
        .args(["run", "--dry-run", "--shard", "2/2"])
        .arg(&plan)
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        err.contains("shard index 2 is out of range for 2 shard(s)"),
        "{err}"
    );

    let out = servebench()
        .args(["run", "--dry-run", "--start-at", "next tuesday"])
        .arg(&plan)
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("RFC 3339"), "{err}");

    let out = servebench()
        .args([
            "run",
            "--dry-run",
            "--shard",
            "1/2",
            "--start-at",
            "2030-01-01T00:00:00Z",
        ])
        .arg(&plan)
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        err.contains("phase `by-count` is bounded only by a request count"),
        "{err}"
    );

    // Without --start-at the shard's schedule shows its share: 1 of 3 workers, 6 of 12
    // requests, half the rate.
    let out = servebench()
        .args(["run", "--dry-run", "--shard", "1/2"])
        .arg(&plan)
        .assert()
        .success();
    let schedule = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(schedule.contains("concurrency 1, 6 requests"), "{schedule}");
    assert!(schedule.contains("5 req/s"), "{schedule}");
}

/// Fixed simulator delays: no jitter, so shards and the whole run see the same server.
fn simulator() -> servebench::sim::SimConfig {
    servebench::sim::SimConfig {
        seed: Some(1),
        max_running: Some(16),
        prefill_tok_s: Some(50_000.0),
        decode_ms_per_token: Some(2.0),
        decode_ms_per_running: Some(0.0),
        chunk_tokens: Some(1),
        jitter: Some(0.0),
        ..Default::default()
    }
}

const E2E_PLAN: &str = r#"
version: 1
name: sharded-e2e
seed: 9
targets:
  sim:
    model: sim
    simulator: {}
workloads:
  chat:
    input_tokens: {mean: 64, stddev: 8, min: 32, max: 96}
    output_tokens: 8
    ignore_eos: true
defaults: {target: sim, workload: chat, drain_timeout: 20s}
phases:
  - name: c3
    concurrency: 3
    requests: 12
    warmup: {requests: 2}
  - name: c1
    concurrency: 1
    requests: 5
  - name: r40
    rate: {rps: 40, arrival: poisson}
    requests: 10
  - name: c3-recheck
    recheck: c3
    requests: 12
"#;

fn run_options(
    plan: &Path,
    addr: std::net::SocketAddr,
    out: PathBuf,
    shard: Option<servebench::shard::ShardSpec>,
    start_at: Option<chrono::DateTime<chrono::Utc>>,
) -> servebench::runner::RunOptions {
    servebench::runner::RunOptions {
        expand: ExpandOptions {
            target_overrides: vec![format!("sim=http://{addr}/v1")],
            ..ExpandOptions::default()
        },
        shard,
        start_at,
        ..crate::common::quiet_run_options(plan.to_path_buf(), &out)
    }
}

fn report_of(
    outcome: Result<servebench::runner::RunOutcome, servebench::runner::RunError>,
) -> (PathBuf, Report) {
    match outcome {
        Ok(servebench::runner::RunOutcome {
            report_path: Some(path),
            report: Some(report),
            interrupted: false,
        }) => (path, report),
        Ok(other) => panic!("the run did not finish: {other:?}"),
        Err(e) => panic!("the run failed: {e}"),
    }
}

/// Order statistics computed here from raw values, independently of the merge.
fn percentiles_of(mut values: Vec<f64>) -> [f64; 5] {
    values.sort_by(f64::total_cmp);
    let d = metrics::distribution(&values, PercentileMethod::Linear).expect("some values");
    [d.p50, d.p95, d.p99, d.min, d.max]
}

/// Equal up to the rounding of milliseconds to seconds.
fn assert_close(got: [f64; 5], want: [f64; 5], phase: &str) {
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g - w).abs() <= 1e-12 * w.abs(),
            "{phase}: {got:?} != {want:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_shards_merge_into_the_unsharded_run() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), E2E_PLAN);
    let (addr, sim) = servebench::sim::serve(simulator())
        .await
        .expect("simulator starts");
    let shard = |i| servebench::shard::ShardSpec::new(i, 2).ok();

    let (s0, s1) = tokio::join!(
        servebench::runner::run(run_options(
            &plan,
            addr,
            dir.path().join("s0"),
            shard(0),
            None
        )),
        servebench::runner::run(run_options(
            &plan,
            addr,
            dir.path().join("s1"),
            shard(1),
            None
        )),
    );
    let (s0_path, s0) = report_of(s0);
    let (s1_path, s1) = report_of(s1);
    let whole = report_of(
        servebench::runner::run(run_options(
            &plan,
            addr,
            dir.path().join("whole"),
            None,
            None,
        ))
        .await,
    )
    .1;
    sim.shutdown().await;

    // Each shard ran its share: c3 splits 2 + 1 workers and 6 + 6 requests; c1's single
    // worker and all 5 requests are shard 0's; r40 is 20 req/s and 5 requests each.
    let requests =
        |r: &Report| -> Vec<u64> { r.phases.iter().map(|p| p.summary.requests).collect() };
    assert_eq!(requests(&s0), [6, 5, 5, 6]);
    assert_eq!(requests(&s1), [6, 0, 5, 6]);
    assert_eq!(s1.phases[1].concurrency, Some(0));
    assert_eq!(s0.phases[2].rate_rps, Some(20.0));
    assert_eq!(
        s0.phases[0].warmup.requests + s1.phases[0].warmup.requests,
        2
    );
    // Each shard draws its own arrival stream.
    let schedule = |r: &Report| -> Vec<Option<f64>> {
        r.phases[2]
            .request_timings
            .iter()
            .map(|t| t.scheduled_offset_ms)
            .collect()
    };
    assert!(schedule(&s0).iter().all(Option::is_some));
    assert_ne!(schedule(&s0), schedule(&s1));
    let info = s1.shard.as_ref().expect("shard section");
    assert_eq!((info.index, info.count), (1, 2));
    assert_eq!(info.plan_sha256, plan_sha256(&s1.plan));

    let out = dir.path().join("merged.json");
    let status = servebench()
        .arg("merge")
        .arg(&s0_path)
        .arg(&s1_path)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let _ = status;
    let merged_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).expect("merged JSON");
    assert_valid_report(&merged_json);
    let s0_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&s0_path).unwrap()).expect("shard JSON");
    assert_valid_report(&s0_json);
    let merged: Report = serde_json::from_value(merged_json).expect("merged report");
    assert!(!merged.partial, "{:?}", merged.stop_reason);
    assert_eq!(merged.merged_from.as_ref().map(Vec::len), Some(2));

    // Same phases in the same order, same request counts, same loads as the whole run.
    let names = |r: &Report| -> Vec<String> { r.phases.iter().map(|p| p.phase.clone()).collect() };
    assert_eq!(names(&merged), names(&whole));
    assert_eq!(requests(&merged), requests(&whole));
    assert_eq!(requests(&merged), [12, 5, 10, 12]);
    for (m, w) in merged.phases.iter().zip(&whole.phases) {
        assert_eq!(m.concurrency, w.concurrency, "{}", m.phase);
        assert_eq!(m.rate_rps, w.rate_rps, "{}", m.phase);
        assert_eq!(m.summary.errors, 0, "{}", m.phase);
        assert_eq!(m.recheck_of, w.recheck_of);
    }
    assert_eq!(merged.rechecks.len(), whole.rechecks.len());
    assert_eq!(merged.rechecks[0].recheck, "c3-recheck");

    // Merged percentiles are those of the union of the shards' records.
    for (i, m) in merged.phases.iter().enumerate() {
        let union: Vec<&RequestRecord> = s0.phases[i]
            .request_timings
            .iter()
            .chain(&s1.phases[i].request_timings)
            .collect();
        assert_eq!(union.len(), m.request_timings.len());
        let ttft_s: Vec<f64> = union
            .iter()
            .filter_map(|r| r.ttft_ms)
            .map(|ms| ms / 1e3)
            .collect();
        let e2e_s: Vec<f64> = union.iter().map(|r| r.e2e_ms / 1e3).collect();
        let got = m.summary.ttft.expect("ttft");
        assert_close(
            [got.p50, got.p95, got.p99, got.min, got.max],
            percentiles_of(ttft_s),
            &m.phase,
        );
        let got = m.summary.e2e.expect("e2e");
        assert_close(
            [got.p50, got.p95, got.p99, got.min, got.max],
            percentiles_of(e2e_s),
            &m.phase,
        );
        // Records stay distinguishable: unique ids and indices 0..n.
        let mut ids: Vec<&str> = m
            .request_timings
            .iter()
            .map(|r| r.request_id.as_str())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), m.request_timings.len(), "{}", m.phase);
        let indices: Vec<u64> = m.request_timings.iter().map(|r| r.request_index).collect();
        assert_eq!(
            indices,
            (0..m.request_timings.len() as u64).collect::<Vec<_>>()
        );
    }
    // Per-shard facts survive the merge.
    let facts = &merged.merged_from.as_ref().unwrap()[1];
    assert_eq!(facts.index, 1);
    assert_eq!(facts.phases[1].requests, 0);
    assert_eq!(facts.phases[2].rate_rps, Some(20.0));
    assert!(facts.phases[2].send_lag_ms.is_some());
}

const ALIGNED_PLAN: &str = r#"
version: 1
name: sharded-aligned
targets:
  sim:
    model: sim
    simulator: {}
workloads:
  chat:
    input_tokens: 32
    output_tokens: 4
    ignore_eos: true
defaults: {target: sim, workload: chat, drain_timeout: 10s}
phases:
  - name: only
    concurrency: 2
    requests: 6
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_wait_for_the_common_start() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), ALIGNED_PLAN);
    let (addr, sim) = servebench::sim::serve(simulator())
        .await
        .expect("simulator starts");
    let start_at = chrono::Utc::now() + chrono::Duration::milliseconds(1500);
    let shard = |i| servebench::shard::ShardSpec::new(i, 2).ok();
    let (s0, s1) = tokio::join!(
        servebench::runner::run(run_options(
            &plan,
            addr,
            dir.path().join("s0"),
            shard(0),
            Some(start_at)
        )),
        servebench::runner::run(run_options(
            &plan,
            addr,
            dir.path().join("s1"),
            shard(1),
            Some(start_at)
        )),
    );
    sim.shutdown().await;
    for (_, report) in [report_of(s0), report_of(s1)] {
        let started = chrono::DateTime::parse_from_rfc3339(&report.phases[0].started_at).unwrap();
        // Not before the common start, and not long after it (generous for a loaded machine).
        let after_ms = (started.with_timezone(&chrono::Utc) - start_at).num_milliseconds();
        assert!(
            (0..1500).contains(&after_ms),
            "started {after_ms} ms after --start-at"
        );
        let info = report.shard.expect("shard section");
        assert_eq!(info.phase_starts.len(), 1);
        assert_eq!(info.phase_starts[0].phase, "only");
        assert!(info.phase_starts[0].late_ms < 1500.0);
    }
}

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/kubernetes")
        .join(name)
}

#[test]
fn the_kubernetes_example_plan_runs_aligned_shards() {
    let out = servebench()
        .args([
            "run",
            "--dry-run",
            "--shard",
            "1/3",
            "--start-at",
            "2030-01-01T00:00:00Z",
        ])
        .arg(example("plan.yaml"))
        .assert()
        .success();
    let schedule = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(schedule.contains("shard 1/3"), "{schedule}");
    // 20 s warmup + 2 min + 10 s cooldown + the drain allowance.
    let second = chrono::DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z").unwrap()
        + chrono::Duration::seconds(20 + 120 + 10)
        + chrono::Duration::from_std(servebench::shard::DRAIN_ALLOWANCE).unwrap();
    let line = format!(
        "c1024 starts at {}",
        second.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    assert!(schedule.contains(&line), "{line} not in {schedule}");
}

#[test]
fn the_kubernetes_manifests_run_indexed_shards_and_merge_them() {
    let load = |name: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(example(name)).unwrap();
        let text = text
            .replace("${RUN}", "r1")
            .replace("${SHARDS}", "4")
            .replace("${START_AT}", "2030-01-01T00:00:00Z");
        assert!(
            !text.contains("${"),
            "{name} has a placeholder the README does not set"
        );
        serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let shards = load("shards-job.yaml");
    assert_eq!(shards["kind"], "Job");
    assert_eq!(shards["spec"]["completionMode"], "Indexed");
    assert_eq!(shards["spec"]["completions"], 4);
    assert_eq!(shards["spec"]["parallelism"], 4);
    let container = &shards["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    let after = |flag: &str| args[args.iter().position(|a| *a == flag).unwrap() + 1];
    assert_eq!(args[..2], ["run", "/plan/plan.yaml"]);
    assert_eq!(after("--shard"), "$(JOB_COMPLETION_INDEX)/4");
    assert!(servebench::shard::parse_start_at(after("--start-at")).is_ok());
    assert_eq!(after("--out"), "/reports/r1/shard-$(JOB_COMPLETION_INDEX)");

    let merge = load("merge-job.yaml");
    let script = merge["spec"]["template"]["spec"]["containers"][0]["args"][0]
        .as_str()
        .unwrap();
    assert!(
        script.contains(
            "servebench merge /reports/r1/shard-*/report.json -o /reports/r1/merged.json"
        ),
        "{script}"
    );
    for name in ["storage.yaml", "reports-pod.yaml"] {
        assert!(load(name)["kind"].is_string(), "{name}");
    }
}

#[test]
fn a_phase_missing_from_an_interrupted_shard_makes_the_merge_partial() {
    let plan = small_plan(4);
    let whole = shard_report(
        plan.clone(),
        Some((0, 2)),
        vec![
            phase(
                "c",
                2,
                "2026-12-02T14:00:00.000Z",
                vec![record(0, 0, 0.0, 10.0)],
            ),
            phase(
                "c-again",
                2,
                "2026-12-02T14:00:10.000Z",
                vec![record(0, 0, 0.0, 10.0)],
            ),
        ],
    );
    let mut cut = shard_report(
        plan,
        Some((1, 2)),
        vec![phase(
            "c",
            2,
            "2026-12-02T14:00:00.000Z",
            vec![record(1, 0, 0.0, 20.0)],
        )],
    );
    cut.partial = true;
    cut.stop_reason = Some("interrupted".to_string());
    let merged = merge_reports(vec![("s0.json".into(), whole), ("s1.json".into(), cut)]).unwrap();
    assert!(merged.partial);
    assert!(!merged.phases[0].partial);
    assert!(merged.phases[1].partial);
    assert_eq!(merged.phases[1].summary.requests, 1);
    let reason = merged.stop_reason.unwrap_or_default();
    assert!(
        reason.contains("phase `c-again` is missing from shard(s) 1 (s1.json)"),
        "{reason}"
    );
    assert!(
        reason.contains("shard 1 (s1.json): interrupted"),
        "{reason}"
    );
}
