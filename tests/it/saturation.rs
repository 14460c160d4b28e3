//! A deliberately overloaded rate probe is stopped well before its planned end and named
//! over-saturated, with why.

use servebench::runner::run;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_rate_probe_stops_early_and_is_named_over_saturated() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    // Two decode slots of ~170 ms each serve about 12 req/s; the probe sends 40.
    let yaml = "version: 1
name: overload
seed: 2
targets:
  sim:
    simulator: {max_running: 2, decode_ms_per_token: 5, prefill_tok_s: 1000000, jitter: 0}
workloads:
  w: {input_tokens: 32, output_tokens: 32, ignore_eos: true}
defaults: {target: sim, workload: w}
phases:
  - name: capacity
    search:
      load: rate
      min: 40
      max: 80
      slo: {ttft: {p99: 60s}}
      probe: {duration: 30s}
";
    let path = dir.path().join("plan.yaml");
    std::fs::write(&path, yaml).unwrap();
    let out = dir.path().join("out");
    run(crate::common::quiet_run_options(path, &out))
        .await
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let phase = &report["phases"][0];
    let probe = &phase["probe"];
    assert_eq!(probe["over_saturated"], true, "{probe}");
    assert_eq!(probe["stopped_early"], true, "{probe}");
    assert_eq!(probe["passed"], false);
    let why = probe["over_saturated_why"].as_str().unwrap();
    assert!(why.contains("req/s against 40.0 req/s sent"), "{why}");
    let stop = &phase["saturation_stop"];
    let at = stop["at_s"].as_f64().unwrap();
    assert!(at < 15.0, "stopped at {at} s of a 30 s probe");
    assert!(
        stop["achieved_rps"].as_f64().unwrap() < 0.9 * 40.0,
        "{stop}"
    );
    // Stopped early means no request started after the stop.
    let last_start = phase["request_timings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["start_offset_ms"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(
        last_start / 1e3 <= at + 0.1,
        "{last_start} ms after a stop at {at} s"
    );
    assert_eq!(report["searches"][0]["stop_reason"], "min failed");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("over-saturated: stopped after"), "{md}");
}
