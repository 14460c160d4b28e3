//! Two shards running at once against the same replica, each scraping it as a backend: the
//! merged report counts every request once, although each shard's own window saw some of
//! the other's requests.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merged_backend_counters_count_overlapping_shards_once() {
    let _exclusive = crate::common::exclusive_run().await;
    let config = servebench::sim::SimConfig {
        seed: Some(1),
        prefill_tok_s: Some(50_000.0),
        decode_ms_per_token: Some(2.0),
        ..Default::default()
    };
    let (busy, busy_sim) = servebench::sim::serve(config.clone()).await.unwrap();
    let (idle, idle_sim) = servebench::sim::serve(config).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        &format!(
            "version: 1\nname: sharded-backends\nseed: 2\ntargets:\n  gw:\n    base_url: http://{busy}/v1\n\
             \x20   model: sim\n    tokenizer: {{source: simulator}}\n    metrics:\n\
             \x20     - {{url: http://{busy}/metrics, name: busy}}\n\
             \x20     - {{url: http://{idle}/metrics, name: idle}}\n\
             workloads:\n  w: {{input_tokens: 32, output_tokens: 8, ignore_eos: true}}\n\
             defaults: {{target: gw, workload: w}}\nphases:\n  - {{name: p, concurrency: 2, requests: 20}}\n"
        ),
    );
    let options = |i| servebench::runner::RunOptions {
        shard: servebench::shard::ShardSpec::new(i, 2).ok(),
        ..crate::common::quiet_run_options(plan.clone(), &dir.path().join(format!("s{i}")))
    };
    let (s0, s1) = tokio::join!(
        servebench::runner::run(options(0)),
        servebench::runner::run(options(1))
    );
    busy_sim.shutdown().await;
    idle_sim.shutdown().await;
    let report = |r: Result<servebench::runner::RunOutcome, _>| {
        r.expect("the shard runs").report.expect("a report")
    };
    let (s0, s1) = (report(s0), report(s1));
    let shard_counts: Vec<f64> = [&s0, &s1]
        .iter()
        .map(|r| r.phases[0].server_metrics.as_ref().unwrap().backends[0].requests)
        .collect();
    // Each shard sent 10; its window holds its own 10 and whatever of the other's overlapped.
    assert!(shard_counts.iter().all(|c| *c >= 10.0), "{shard_counts:?}");

    let merged = merge_reports(vec![("s0".into(), s0), ("s1".into(), s1)]).expect("merges");
    let value = serde_json::to_value(&merged).unwrap();
    assert_valid_report(&value);
    let phase = &merged.phases[0];
    assert_eq!(phase.summary.requests, 20);
    let m = phase
        .server_metrics
        .as_ref()
        .expect("merged backend figures");
    let rows: Vec<(&str, f64)> = m
        .backends
        .iter()
        .map(|b| (b.name.as_str(), b.requests))
        .collect();
    assert_eq!(
        rows,
        [("busy", 20.0), ("idle", 0.0)],
        "shards counted {shard_counts:?}"
    );
    assert_eq!(m.backends[0].share, Some(1.0));
    assert!(m.notes[0].contains("merged from 2 shards"), "{:?}", m.notes);
    let md = servebench::report::formats::markdown::render(&merged);
    assert!(md.contains("| p | busy | 20 |"), "{md}");
}
