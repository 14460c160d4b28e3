//! Endpoints as they are deployed: nginx terminating TLS with a test CA in front of the
//! simulator, client certificates, a buffering proxy, and a custom API-key header.

use std::path::{Path, PathBuf};

use servebench::figure::Figure;
use servebench::report::{PhaseResult, Report};
use servebench::runner::run;
use servebench::sim::{SimConfig, SimHandle, serve, serve_unix};

use crate::common::{assert_valid_report, exclusive_run, files_under, quiet_run_options};
use crate::nginx_support::{Nginx, Site, TestPki, find_nginx};
use crate::proxy_support::TestProxy;

/// One target per `(name, base_url, extra keys)`, and one phase per target, in that order.
fn plan(targets: &[(&str, String, &str)], phase: &str) -> String {
    let mut yaml = String::from("version: 1\nname: edge\nseed: 1\ntargets:\n");
    for (name, url, extra) in targets {
        yaml.push_str(&format!(
            "  {name}:\n    base_url: {url}\n    model: sim\n    tokenizer: simulator\n    \
             timeout: {{total: 20s}}\n{extra}"
        ));
    }
    yaml.push_str(
        "workloads:\n  w: {input_tokens: 16, output_tokens: 12, ignore_eos: true}\n\
         defaults: {workload: w}\nphases:\n",
    );
    for (name, _, _) in targets {
        yaml.push_str(&format!("  - {{name: {name}, target: {name}, {phase}}}\n"));
    }
    yaml
}

/// Run `yaml` written as `dir/plan.yaml`; the report and the output directory.
async fn run_plan(dir: &Path, yaml: &str) -> (Report, PathBuf) {
    let plan_path = dir.join("plan.yaml");
    std::fs::write(&plan_path, yaml).unwrap();
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    run(quiet_run_options(plan_path, &out))
        .await
        .expect("the run completes");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_valid_report(&value);
    (serde_json::from_value(value).unwrap(), out)
}

/// Run `yaml` whose target fails the connection check before the first phase: the message
/// the run stopped with (nothing was sent, so no report was written).
async fn refused_before_sending(dir: &Path, yaml: &str) -> String {
    let plan_path = dir.join("plan.yaml");
    std::fs::write(&plan_path, yaml).unwrap();
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    match run(quiet_run_options(plan_path, &out)).await {
        Err(servebench::runner::RunError::Failed(message)) => {
            assert!(!out.join("report.json").exists(), "{message}");
            message
        }
        other => panic!("the run went on past the connection check: {other:?}"),
    }
}

fn error_messages(phase: &PhaseResult) -> Vec<String> {
    phase
        .request_timings
        .iter()
        .filter_map(|r| r.error.as_ref().map(|e| e.message.clone()))
        .collect()
}

async fn simulator(decode_ms_per_token: f64) -> (std::net::SocketAddr, SimHandle) {
    serve(SimConfig {
        seed: Some(3),
        decode_ms_per_token: Some(decode_ms_per_token),
        jitter: Some(0.0),
        max_running: Some(64),
        ..SimConfig::default()
    })
    .await
    .unwrap()
}

