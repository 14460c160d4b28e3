//! Server faults through `servebench::runner::run`: every simulator fault mode on both APIs,
//! and hand-made loopback servers that misbehave at the HTTP and socket level.

use crate::common::assert_valid_report;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use servebench::client::ErrorKind;
use servebench::report::Report;
use servebench::runner::{RunOptions, run};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn options(plan: PathBuf, out: &Path) -> RunOptions {
    crate::common::quiet_run_options(plan, out)
}

/// Runs `yaml` and checks what every faulty run must keep: a valid report whose records
/// match the journal one for one, and error counts that add up.
async fn run_checked(yaml: &str) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("plan.yaml");
    std::fs::write(&plan_path, yaml).unwrap();
    let out = dir.path().join("out");
    let outcome = run(options(plan_path, &out))
        .await
        .expect("the run completes");
    assert!(!outcome.interrupted);
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_valid_report(&value);
    let report: Report = serde_json::from_value(value).unwrap();
    let journal_ids: Vec<String> = crate::common::records_and_journal(&out)
        .into_iter()
        .filter(|v| v["window"] == "measured")
        .map(|v| {
            v["request_id"]
                .as_str()
                .expect("journal line names its request")
                .to_string()
        })
        .collect();
    let mut report_ids: Vec<String> = report
        .phases
        .iter()
        .flat_map(|p| p.request_timings.iter().map(|r| r.request_id.clone()))
        .collect();
    let mut sorted_journal = journal_ids.clone();
    sorted_journal.sort();
    report_ids.sort();
    assert_eq!(
        sorted_journal, report_ids,
        "journal and report hold the same requests"
    );
    for phase in &report.phases {
        assert_eq!(phase.request_timings.len() as u64, phase.summary.requests);
        let failed = phase
            .request_timings
            .iter()
            .filter(|r| r.error.is_some())
            .count() as u64;
        assert_eq!(phase.summary.errors, failed);
        assert_eq!(phase.summary.errors_by_kind.values().sum::<u64>(), failed);
    }
    report
}

/// (fault as YAML, the error kind each faulted request must get).
const FAULTS: [(&str, ErrorKind); 8] = [
    ("{kind: status, status: 503", ErrorKind::HttpStatus),
    ("{kind: rate_limit, seconds: 1", ErrorKind::RateLimited),
    ("{kind: reset_before_headers", ErrorKind::StreamBroken),
    ("{kind: disconnect_mid_stream", ErrorKind::StreamBroken),
    ("{kind: stall, seconds: 0.6", ErrorKind::IdleTimeout),
    ("{kind: malformed_event", ErrorKind::MalformedEvent),
    ("{kind: missing_done", ErrorKind::MissingDone),
    ("{kind: error_object", ErrorKind::ErrorObject),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_simulator_fault_on_both_apis_is_counted_with_its_kind() {
    for api in ["chat", "completions"] {
        for (fault, kind) in FAULTS {
            // Requests 2 and 5 of 6 (one at a time, so the numbering is the send order).
            let yaml = format!(
                "version: 1\nname: f\nseed: 1\ntargets:\n  sim:\n    api: {api}\n    timeout: {{idle: 200ms, total: 5s}}\n    simulator: {{seed: 2, prefill_tok_s: 1000000, decode_ms_per_token: 1, faults: [{fault}, at: [2, 5]}}]}}\nworkloads:\n  w:\n    input_tokens: 32\n    output_tokens: 8\n    ignore_eos: true\ndefaults: {{target: sim, workload: w}}\nphases:\n  - {{name: p, concurrency: 1, requests: 6}}\n"
            );
            let report = run_checked(&yaml).await;
            let phase = &report.phases[0];
            let label = format!("{api} × {fault}}}");
            assert_eq!(phase.request_timings.len(), 6, "{label}");
            assert_eq!(
                phase.summary.errors_by_kind.get(&kind).copied(),
                Some(2),
                "{label}: {:?}",
                phase.summary.errors_by_kind
            );
            assert_eq!(phase.summary.errors, 2, "{label}");
            let ok = phase.request_timings.iter().filter(|r| r.is_ok()).count();
            assert_eq!(ok, 4, "{label}");
        }
    }
}

/// Reads one HTTP request (headers and a `content-length` body); false on EOF or a GET.
async fn read_request(stream: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            // The run's identity probe (`/v1/models`, `/version`, `/props`) is not a
            // benchmark request: a 404, as a server without those routes answers.
            if head.starts_with("get ") {
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
                return false;
            }
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + length {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            return true;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// One well-formed chat stream with two content deltas.
const GOOD_STREAM: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\n\ndata: [DONE]\n\n";

/// Serves every connection of `listener` with `handle`, until the test ends.
fn serve_with<F, Fut>(listener: TcpListener, handle: F)
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(handle(stream));
        }
    });
}

