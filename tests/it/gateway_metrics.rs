//! Several metrics endpoints per target, against simulators on loopback: backend figures
//! summed, per-backend shares, and endpoints that are down or answer garbage.

use servebench::report::Report;
use servebench::runner::run;
use servebench::sim::{SimConfig, serve};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_down_or_garbage_endpoint_is_a_warning_and_the_phase_stands() {
    let _exclusive = crate::common::exclusive_run().await;
    let config = SimConfig {
        prefill_tok_s: Some(1_000_000.0),
        decode_ms_per_token: Some(1.0),
        ..SimConfig::default()
    };
    let (front, _front_sim) = serve(config.clone()).await.unwrap();
    let (idle, _idle_sim) = serve(config).await.unwrap();
    // Nothing listens on a port just released.
    let down = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = format!(
        "version: 1\nname: t\nseed: 3\ntargets:\n  gw:\n    base_url: http://{front}/v1\n    model: sim\n\
         \x20   tokenizer: {{source: simulator}}\n    metrics:\n\
         \x20     - {{url: http://{front}/metrics, role: backend, name: a}}\n\
         \x20     - {{url: http://{idle}/metrics, role: backend, name: b}}\n\
         \x20     - {{url: http://{down}/metrics, role: backend, name: down}}\n\
         \x20     - {{url: http://{front}/v1/models, role: gateway, name: garbage}}\n\
         workloads:\n  w:\n    input_tokens: 64\n    output_tokens: 8\n    ignore_eos: true\n\
         defaults: {{target: gw, workload: w}}\nphases:\n  - {{name: p, concurrency: 4, requests: 40}}\n"
    );
    let path = dir.path().join("plan.yaml");
    std::fs::write(&path, plan).unwrap();
    run(crate::common::quiet_run_options(path, dir.path()))
        .await
        .expect("the run succeeds");
    let text = std::fs::read_to_string(dir.path().join("report.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    crate::common::assert_valid_report(&value);
    let report: Report = serde_json::from_value(value).unwrap();
    let phase = &report.phases[0];
    assert_eq!(phase.summary.requests, 40);
    assert_eq!(phase.summary.errors, 0);
    let m = phase.server_metrics.as_ref().expect("server metrics");
    assert_eq!(m.warnings.len(), 2, "{:?}", m.warnings);
    assert!(m.warnings.iter().any(|w| w.contains("`down`")));
    assert!(m.warnings.iter().any(|w| w.contains("`garbage`")));
    let requests: Vec<_> = m
        .backends
        .iter()
        .map(|b| (b.name.as_str(), b.requests))
        .collect();
    assert_eq!(requests, [("a", 40.0), ("b", 0.0)]);
    let shares: f64 = m.backends.iter().filter_map(|b| b.share).sum();
    assert_eq!(shares, 1.0);
    assert_eq!(m.backend_skew, Some(2.0));
    // No gateway counts per worker here, so the replicas' own counters say.
    assert_eq!(m.backend_requests_from.as_deref(), Some("backends"));
    // The backends' token counters are summed; the idle one adds nothing.
    let own = &m.endpoints.iter().find(|e| e.name == "a").unwrap().metrics;
    let prompt = own.normalized_counter_deltas.get("prompt_tokens").copied();
    // Label sets kept: the finish reasons of the simulator's request counter.
    let by_reason = &own.labelled_counter_deltas["vllm:request_success_total"];
    assert_eq!(by_reason.values().sum::<f64>(), 40.0, "{by_reason:?}");
    assert_eq!(
        by_reason.get("finished_reason=\"length\",model_name=\"sim\""),
        Some(&40.0)
    );
    assert!(prompt.is_some_and(|p| p >= 40.0 * 64.0), "{prompt:?}");
    assert_eq!(
        m.normalized_counter_deltas.get("prompt_tokens").copied(),
        prompt
    );
    // Sampled during the window too: the two endpoints fail every sample, which is counted
    // and shown; with a backend down the server as a whole has no sample, each endpoint
    // that answered has its own.
    let sampling = m.sampling.as_ref().expect("sampled by default");
    assert_eq!(sampling.samples, 0, "{sampling:?}");
    assert!(sampling.failed >= 4, "{sampling:?}");
    assert_eq!(
        own.gauges_from,
        servebench::report::GaugesFrom::Window,
        "{own:?}"
    );
    assert!(own.gauges.contains_key("vllm:num_requests_running"));
    let md = servebench::report::formats::markdown::render(&report);
    assert!(md.contains("failed scrapes during the window"), "{md}");
    assert!(md.contains("## Backends behind the gateway"), "{md}");
    assert!(md.contains("metrics endpoint \\`down\\` left out"), "{md}");
    let html = servebench::report::formats::html::render(&report);
    assert!(html.contains("Backends behind the gateway"));
    assert!(html.contains("Requests per backend, by phase"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_interval_records_a_time_series_of_the_simulator() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    // 20 tokens at 5 ms each: no request ends within a scrape's few milliseconds of the start.
    let plan = "version: 1\nname: t\nseed: 3\ntargets:\n  sim:\n    model: sim\n    metrics_interval: 100ms\n\
         \x20   simulator: {decode_ms_per_token: 5, prefill_tok_s: 1000000, jitter: 0}\n\
         workloads:\n  w: {input_tokens: 32, output_tokens: 20, ignore_eos: true}\n\
         defaults: {target: sim, workload: w}\nphases:\n  - {name: p, concurrency: 4, duration: 1s}\n";
    let path = dir.path().join("plan.yaml");
    std::fs::write(&path, plan).unwrap();
    run(crate::common::quiet_run_options(path, dir.path()))
        .await
        .expect("the run succeeds");
    let text = std::fs::read_to_string(dir.path().join("report.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    crate::common::assert_valid_report(&value);
    let report: Report = serde_json::from_value(value).unwrap();
    let phase = &report.phases[0];
    let timeline = &phase
        .server_metrics
        .as_ref()
        .expect("server metrics")
        .timeline;
    // One scrape at the start, every 100 ms over a window of at least 1 s, one at the end.
    assert!(timeline.len() >= 3, "{timeline:?}");
    assert!(
        timeline.windows(2).all(|w| w[0].t_s < w[1].t_s),
        "{timeline:?}"
    );
    assert!(timeline[0].requests_per_s.is_none());
    // The rates between scrapes add up to every request of the window.
    let completed: f64 = timeline
        .windows(2)
        .map(|w| w[1].requests_per_s.unwrap() * (w[1].t_s - w[0].t_s))
        .sum();
    assert!(
        (completed - phase.summary.requests as f64).abs() < 1e-6,
        "{completed} vs {} requests: {timeline:?}",
        phase.summary.requests
    );
    let running = timeline.iter().filter_map(|p| p.requests_running);
    assert!(running.clone().all(|r| r <= 4.0), "{timeline:?}");
    assert!(running.fold(0.0, f64::max) > 0.0, "{timeline:?}");
    // The summary's range is the samples', not the idle scrapes' around the window.
    let m = phase.server_metrics.as_ref().unwrap();
    assert_eq!(m.gauges_from, servebench::report::GaugesFrom::Window);
    assert_eq!(
        m.sampling.as_ref().map(|s| s.samples),
        Some(timeline.len() as u64)
    );
    let range = m.normalized_gauges["requests_running"];
    assert!(range.max > 0.0 && range.max <= 4.0, "{range:?}");
    let html = servebench::report::formats::html::render(&report);
    assert!(html.contains("p: requests on the server"));
}