fn assert_absent(secret: &str, files: &[(PathBuf, Vec<u8>)]) {
    for (path, bytes) in files {
        assert!(
            memchr::memmem::find(bytes, secret.as_bytes()).is_none(),
            "{} holds a secret",
            path.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_behind_nginx_needs_the_ca_and_says_so() {
    let Some(binary) = find_nginx("the TLS endpoint test") else {
        return;
    };
    let _exclusive = exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let (addr, sim) = simulator(0.5).await;
    let nginx = Nginx::start(&binary, dir.path(), &pki, addr, &[Site::default()]);
    let url = format!("https://127.0.0.1:{}/v1", nginx.ports[0]);
    let phase = "concurrency: 2, requests: 10";

    // The CA named relative to the plan: every request succeeds, and the metrics scrape
    // (side traffic) uses the same TLS settings.
    let extra = format!(
        "    tls: {{ca_cert: ca.pem}}\n    metrics: https://127.0.0.1:{}/metrics\n    connection: {{warm: 0}}\n",
        nginx.ports[0]
    );
    let (report, _) = run_plan(dir.path(), &plan(&[("edge", url.clone(), &extra)], phase)).await;
    let p = &report.phases[0];
    assert_eq!(p.summary.requests, 10);
    assert_eq!(p.summary.errors, 0, "{:?}", error_messages(p));
    assert!(p.server_metrics.is_some(), "the scrape through TLS failed");
    // Not warmed: set-up times are on the requests that opened a connection, and only on
    // those.
    for r in &p.request_timings {
        let fresh = r.new_connection == Some(true);
        assert_eq!(r.connect_ms.is_some(), fresh, "{r:?}");
        assert_eq!(r.tls_ms.is_some(), fresh, "{r:?}");
        if let Some(tls_ms) = r.tls_ms {
            assert!(tls_ms > 0.0 && tls_ms < r.e2e_ms, "{r:?}");
        }
    }
    assert!(p.request_timings.iter().any(|r| r.tls_ms.is_some()));
    assert_eq!(report.endpoints["edge"].tls_verified, Some(true));

    // Without it: public and system roots only, and the connection check before the first
    // phase stops the run with a message that names the fix.
    let message =
        refused_before_sending(dir.path(), &plan(&[("edge", url.clone(), "")], phase)).await;
    assert!(
        message.contains("certificate for 127.0.0.1 not trusted: unknown issuer; set tls.ca_cert"),
        "{message}"
    );

    // A plain-http target records nothing about TLS.
    let direct = format!("http://{addr}/v1");
    let unwarmed = "    connection: {warm: 0}\n";
    let (report, _) = run_plan(dir.path(), &plan(&[("direct", direct, unwarmed)], phase)).await;
    let p = &report.phases[0];
    assert_eq!(p.summary.errors, 0, "{:?}", error_messages(p));
    assert!(p.request_timings.iter().all(|r| r.tls_ms.is_none()));
    assert!(p.request_timings.iter().any(|r| r.connect_ms.is_some()));
    assert!(report.endpoints.is_empty());
    drop(nginx);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates_are_presented_and_never_written() {
    let Some(binary) = find_nginx("the mutual TLS test") else {
        return;
    };
    let _exclusive = exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let (addr, sim) = simulator(0.5).await;
    let site = Site {
        verify_client: true,
        ..Site::default()
    };
    let nginx = Nginx::start(&binary, dir.path(), &pki, addr, &[site]);
    let url = format!("https://127.0.0.1:{}/v1", nginx.ports[0]);
    let phase = "concurrency: 2, requests: 6";

    // An absolute path and a relative one (to the plan's directory).
    let with_cert = format!(
        "    tls: {{ca_cert: ca.pem, client_cert: {}, client_key: client.key}}\n",
        pki.client_cert.display()
    );
    let with_cert = with_cert.as_str();
    let (report, out) = run_plan(
        dir.path(),
        &plan(&[("edge", url.clone(), with_cert)], phase),
    )
    .await;
    let p = &report.phases[0];
    assert_eq!(p.summary.errors, 0, "{:?}", error_messages(p));
    assert!(report.endpoints["edge"].client_certificate);
    // The key's body (between its PEM armour) appears in no artefact.
    let key = std::fs::read_to_string(&pki.client_key).unwrap();
    let key_body = key.lines().nth(1).expect("a PEM body line");
    assert_absent(key_body, &files_under(&out));

    let (report, _) = run_plan(
        dir.path(),
        &plan(&[("edge", url, "    tls: {ca_cert: ca.pem}\n")], phase),
    )
    .await;
    let p = &report.phases[0];
    assert_eq!(p.summary.errors, 6);
    for message in error_messages(p) {
        assert!(
            message.contains("client certificate") && message.contains("tls.client_cert"),
            "{message}"
        );
    }
    drop(nginx);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buffering_proxy_is_flagged_and_an_unbuffered_one_matches_the_direct_path() {
    let Some(binary) = find_nginx("the buffering detection test") else {
        return;
    };
    let _exclusive = exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    // 12 tokens at 20 ms each: a buffered stream arrives ~220 ms after its first token.
    let (addr, sim) = simulator(20.0).await;
    let unbuffered = Site::default();
    let buffered = Site {
        buffering: true,
        ..Site::default()
    };
    let nginx = Nginx::start(&binary, dir.path(), &pki, addr, &[unbuffered, buffered]);
    let tls = "    tls: {ca_cert: ca.pem}\n";
    let targets = [
        ("direct", format!("http://{addr}/v1"), ""),
        (
            "unbuffered",
            format!("https://127.0.0.1:{}/v1", nginx.ports[0]),
            tls,
        ),
        (
            "buffered",
            format!("https://127.0.0.1:{}/v1", nginx.ports[1]),
            tls,
        ),
    ];
    let (report, _) = run_plan(dir.path(), &plan(&targets, "concurrency: 2, requests: 10")).await;
    let warned = |p: &PhaseResult| {
        p.transport
            .warnings
            .iter()
            .any(|w| w.contains("buffers the stream") && w.contains("proxy_buffering off"))
    };
    let [direct, off, on] = [0, 1, 2].map(|i| &report.phases[i]);
    for p in [direct, off, on] {
        assert_eq!(
            p.summary.errors,
            0,
            "{}: {:?}",
            p.header.phase,
            error_messages(p)
        );
    }
    assert!(warned(on), "{:?}", on.transport.warnings);
    assert!(!warned(off), "{:?}", off.transport.warnings);
    assert!(!warned(direct), "{:?}", direct.transport.warnings);
    // Phase summaries hold seconds.
    let ttft_p50 =
        |p: &PhaseResult| p.summary.distribution(Figure::Ttft).expect("ttft").p50 * 1000.0;
    println!(
        "TTFT p50: direct {:.1} ms, nginx unbuffered {:.1} ms, nginx buffered {:.1} ms",
        ttft_p50(direct),
        ttft_p50(off),
        ttft_p50(on)
    );
    // Unbuffered, the proxy adds a loopback hop; buffered, TTFT becomes the whole stream.
    assert!(
        ttft_p50(off) < ttft_p50(direct) + 15.0,
        "direct {:.1} ms, through nginx {:.1} ms",
        ttft_p50(direct),
        ttft_p50(off)
    );
    assert!(ttft_p50(on) > ttft_p50(direct) + 150.0, "{}", ttft_p50(on));
    let md = servebench::report::formats::markdown::render(&report);
    assert!(md.contains("buffers the stream"), "{md}");
    drop(nginx);
    sim.shutdown().await;
}

#[test]
fn a_custom_key_header_and_skipped_verification_leave_no_secret_behind() {
    let Some(binary) = find_nginx("the API key header test") else {
        return;
    };
    let _exclusive = crate::common::exclusive_run_blocking();
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (addr, sim) = runtime.block_on(simulator(0.5));
    let secret = "sk-endpoint-test-3f9a7c";
    let site = Site {
        require_header: Some(("x-api-key".into(), secret.into())),
        ..Site::default()
    };
    let nginx = Nginx::start(&binary, dir.path(), &pki, addr, &[site]);
    let url = format!("https://127.0.0.1:{}/v1", nginx.ports[0]);
    let extra = "    api_key_env: EDGE_TEST_KEY\n    api_key_header: x-api-key\n    \
                 tls: {insecure_skip_verify: true}\n";
    let plan_path = dir.path().join("plan.yaml");
    std::fs::write(
        &plan_path,
        plan(&[("edge", url, extra)], "concurrency: 2, requests: 6"),
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = std::process::Command::new(assert_cmd::cargo::cargo_bin!("servebench"))
        .args(["run", "--no-calibrate", "--output"])
        .arg(&out)
        .arg(&plan_path)
        .env("EDGE_TEST_KEY", secret)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("warning: target `edge`: tls.insecure_skip_verify is set"),
        "{stderr}"
    );
    let report: Report =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let p = &report.phases[0];
    // nginx answers 401 unless the header carried the key: it was sent.
    assert_eq!(p.summary.errors, 0, "{:?}", error_messages(p));
    let facts = &report.endpoints["edge"];
    assert_eq!(facts.tls_verified, Some(false));
    assert_eq!(facts.api_key_header.as_deref(), Some("x-api-key"));
    assert!(facts.warnings[0].contains("not authenticated"));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("certificate is not checked"), "{md}");
    assert!(!stdout.contains(secret) && !stderr.contains(secret));
    let files = files_under(&out);
    assert!(
        files.len() >= 3,
        "report files and journal: {}",
        files.len()
    );
    assert_absent(secret, &files);
    drop(nginx);
    runtime.block_on(sim.shutdown());
}

/// The figures that must not depend on the transport.
fn counts(p: &PhaseResult) -> (u64, u64, u64, u64) {
    (
        p.summary.requests,
        p.summary.errors,
        p.summary.total_input_tokens,
        p.summary.total_output_tokens,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_and_a_unix_socket_count_the_same_as_http1_over_tcp() {
    let _exclusive = exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let config = SimConfig {
        seed: Some(3),
        decode_ms_per_token: Some(0.5),
        jitter: Some(0.0),
        max_running: Some(64),
        ..SimConfig::default()
    };
    let (addr, sim) = serve(config.clone()).await.unwrap();
    let unix = serve_unix(config, &dir.path().join("sim.sock"))
        .await
        .unwrap();
    // The same phase name, so the same prompts, through each transport.
    let workload =
        "workloads:\n  w: {input_tokens: {min: 8, max: 200}, output_tokens: {min: 4, max: 40}}\n";
    let run_through = |target: String| {
        let yaml = format!(
            "version: 1\nname: transports\nseed: 5\ntargets:\n  t:\n{target}    model: sim\n    tokenizer: simulator\n\
             {workload}defaults: {{target: t, workload: w}}\nphases:\n  - {{name: p, \
             concurrency: 4, requests: 40}}\n"
        );
        let dir = dir.path().to_path_buf();
        async move { run_plan(&dir, &yaml).await.0 }
    };
    let tcp = run_through(format!("    base_url: http://{addr}/v1\n")).await;
    let h2c = run_through(format!("    base_url: http://{addr}/v1\n    http: \"2\"\n")).await;
    // The metrics scrape (side traffic) goes over the socket too.
    let socket = run_through(
        "    base_url: http://localhost/v1\n    unix_socket: sim.sock\n    \
         metrics: http://localhost/metrics\n"
            .into(),
    )
    .await;
    let tcp_counts = counts(&tcp.phases[0]);
    assert_eq!(tcp_counts.0, 40);
    assert_eq!(tcp_counts.1, 0, "{:?}", error_messages(&tcp.phases[0]));
    assert!(tcp_counts.2 > 0 && tcp_counts.3 > 0);
    assert_eq!(
        counts(&h2c.phases[0]),
        tcp_counts,
        "{:?}",
        error_messages(&h2c.phases[0])
    );
    assert_eq!(
        counts(&socket.phases[0]),
        tcp_counts,
        "{:?}",
        error_messages(&socket.phases[0])
    );
    // Four HTTP/1.1 connections for four requests in flight, opened before the window; one
    // HTTP/2 connection for all.
    let connections = |r: &Report| {
        let t = &r.phases[0].transport;
        (t.connections_warmed, t.connections_opened)
    };
    assert_eq!(connections(&tcp), (4, 0));
    assert_eq!(connections(&h2c), (1, 0));
    assert!(report_states_http2(&h2c));
    assert_eq!(connections(&socket), (4, 0));
    assert_eq!(
        socket.endpoints["t"].unix_socket.as_deref(),
        Some("sim.sock")
    );
    assert!(
        socket.phases[0].server_metrics.is_some(),
        "the scrape over the socket failed"
    );
    unix.shutdown().await;
    sim.shutdown().await;
}

fn report_states_http2(report: &Report) -> bool {
    report.endpoints.values().any(|e| {
        e.http
            .as_deref()
            .is_some_and(|h| h.contains("one shared connection"))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_over_tls_is_negotiated_with_nginx() {
    let Some(binary) = find_nginx("the HTTP/2 over TLS test") else {
        return;
    };
    let _exclusive = exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let (addr, sim) = simulator(0.5).await;
    let sites = [
        Site {
            http2: true,
            ..Site::default()
        },
        Site::default(),
    ];
    let nginx = Nginx::start(&binary, dir.path(), &pki, addr, &sites);
    let extra = "    tls: {ca_cert: ca.pem}\n    http: \"2\"\n";
    let h2 = format!("https://127.0.0.1:{}/v1", nginx.ports[0]);
    let h1_only = format!("https://127.0.0.1:{}/v1", nginx.ports[1]);
    let phase = "concurrency: 4, requests: 12";
    let (report, _) = run_plan(dir.path(), &plan(&[("edge", h2, extra)], phase)).await;
    let p = &report.phases[0];
    assert_eq!(p.summary.errors, 0, "{:?}", error_messages(p));
    let t = &p.transport;
    assert_eq!(t.connections_opened + t.connections_warmed, 1);
    assert!(report_states_http2(&report));
    // A server without h2 in its ALPN list is refused, before anything is sent, with the
    // fix (nginx ends the handshake with an alert; a server that picks HTTP/1.1 is caught
    // after it).
    let message =
        refused_before_sending(dir.path(), &plan(&[("edge", h1_only, extra)], phase)).await;
    assert!(
        message.contains("may not speak HTTP/2") || message.contains("did not agree to HTTP/2"),
        "{message}"
    );
    drop(nginx);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_carries_plain_requests_and_tunnels_tls() {
    let Some(binary) = find_nginx("the proxy test") else {
        return;
    };
    let _exclusive = exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let (addr, sim) = simulator(0.5).await;
    let nginx = Nginx::start(&binary, dir.path(), &pki, addr, &[Site::default()]);
    let proxy = TestProxy::start().await;
    let via = format!("    proxy: {}\n", proxy.url());
    let via_tls = format!("{via}    tls: {{ca_cert: ca.pem}}\n");
    let targets = [
        ("plain", format!("http://{addr}/v1"), via.as_str()),
        (
            "tunnelled",
            format!("https://127.0.0.1:{}/v1", nginx.ports[0]),
            via_tls.as_str(),
        ),
    ];
    let (report, _) = run_plan(dir.path(), &plan(&targets, "concurrency: 2, requests: 8")).await;
    for p in &report.phases {
        assert_eq!(
            p.summary.errors,
            0,
            "{}: {:?}",
            p.header.phase,
            error_messages(p)
        );
        assert_eq!(p.summary.requests, 8);
    }
    let counts = &proxy.counts;
    // Warmed or opened by a request, every connection went through the proxy.
    let connections =
        |p: &PhaseResult| p.transport.connections_opened + p.transport.connections_warmed;
    assert!(report.phases.iter().all(|p| connections(p) > 0));
    // Absolute-form requests are counted per connection (the first request on it); one
    // tunnel per TLS connection. The run's identity probe of each target (`/v1/models`,
    // `/version`, `/props`) goes through the proxy too: at most one connection per GET.
    let absolute = counts
        .absolute_form
        .load(std::sync::atomic::Ordering::Relaxed) as u64;
    let plain = connections(&report.phases[0]);
    assert!(
        (plain..=plain + 3).contains(&absolute),
        "{absolute} absolute-form connections, {plain} of the phase"
    );
    let tunnels = counts.tunnels.load(std::sync::atomic::Ordering::Relaxed) as u64;
    let tunnelled = connections(&report.phases[1]);
    assert!(
        (tunnelled..=tunnelled + 3).contains(&tunnels),
        "{tunnels} tunnels, {tunnelled} connections of the phase"
    );
    assert_eq!(
        report.endpoints["plain"].proxy.as_deref(),
        Some(proxy.url().as_str())
    );
    assert_eq!(
        report.endpoints["tunnelled"].proxy.as_deref(),
        Some(proxy.url().as_str())
    );
    drop(nginx);
    sim.shutdown().await;
}

/// `tokenizer: {source: server}` and model discovery reach `/tokenize` and `/models` the way
/// the benchmark's requests do: through a private CA, with the API key.
#[test]
fn tokenizer_calibration_and_model_discovery_use_the_targets_tls_and_key() {
    let Some(binary) = find_nginx("the server-tokenizer calibration test") else {
        return;
    };
    let _exclusive = crate::common::exclusive_run_blocking();
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (addr, sim) = runtime.block_on(simulator(0.5));
    let secret = "sk-tokenize-test-71c2e0";
    let site = Site {
        require_header: Some(("authorization".into(), format!("Bearer {secret}"))),
        ..Site::default()
    };
    let nginx = Nginx::start(&binary, dir.path(), &pki, addr, &[site]);
    let url = format!("https://127.0.0.1:{}/v1", nginx.ports[0]);
    // No `model:`: it is discovered from `/models`, which also needs the key.
    let yaml = format!(
        "version: 1\nname: edge\nseed: 1\ntargets:\n  edge:\n    base_url: {url}\n    \
         api_key_env: EDGE_TOKENIZE_KEY\n    tls: {{ca_cert: ca.pem}}\n    \
         tokenizer: {{source: server}}\nworkloads:\n  w: {{input_tokens: 200, output_tokens: 8, ignore_eos: true}}\n\
         defaults: {{workload: w, target: edge}}\nphases:\n  - {{name: c2, concurrency: 2, requests: 6}}\n"
    );
    let plan_path = dir.path().join("plan.yaml");
    std::fs::write(&plan_path, yaml).unwrap();
    let out = dir.path().join("out");
    let output = std::process::Command::new(assert_cmd::cargo::cargo_bin!("servebench"))
        .args(["run", "--no-calibrate", "--output"])
        .arg(&out)
        .arg(&plan_path)
        .env("EDGE_TOKENIZE_KEY", secret)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}\n{}", nginx.error_log());
    let report: Report =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let phase = &report.phases[0];
    assert_eq!(phase.summary.errors, 0, "{:?}", error_messages(phase));
    let check = &phase.prompt_tokens;
    assert!(!check.warning, "{check:?}");
    let planned = check.planned_mean.expect("planned");
    let actual = check.actual_mean.expect("actual");
    assert!((planned - actual).abs() <= 0.02 * planned, "{check:?}");
    // A failed calibration or discovery stops the run before any request; both went through.
    assert_eq!(phase.summary.requests, 6);
    assert_absent(secret, &crate::common::files_under(&out));
    drop(nginx);
    runtime.block_on(sim.shutdown());
}
