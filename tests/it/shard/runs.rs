//! `run --shard` and `--start-at`: argument checks, two shards against one simulator merged
//! and compared with an unsharded run, and shards waiting for a common start.

use super::*;
use servebench::figure::Figure;

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
/// A shard run with nothing that shares a salt says how to share one; given `--salt`, or as
/// the only shard, it does not.
#[test]
fn a_shard_without_a_shared_salt_says_how_to_share_one() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), TWO_PHASE_PLAN);
    let stderr_of = |extra: &[&str]| {
        let out = servebench()
            .args(["run", "--dry-run"])
            .args(extra)
            .arg(&plan)
            .assert()
            .success();
        String::from_utf8_lossy(&out.get_output().stderr).into_owned()
    };
    let alone = stderr_of(&["--shard", "1/2"]);
    assert!(
        alone.contains("note: shard 1/2 draws its own prompt salt")
            && alone
                .contains("give every shard the same --salt VALUE, or the same --start-at TIME"),
        "{alone}"
    );
    for shared in [
        &["--shard", "1/2", "--salt", "5eed5eed"][..],
        &["--shard", "0/1"][..],
        &[][..],
    ] {
        let stderr = stderr_of(shared);
        assert!(!stderr.contains("salt"), "{shared:?}: {stderr}");
    }
}

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
            target_down: None,
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

    assert_each_shard_ran_its_share(&s0, &s1);
    let merged = merge_checked(&s0_path, &s1_path, &dir.path().join("merged.json"));
    assert_like_the_whole_run(&merged, &whole);
    assert_union_percentiles(&merged, &s0, &s1);
    let remerged = dir.path().join("remerged.json");
    assert_sampled_shards_merge_the_same([&s0_path, &s1_path], &merged, &remerged);

    // Per-shard facts survive the merge.
    let facts = &merged.merged_from.as_ref().unwrap()[1];
    assert_eq!(facts.index, 1);
    assert_eq!(facts.phases[1].requests, 0);
    assert_eq!(facts.phases[2].rate_rps, Some(20.0));
    assert!(facts.phases[2].send_lag_ms.is_some());
}

/// Each phase's request count.
fn requests(r: &Report) -> Vec<u64> {
    r.phases.iter().map(|p| p.summary.requests).collect()
}

/// Each shard ran its share: c3 splits 2 + 1 workers and 6 + 6 requests; c1's single worker
/// and all 5 requests are shard 0's; r40 is 20 req/s and 5 requests each.
fn assert_each_shard_ran_its_share(s0: &Report, s1: &Report) {
    assert_eq!(requests(s0), [6, 5, 5, 6]);
    assert_eq!(requests(s1), [6, 0, 5, 6]);
    assert_eq!(s1.phases[1].header.concurrency, Some(0));
    assert_eq!(s0.phases[2].header.rate_rps, Some(20.0));
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
    assert!(schedule(s0).iter().all(Option::is_some));
    assert_ne!(schedule(s0), schedule(s1));
    let info = s1.shard.as_ref().expect("shard section");
    assert_eq!((info.index, info.count), (1, 2));
    assert_eq!(info.plan_sha256, plan_sha256(&s1.plan));
}

/// `servebench merge` of the two shard reports into `out`, both valid reports.
fn merge_checked(s0_path: &Path, s1_path: &Path, out: &Path) -> Report {
    servebench()
        .arg("merge")
        .arg(s0_path)
        .arg(s1_path)
        .arg("-o")
        .arg(out)
        .assert()
        .success();
    let merged_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).expect("merged JSON");
    assert_valid_report(&merged_json);
    let s0_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s0_path).unwrap()).expect("shard JSON");
    assert_valid_report(&s0_json);
    let merged: Report = serde_json::from_value(merged_json).expect("merged report");
    assert!(!merged.span.partial, "{:?}", merged.span.stop_reason);
    assert_eq!(merged.merged_from.as_ref().map(Vec::len), Some(2));
    merged
}

/// Same phases in the same order, same request counts, same loads as the whole run.
fn assert_like_the_whole_run(merged: &Report, whole: &Report) {
    let names =
        |r: &Report| -> Vec<String> { r.phases.iter().map(|p| p.header.phase.clone()).collect() };
    assert_eq!(names(merged), names(whole));
    assert_eq!(requests(merged), requests(whole));
    assert_eq!(requests(merged), [12, 5, 10, 12]);
    for (m, w) in merged.phases.iter().zip(&whole.phases) {
        assert_eq!(
            m.header.concurrency, w.header.concurrency,
            "{}",
            m.header.phase
        );
        assert_eq!(m.header.rate_rps, w.header.rate_rps, "{}", m.header.phase);
        assert_eq!(m.summary.errors, 0, "{}", m.header.phase);
        assert_eq!(m.header.recheck_of, w.header.recheck_of);
    }
    assert_eq!(merged.rechecks.len(), whole.rechecks.len());
    assert_eq!(merged.rechecks[0].recheck, "c3-recheck");
}

/// Merged percentiles are those of the union of the shards' records.
fn assert_union_percentiles(merged: &Report, s0: &Report, s1: &Report) {
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
        let got = m.summary.distribution(Figure::Ttft).expect("ttft");
        assert_close(
            [got.p50, got.p95, got.p99, got.min, got.max],
            percentiles_of(ttft_s),
            &m.header.phase,
        );
        let got = m.summary.distribution(Figure::E2e).expect("e2e");
        assert_close(
            [got.p50, got.p95, got.p99, got.min, got.max],
            percentiles_of(e2e_s),
            &m.header.phase,
        );
        // Records stay distinguishable: unique ids and indices 0..n.
        let mut ids: Vec<&str> = m
            .request_timings
            .iter()
            .map(|r| r.request_id.as_str())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), m.request_timings.len(), "{}", m.header.phase);
        let indices: Vec<u64> = m.request_timings.iter().map(|r| r.request_index).collect();
        assert_eq!(
            indices,
            (0..m.request_timings.len() as u64).collect::<Vec<_>>()
        );
    }
}

/// Shard reports holding a sample of their records merge the same: every record comes from
/// each shard's records, whose `shard` column names the shard.
fn assert_sampled_shards_merge_the_same(shard_paths: [&Path; 2], merged: &Report, remerged: &Path) {
    for (i, shard_path) in shard_paths.into_iter().enumerate() {
        let rows = crate::common::record_rows(shard_path.parent().unwrap());
        assert!(!rows.is_empty());
        for row in rows {
            assert_eq!(row.shard, Some(i as u32));
        }
        let mut sampled: Report =
            serde_json::from_str(&std::fs::read_to_string(shard_path).unwrap()).unwrap();
        for phase in &mut sampled.phases {
            phase.request_timings.truncate(1);
        }
        std::fs::write(shard_path, serde_json::to_string(&sampled).unwrap()).unwrap();
    }
    servebench()
        .arg("merge")
        .arg(shard_paths[0])
        .arg(shard_paths[1])
        .arg("-o")
        .arg(remerged)
        .assert()
        .success();
    let remerged: Report =
        serde_json::from_str(&std::fs::read_to_string(remerged).unwrap()).unwrap();
    for (r, m) in remerged.phases.iter().zip(&merged.phases) {
        assert_eq!(r.summary.figures, m.summary.figures, "{}", m.header.phase);
        assert_eq!(r.request_timings.len(), m.request_timings.len());
    }
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
        let started =
            chrono::DateTime::parse_from_rfc3339(&report.phases[0].header.started_at).unwrap();
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