async fn loopback() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

fn server_plan(addr: SocketAddr, timeouts: &str, phase: &str) -> String {
    format!(
        "version: 1\nname: h\nseed: 1\ntargets:\n  srv:\n    base_url: http://{addr}/v1\n    model: m\n    timeout: {timeouts}\nworkloads:\n  w:\n    input_tokens: 16\n    output_tokens: 4\ndefaults: {{target: srv, workload: w}}\nphases:\n  - {phase}\n"
    )
}

const TIMEOUTS: &str = "{first_byte: 300ms, idle: 300ms, total: 1500ms}";

/// Runs two requests against a hand-made server; both must fail with `kind`.
async fn both_fail_with(addr: SocketAddr, timeouts: &str, kind: ErrorKind) -> Report {
    let report = run_checked(&server_plan(
        addr,
        timeouts,
        "{name: p, concurrency: 2, requests: 2}",
    ))
    .await;
    let phase = &report.phases[0];
    assert_eq!(phase.request_timings.len(), 2);
    assert_eq!(
        phase.summary.errors_by_kind.get(&kind).copied(),
        Some(2),
        "{:?}",
        phase.summary.errors_by_kind
    );
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_accepts_and_never_answers_is_a_first_byte_timeout() {
    let (listener, addr) = loopback().await;
    serve_with(listener, |mut stream| async move {
        if !read_request(&mut stream).await {
            return;
        }
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(stream);
    });
    let report = both_fail_with(addr, TIMEOUTS, ErrorKind::FirstByteTimeout).await;
    for r in &report.phases[0].request_timings {
        assert!(r.e2e_ms < 1500.0, "gave up at {} ms", r.e2e_ms);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_sends_headers_then_nothing_is_an_idle_timeout() {
    let (listener, addr) = loopback().await;
    serve_with(listener, |mut stream| async move {
        if !read_request(&mut stream).await {
            return;
        }
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let _ = stream.write_all(head.as_bytes()).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    both_fail_with(addr, TIMEOUTS, ErrorKind::IdleTimeout).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_streams_forever_hits_the_total_timeout() {
    let (listener, addr) = loopback().await;
    serve_with(listener, |mut stream| async move {
        if !read_request(&mut stream).await {
            return;
        }
        let head = "HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
        if stream.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let event = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n";
        // Stops when the client hangs up (or after 60 s, well past any timeout here).
        for _ in 0..3000 {
            if stream.write_all(event.as_bytes()).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let report = both_fail_with(
        addr,
        "{first_byte: 300ms, idle: 300ms, total: 700ms}",
        ErrorKind::TotalTimeout,
    )
    .await;
    for r in &report.phases[0].request_timings {
        assert!(r.content_chunks > 5, "the stream did flow");
        assert!(r.e2e_ms < 1500.0, "gave up at {} ms", r.e2e_ms);
    }
}

/// The run's identity probe reads a server's answers to its GETs up to a cap: a server that
/// answers `/v1/models` with 50 MiB is not read to its end, and the run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identity_answer_of_fifty_mib_is_not_read_to_the_end() {
    let (listener, addr) = loopback().await;
    let written = Arc::new(AtomicU64::new(0));
    let counter = written.clone();
    serve_with(listener, move |mut stream| {
        let counter = counter.clone();
        async move {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match stream.read(&mut byte).await {
                    Ok(1) => head.push(byte[0]),
                    _ => return,
                }
            }
            if !head.starts_with(b"GET ") {
                // The benchmark's POST: its body, then a good stream.
                let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
                let length: usize = text
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0u8; length];
                if stream.read_exact(&mut body).await.is_err() {
                    return;
                }
                let reply = format!(
                    "HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n{GOOD_STREAM}"
                );
                let _ = stream.write_all(reply.as_bytes()).await;
                return;
            }
            let size = 50 * 1024 * 1024;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {size}\r\nconnection: close\r\n\r\n"
            );
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let block = vec![b' '; 64 * 1024];
            for _ in 0..(size / block.len()) {
                match stream.write_all(&block).await {
                    Ok(()) => counter.fetch_add(block.len() as u64, Ordering::Relaxed),
                    Err(_) => return,
                };
            }
        }
    });
    let report = run_checked(&server_plan(
        addr,
        TIMEOUTS,
        "{name: p, concurrency: 1, requests: 2}",
    ))
    .await;
    assert_eq!(report.phases[0].summary.errors, 0);
    assert_eq!(report.phases[0].summary.requests, 2);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = written.load(Ordering::Relaxed);
    assert!(sent < 20 * 1024 * 1024, "server pushed {sent} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifty_mib_event_hits_the_cap_and_is_not_read_to_the_end() {
    let (listener, addr) = loopback().await;
    let written = Arc::new(AtomicU64::new(0));
    let counter = written.clone();
    serve_with(listener, move |mut stream| {
        let counter = counter.clone();
        async move {
            if !read_request(&mut stream).await {
                return;
            }
            let head = "HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let block = vec![b'a'; 64 * 1024];
            for _ in 0..(50 * 16) {
                match stream.write_all(&block).await {
                    Ok(()) => counter.fetch_add(block.len() as u64, Ordering::Relaxed),
                    Err(_) => return,
                };
            }
            let _ = stream.write_all(b"\"}}]}\n\n").await;
        }
    });
    let report = run_checked(&server_plan(
        addr,
        "{first_byte: 2s, idle: 2s, total: 10s}",
        "{name: p, concurrency: 1, requests: 1}",
    ))
    .await;
    let record = &report.phases[0].request_timings[0];
    let error = record.error.as_ref().expect("the request fails");
    assert_eq!(error.kind, ErrorKind::MalformedEvent, "{error:?}");
    // The client stopped reading at the 1 MiB cap: the server could not push the whole
    // 50 MiB (socket buffers hold a few MiB at most).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = written.load(Ordering::Relaxed);
    assert!(sent < 20 * 1024 * 1024, "server pushed {sent} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_in_content_fails_that_request_cleanly() {
    let (listener, addr) = loopback().await;
    serve_with(listener, |mut stream| async move {
        if !read_request(&mut stream).await {
            return;
        }
        let mut body = b"HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n".to_vec();
        body.extend_from_slice(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\xfe\xc3\"}}]}\n\ndata: [DONE]\n\n");
        let _ = stream.write_all(&body).await;
    });
    let report = both_fail_with(addr, TIMEOUTS, ErrorKind::MalformedEvent).await;
    for r in &report.phases[0].request_timings {
        let message = &r.error.as_ref().unwrap().message;
        // The excerpt is valid text: the bad bytes became replacement characters.
        assert!(message.contains('\u{fffd}'), "{message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_1_0_without_keep_alive_works_request_after_request() {
    let (listener, addr) = loopback().await;
    let connections = Arc::new(AtomicU64::new(0));
    let counter = connections.clone();
    serve_with(listener, move |mut stream| {
        counter.fetch_add(1, Ordering::Relaxed);
        async move {
            // One request per connection, then close: the HTTP/1.0 way.
            if read_request(&mut stream).await {
                let head = "HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(GOOD_STREAM.as_bytes()).await;
            }
        }
    });
    let report = run_checked(&server_plan(
        addr,
        TIMEOUTS,
        "{name: p, concurrency: 2, requests: 10}",
    ))
    .await;
    let phase = &report.phases[0];
    assert_eq!(
        phase.summary.errors, 0,
        "{:?}",
        phase.summary.errors_by_kind
    );
    assert_eq!(phase.request_timings.len(), 10);
    for r in &phase.request_timings {
        assert_eq!(r.content_chunks, 2);
    }
    assert!(connections.load(Ordering::Relaxed) >= 10);
}

/// Answers every request with a short good stream, counting them, until its task is
/// aborted: that drops the listener and every open connection.
async fn serve_good(listener: TcpListener, served: Arc<AtomicU64>) {
    let mut tasks = tokio::task::JoinSet::new();
    while let Ok((mut stream, _)) = listener.accept().await {
        let served = served.clone();
        tasks.spawn(async move {
            if read_request(&mut stream).await {
                let head = "HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(GOOD_STREAM.as_bytes()).await;
                served.fetch_add(1, Ordering::SeqCst);
            }
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_mid_phase_and_comes_back_counts_errors_only_while_down() {
    let (listener, addr) = loopback().await;
    let served = Arc::new(AtomicU64::new(0));
    let server = tokio::spawn(serve_good(listener, served.clone()));
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("plan.yaml");
    // Open loop at 40/s for 2.4 s: the request count does not depend on how fast failures are.
    std::fs::write(
        &plan_path,
        server_plan(
            addr,
            TIMEOUTS,
            "{name: p, rate: {rps: 40, arrival: constant, max_concurrency: 8}, duration: 2400ms}",
        ),
    )
    .unwrap();
    let back = Arc::new(AtomicBool::new(false));
    let flag = back.clone();
    let counter = served.clone();
    let outage = tokio::spawn(async move {
        // Down once ten requests have succeeded, for 800 ms, then back on the same port.
        while counter.load(Ordering::SeqCst) < 10 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        server.abort();
        let _ = server.await;
        tokio::time::sleep(Duration::from_millis(800)).await;
        let listener = TcpListener::bind(addr).await.expect("rebind the same port");
        flag.store(true, Ordering::SeqCst);
        serve_good(listener, counter).await;
    });
    let out = dir.path().join("out");
    run(options(plan_path, &out))
        .await
        .expect("the run completes");
    outage.abort();
    assert!(back.load(Ordering::SeqCst), "the server came back");
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_valid_report(&value);
    let report: Report = serde_json::from_value(value).unwrap();
    let phase = &report.phases[0];
    let mut records = phase.request_timings.clone();
    records.sort_by(|a, b| a.start_offset_ms.total_cmp(&b.start_offset_ms));
    assert!(records.len() >= 60, "{} requests", records.len());
    // In start order: successes, then one unbroken run of failures, then successes again.
    let first_error = records
        .iter()
        .position(|r| !r.is_ok())
        .expect("errors while down");
    let last_error = records.iter().rposition(|r| !r.is_ok()).unwrap();
    assert!(
        first_error >= 10,
        "only {first_error} successes before the outage"
    );
    let after = records.len() - last_error - 1;
    assert!(after >= 10, "only {after} successes after the outage");
    for r in &records[first_error..=last_error] {
        let kind = r.error.as_ref().map(|e| e.kind);
        // Requests in flight when it died broke; later ones found nobody listening.
        assert!(
            matches!(kind, Some(ErrorKind::Connect | ErrorKind::StreamBroken)),
            "while down: {r:?}"
        );
    }
    let connect = phase
        .summary
        .errors_by_kind
        .get(&ErrorKind::Connect)
        .copied();
    assert!(connect >= Some(15), "{:?}", phase.summary.errors_by_kind);
}

/// A simulator plan of six one-at-a-time requests with these `faults` entries.
fn cause_plan(faults: &str) -> String {
    format!(
        "version: 1\nname: causes\nseed: 1\ntargets:\n  sim:\n    simulator: {{seed: 2, prefill_tok_s: 1000000, decode_ms_per_token: 1, faults: [{faults}]}}\nworkloads:\n  w:\n    input_tokens: 32\n    output_tokens: 8\n    ignore_eos: true\ndefaults: {{target: sim, workload: w}}\nphases:\n  - {{name: p, concurrency: 1, requests: 6}}\n"
    )
}

/// Runs `yaml` into `dir/name/`; the report.json path.
async fn run_into(dir: &Path, name: &str, yaml: &str) -> PathBuf {
    let plan_path = dir.join(format!("{name}.yaml"));
    std::fs::write(&plan_path, yaml).unwrap();
    let out = dir.join(name);
    run(options(plan_path, &out))
        .await
        .expect("the run completes");
    out.join("report.json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_400_keeps_its_body_code_type_and_cause_in_every_report() {
    let dir = tempfile::tempdir().unwrap();
    let faulty = run_into(
        dir.path(),
        "faulty",
        &cause_plan("{kind: status, status: 400, at: [2, 5]}, {kind: error_object, at: [3]}"),
    )
    .await;
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&faulty).unwrap()).unwrap();
    assert_valid_report(&value);
    let phase = &value["phases"][0];

    assert_failed_records_keep_their_errors(phase);
    assert_causes_in_summary(phase);
    assert_causes_rendered(faulty.parent().unwrap());
    let clean = run_into(dir.path(), "clean", &cause_plan("")).await;
    assert_compare_names_new_causes(&clean, &faulty);
}

/// The failed records keep the body as the simulator sent it, its code and type; the
/// successful ones carry no error fields at all.
fn assert_failed_records_keep_their_errors(phase: &serde_json::Value) {
    let failed: Vec<&serde_json::Value> = phase["request_timings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["error"]["status"] == 400)
        .collect();
    assert_eq!(failed.len(), 2, "{phase}");
    let error = &failed[0]["error"];
    assert_eq!(error["kind"], "http_status");
    assert_eq!(error["type"], "BadRequestError", "{error}");
    assert_eq!(error["code"], "400", "{error}");
    let body: serde_json::Value =
        serde_json::from_str(error["body"].as_str().expect("the body is kept")).unwrap();
    assert_eq!(body["error"]["message"], "simulated server error");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("HTTP 400 Bad Request: simulated server error"),
        "{error}"
    );
    // Successful requests carry no error fields at all.
    let ok = phase["request_timings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r.get("error").is_none())
        .expect("a request succeeded");
    assert!(ok.get("body").is_none());
}

/// The summary (flattened into the phase object) groups the errors by cause, most frequent
/// first.
fn assert_causes_in_summary(phase: &serde_json::Value) {
    let causes = phase["errors_by_cause"].as_array().unwrap();
    assert_eq!(causes.len(), 2, "{causes:?}");
    assert_eq!(causes[0]["cause"], "HTTP 400 · BadRequestError");
    assert_eq!(causes[0]["kind"], "http_status");
    assert_eq!(causes[0]["status"], 400);
    assert_eq!(causes[0]["count"], 2);
    assert!(
        causes[0]["example"]
            .as_str()
            .unwrap()
            .starts_with("HTTP 400 Bad Request: simulated server error")
    );
    assert_eq!(
        causes[1]["cause"],
        "error_object · InternalServerError · 500"
    );
    assert_eq!(causes[1]["count"], 1);
    let event = &phase["request_timings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["error"]["kind"] == "error_object")
        .unwrap()["error"];
    assert!(
        event["body"]
            .as_str()
            .unwrap()
            .contains("simulated error inside a 200 response"),
        "{event}"
    );
}

/// The markdown and the HTML in `out` show the causes.
fn assert_causes_rendered(out: &Path) {
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(markdown.contains("### Errors by cause"), "{markdown}");
    assert!(
        markdown.contains("| p | **2** | HTTP 400 · BadRequestError | HTTP 400 Bad Request: simulated server error"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| p | **1** | error\\_object · InternalServerError · 500 |"),
        "{markdown}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<h3>Errors by cause</h3>"), "{html}");
    assert!(
        html.contains("<td>HTTP 400 · BadRequestError</td>"),
        "{html}"
    );
}

/// Compared against the clean run, the faulty one's causes are new; the other way round,
/// none are.
fn assert_compare_names_new_causes(clean: &Path, faulty: &Path) {
    let read = |p: &Path| servebench::report::read_report(p).unwrap();
    let (clean_report, faulty_report) = (read(clean), read(faulty));
    let comparison =
        servebench::report::compare::compare("clean", &clean_report, "faulty", &faulty_report, &[]);
    let new: Vec<&str> = comparison.phases[0]
        .new_error_causes
        .iter()
        .map(|c| c.cause.as_str())
        .collect();
    assert_eq!(
        new,
        [
            "HTTP 400 · BadRequestError",
            "error_object · InternalServerError · 500"
        ]
    );
    let text = servebench::report::render_comparison(&comparison);
    assert!(text.contains("New error causes (not in base):"), "{text}");
    assert!(
        text.contains(
            "| **2** | HTTP 400 · BadRequestError | HTTP 400 Bad Request: simulated server error"
        ),
        "{text}"
    );
    let json = serde_json::to_value(&comparison).unwrap();
    assert_eq!(json["phases"][0]["new_error_causes"][0]["count"], 2);
    let back =
        servebench::report::compare::compare("faulty", &faulty_report, "clean", &clean_report, &[]);
    assert!(back.phases[0].new_error_causes.is_empty());
    assert!(!servebench::report::render_comparison(&back).contains("New error causes"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_body_is_kept_with_its_secrets_redacted() {
    let (listener, addr) = loopback().await;
    serve_with(listener, |mut stream| async move {
        if read_request(&mut stream).await {
            let body = r#"{"error":{"message":"key hidden-test-value-42 is not valid","type":"invalid_request_error","code":"invalid_api_key"}}"#;
            let head = format!(
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
        }
    });
    let yaml = server_plan(addr, TIMEOUTS, "{name: p, concurrency: 1, requests: 2}").replace(
        "    model: m\n",
        "    model: m\n    headers: {X-Api-Key: hidden-test-value-42}\n",
    );
    let report = run_checked(&yaml).await;
    let phase = &report.phases[0];
    for r in &phase.request_timings {
        let error = r.error.as_ref().expect("refused");
        let body = error.body.as_deref().expect("the body is kept");
        assert!(!body.contains("hidden-test-value-42"), "{body}");
        assert!(body.contains(servebench::client::REDACTED), "{body}");
        assert!(!error.message.contains("hidden-test-value-42"));
        assert_eq!(error.code.as_deref(), Some("invalid_api_key"));
        assert_eq!(error.error_type.as_deref(), Some("invalid_request_error"));
    }
    let causes = &phase.summary.errors_by_cause;
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(
        causes[0].cause,
        "HTTP 401 · invalid_request_error · invalid_api_key"
    );
    assert_eq!(causes[0].count, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_error_body_is_its_own_cause() {
    let (listener, addr) = loopback().await;
    serve_with(listener, |mut stream| async move {
        while read_request(&mut stream).await {
            let head = "HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
        }
    });
    let report = run_checked(&server_plan(
        addr,
        TIMEOUTS,
        "{name: p, concurrency: 1, requests: 3}",
    ))
    .await;
    let phase = &report.phases[0];
    for r in &phase.request_timings {
        let error = r.error.as_ref().expect("refused");
        assert_eq!(error.body.as_deref(), Some(""), "{error:?}");
        assert_eq!(
            (error.code.as_deref(), error.error_type.as_deref()),
            (None, None)
        );
    }
    let causes: Vec<(&str, u64)> = phase
        .summary
        .errors_by_cause
        .iter()
        .map(|c| (c.cause.as_str(), c.count))
        .collect();
    assert_eq!(causes, [("HTTP 401 · empty body", 3)]);
}

/// A phase in which every request failed fails the run (exit 3) and says which; a phase the
/// plan marks `expect_errors: true` does not.
#[test]
fn a_phase_where_every_request_failed_exits_3_unless_expected() {
    let dir = tempfile::tempdir().unwrap();
    for (expect, code) in [(false, 3), (true, 0)] {
        let plan = dir.path().join(format!("plan-{expect}.yaml"));
        std::fs::write(
            &plan,
            format!(
                "version: 1\nname: all-fail\ntargets:\n  sim:\n    simulator: {{faults: [{{kind: status, status: 503, probability: 1}}]}}\n\
                 workloads:\n  w: {{input_tokens: 32, output_tokens: 4}}\n\
                 defaults: {{target: sim, workload: w}}\n\
                 phases:\n  - {{name: refused, concurrency: 1, requests: 5, expect_errors: {expect}}}\n"
            ),
        )
        .unwrap();
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin!("servebench"))
            .args(["run", "-q", "--no-calibrate", "--output"])
            .arg(dir.path().join(format!("out-{expect}")))
            .arg(&plan)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{stderr}");
        assert_eq!(
            stderr.contains("every request failed in phase `refused`"),
            !expect,
            "{stderr}"
        );
    }
}
