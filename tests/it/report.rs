//! Report writers, seed import and compare: snapshots, headless Chromium, CLI exit codes.

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use indexmap::IndexMap;
use servebench::client::{ErrorKind, OutputTokenSource, RequestError, RequestRecord};
use servebench::metrics::{Distribution, PhaseSummary};
use servebench::plan::{PercentileMethod, Phase, Plan, Target, TokenCount, Workload};
use servebench::report::{
    self, Drift, DriftVerdict, HostFacts, PhaseResult, PlanSource, PromptTokenCheck, RecheckPair,
    Report, TimingMethodology, ToolInfo, WarmupResult,
};

const FIXTURE: &str = "tests/fixtures/reports/sample.json";
const SEED_000: &str = "tests/fixtures/seeds/000_adbc5efdce65c6e3.txt";
const SEED_004: &str = "tests/fixtures/seeds/004_00b102e15ffdad6e.txt";

// ------------------------------------------------------------------ the hand-built report

/// Linear-interpolation distribution of `values` (seconds or tokens).
fn dist(values: &[f64]) -> Option<Distribution> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let q = |q: f64| report::metric::percentile(&v, q, PercentileMethod::Linear);
    Some(Distribution {
        p50: q(0.50),
        p95: q(0.95),
        p99: q(0.99),
        min: v[0],
        max: v[v.len() - 1],
        mean: v.iter().sum::<f64>() / v.len() as f64,
        samples: v.len() as u64,
    })
}

/// Deterministic records for one phase: TTFT grows with concurrency, with a few slow
/// first-coverage requests when `spike_ms` is set, and `errors` failures at the end.
fn records(
    n: u64,
    concurrency: u32,
    ttft_ms: f64,
    spike_ms: Option<f64>,
    errors: u64,
) -> Vec<RequestRecord> {
    (0..n)
        .map(|i| {
            let jitter = ((i * 37) % 11) as f64;
            let ttft = match spike_ms {
                Some(s) if i < 2 => s - 40.0 * i as f64,
                _ => ttft_ms * (1.0 + jitter / 50.0),
            };
            let out: u64 = 256;
            let tpot = 6.2 + 0.05 * f64::from(concurrency) + jitter / 100.0;
            let e2e = ttft + tpot * (out - 1) as f64;
            let start = (i / u64::from(concurrency)) as f64 * 1800.0 + jitter * 3.0;
            let failed = i >= n - errors;
            RequestRecord {
                request_index: i,
                request_id: format!("req-{concurrency}-{i}"),
                start_offset_ms: start,
                time_to_first_output_ms: (!failed).then_some(ttft),
                ttft_ms: (!failed).then_some(ttft),
                e2e_ms: if failed { 120.0 } else { e2e },
                generation_ms: (!failed).then_some(e2e - ttft),
                visible_generation_ms: (!failed).then_some(e2e - ttft),
                decode_tok_s: (!failed).then_some(255.0 / ((e2e - ttft) / 1000.0)),
                mean_inter_token_latency_ms: (!failed).then_some(tpot),
                tpot_ms: (!failed).then_some(tpot),
                effective_prefill_tok_s: (!failed).then_some(540.0 / (ttft / 1000.0)),
                planned_context_tokens: Some(512),
                prompt_tokens: (!failed).then_some(538 + i % 5),
                output_tokens: (!failed).then_some(out),
                output_token_source: (!failed).then_some(OutputTokenSource::Usage),
                content_chunks: if failed { 0 } else { 64 },
                error: failed.then(|| {
                    if i % 2 == 0 {
                        RequestError {
                            kind: ErrorKind::RateLimited,
                            status: Some(429),
                            message: "slow down, \"burst\" limit hit".to_string(),
                        }
                    } else {
                        RequestError {
                            kind: ErrorKind::StreamBroken,
                            status: None,
                            message: "connection reset\nafter 3 chunks".to_string(),
                        }
                    }
                }),
                ..RequestRecord::default()
            }
        })
        .collect()
}

struct PhaseSpec {
    name: &'static str,
    route: &'static str,
    concurrency: Option<u32>,
    rate_rps: Option<f64>,
    recheck_of: Option<&'static str>,
    ttft_ms: f64,
    spike_ms: Option<f64>,
    errors: u64,
    planned_prompt: f64,
}

fn phase(spec: &PhaseSpec, index: usize, slow: f64) -> PhaseResult {
    let c = spec.concurrency.unwrap_or(2);
    let mut recs = records(
        24,
        c,
        spec.ttft_ms * slow,
        spec.spike_ms.map(|s| s * slow),
        spec.errors,
    );
    for r in &mut recs {
        if slow != 1.0 && r.is_ok() {
            // Keep e2e consistent with the slower TTFT.
            r.e2e_ms = r.ttft_ms.unwrap_or(0.0) + r.visible_generation_ms.unwrap_or(0.0);
        }
    }
    let ok: Vec<&RequestRecord> = recs.iter().filter(|r| r.is_ok()).collect();
    let secs = |f: fn(&RequestRecord) -> Option<f64>| -> Vec<f64> {
        ok.iter().filter_map(|r| f(r)).map(|v| v / 1000.0).collect()
    };
    let elapsed = recs
        .iter()
        .map(|r| r.start_offset_ms + r.e2e_ms)
        .fold(0.0, f64::max)
        / 1000.0;
    let total_out: u64 = ok.iter().filter_map(|r| r.output_tokens).sum();
    let total_in: u64 = ok.iter().filter_map(|r| r.prompt_tokens).sum();
    let mut errors_by_kind = std::collections::BTreeMap::new();
    for r in &recs {
        if let Some(e) = &r.error {
            *errors_by_kind.entry(e.kind).or_insert(0) += 1;
        }
    }
    let summary = PhaseSummary {
        requests: recs.len() as u64,
        success: ok.len() as u64,
        errors: spec.errors,
        elapsed,
        output_tokens_per_second: total_out as f64 / elapsed,
        request_rate: recs.len() as f64 / elapsed,
        ttft: dist(&secs(|r| r.ttft_ms)),
        tpot: dist(&secs(|r| r.tpot_ms)),
        e2e: dist(&secs(|r| Some(r.e2e_ms))),
        time_to_first_output: dist(&secs(|r| r.time_to_first_output_ms)),
        input_tokens: dist(
            &ok.iter()
                .filter_map(|r| r.prompt_tokens)
                .map(|v| v as f64)
                .collect::<Vec<_>>(),
        ),
        output_tokens: dist(
            &ok.iter()
                .filter_map(|r| r.output_tokens)
                .map(|v| v as f64)
                .collect::<Vec<_>>(),
        ),
        total_input_tokens: total_in,
        total_output_tokens: total_out,
        content_chunks: ok.iter().map(|r| r.content_chunks).sum(),
        output_token_sources: [(OutputTokenSource::Usage, ok.len() as u64)].into(),
        errors_by_kind,
        ..PhaseSummary::default()
    };
    let planned = spec.planned_prompt;
    let actual = total_in as f64 / ok.len() as f64;
    let rel = (actual - planned) / planned;
    let start = index as f64 * 70.0;
    PhaseResult {
        phase: spec.name.to_string(),
        route: spec.route.to_string(),
        target: spec.route.to_string(),
        workload: "short".to_string(),
        concurrency: spec.concurrency,
        rate_rps: spec.rate_rps,
        recheck_of: spec.recheck_of.map(str::to_string),
        started_at: format!("2026-11-30T10:{:02}:00Z", index + 1),
        start_offset_seconds: start,
        end_offset_seconds: start + elapsed,
        partial: false,
        summary,
        warmup: WarmupResult {
            requests: 4,
            errors: 0,
            elapsed: 7.5,
        },
        prompt_tokens: PromptTokenCheck {
            planned_mean: Some(planned),
            actual_mean: Some(actual),
            relative_error: Some(rel),
            tolerance: 0.10,
            warning: rel.abs() > 0.10,
        },
        dataset_sha256: None,
        send_lag_ms: None,
        achieved_rate_ratio: None,
        server_metrics: None,
        transport: Default::default(),
        request_timings: recs,
        client_headroom: None,
    }
}

const SPECS: [PhaseSpec; 6] = [
    PhaseSpec {
        name: "direct-c1",
        route: "direct",
        concurrency: Some(1),
        rate_rps: None,
        recheck_of: None,
        ttft_ms: 150.0,
        spike_ms: None,
        errors: 0,
        planned_prompt: 512.0,
    },
    PhaseSpec {
        name: "gateway-c1",
        route: "least-request",
        concurrency: Some(1),
        rate_rps: None,
        recheck_of: None,
        ttft_ms: 165.0,
        spike_ms: None,
        errors: 0,
        planned_prompt: 512.0,
    },
    PhaseSpec {
        name: "gateway-c4",
        route: "least-request",
        concurrency: Some(4),
        rate_rps: None,
        recheck_of: None,
        ttft_ms: 210.0,
        spike_ms: Some(14_900.0),
        errors: 0,
        planned_prompt: 512.0,
    },
    PhaseSpec {
        name: "gateway-c16",
        route: "least-request",
        concurrency: Some(16),
        rate_rps: None,
        recheck_of: None,
        ttft_ms: 420.0,
        spike_ms: None,
        errors: 0,
        planned_prompt: 512.0,
    },
    PhaseSpec {
        name: "recheck-c4",
        route: "least-request",
        concurrency: Some(4),
        rate_rps: None,
        recheck_of: Some("gateway-c4"),
        ttft_ms: 215.0,
        spike_ms: None,
        errors: 0,
        planned_prompt: 512.0,
    },
    PhaseSpec {
        name: "burst-5rps",
        route: "least-request",
        concurrency: None,
        rate_rps: Some(5.0),
        recheck_of: None,
        ttft_ms: 300.0,
        spike_ms: None,
        errors: 3,
        planned_prompt: 640.0,
    },
];

fn drift(metric: &str, original: f64, recheck: f64, tolerance: f64) -> Drift {
    let change = (recheck - original) / original;
    Drift {
        metric: metric.to_string(),
        original: Some(original),
        recheck: Some(recheck),
        change: Some(change),
        tolerance,
        verdict: if change.abs() > tolerance {
            DriftVerdict::Drifted
        } else {
            DriftVerdict::Stable
        },
    }
}

/// A hand-built report of a small gateway plan; `slow` multiplies every TTFT.
pub fn sample_report(slow: f64) -> Report {
    let phases: Vec<PhaseResult> = SPECS
        .iter()
        .enumerate()
        .map(|(i, s)| phase(s, i, slow))
        .collect();
    let by = |n: &str| {
        phases
            .iter()
            .find(|p| p.phase == n)
            .cloned()
            .expect("phase")
    };
    let (orig, re) = (by("gateway-c4"), by("recheck-c4"));
    let ttft = |p: &PhaseResult| p.summary.ttft.expect("ttft");
    let mut metrics = vec![
        drift("ttft.p50", ttft(&orig).p50, ttft(&re).p50, 0.2),
        drift("ttft.p99", ttft(&orig).p99, ttft(&re).p99, 0.2),
        drift(
            "output_tokens_per_second",
            orig.summary.output_tokens_per_second,
            re.summary.output_tokens_per_second,
            0.2,
        ),
    ];
    metrics.push(Drift {
        metric: "error_rate".to_string(),
        original: Some(0.0),
        recheck: Some(0.0),
        change: Some(0.0),
        tolerance: 0.01,
        verdict: DriftVerdict::Stable,
    });
    let verdict = if metrics.iter().any(|d| d.verdict == DriftVerdict::Drifted) {
        DriftVerdict::Drifted
    } else {
        DriftVerdict::Stable
    };
    let target = |url: &str| Target {
        base_url: Some(url.to_string()),
        model: Some("demo-model".to_string()),
        ..Target::default()
    };
    let plan = Plan {
        version: 1,
        name: "gateway-demo".to_string(),
        description: Some("Direct vs <gateway> | least-request & friends".to_string()),
        vars: IndexMap::new(),
        metadata: IndexMap::from([("engine".to_string(), "vllm 0.26".into())]),
        seed: Some(7),
        percentile_method: PercentileMethod::Linear,
        slo: None,
        targets: IndexMap::from([
            ("direct".to_string(), target("http://127.0.0.1:8000/v1")),
            (
                "least-request".to_string(),
                target("http://127.0.0.1:9000/v1"),
            ),
        ]),
        workloads: IndexMap::from([(
            "short".to_string(),
            Workload {
                input_tokens: Some(TokenCount::Fixed(512)),
                output_tokens: Some(TokenCount::Fixed(256)),
                ..Workload::default()
            },
        )]),
        defaults: Default::default(),
        phases: SPECS
            .iter()
            .map(|s| Phase {
                name: Some(s.name.to_string()),
                recheck: s.recheck_of.map(str::to_string),
                target: Some(s.route.to_string()),
                concurrency: s.concurrency,
                ..Phase::default()
            })
            .collect(),
    };
    let words = |s: &str| s.to_string();
    Report {
        schema: report::REPORT_SCHEMA.to_string(),
        tool: ToolInfo {
            name: "servebench".to_string(),
            version: "0.1.0".to_string(),
        },
        run_id: "gateway-demo-20261130T100000Z".to_string(),
        started_at: "2026-11-30T10:00:00Z".to_string(),
        finished_at: Some("2026-11-30T10:07:30Z".to_string()),
        partial: false,
        stop_reason: None,
        host: HostFacts {
            hostname: "bench-1".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            cpus: 2,
            memory_bytes: None,
            cpu_latency_hint: None,
        },
        plan_source: PlanSource {
            path: "plans/gateway-demo.yaml".into(),
            sha256: "ab".repeat(32),
        },
        vars: IndexMap::new(),
        plan,
        metadata: IndexMap::from([("engine".to_string(), "vllm 0.26".into())]),
        timing_methodology: TimingMethodology {
            clock: words("monotonic client clock"),
            percentile_method: PercentileMethod::Linear,
            time_to_first_output: words("start to first reasoning or content delta"),
            ttft: words("start to first content delta"),
            generation: words("e2e minus time to first output"),
            decode: words("(output tokens - 1) / generation"),
            mean_inter_token_latency: words("generation / (output tokens - 1)"),
            tpot: words("(e2e - ttft) / (output tokens - 1)"),
            effective_prefill: words("prompt tokens / time to first output"),
            elapsed: words("first measured start to last end"),
        },
        phases,
        rechecks: vec![RecheckPair {
            original: "gateway-c4".into(),
            recheck: "recheck-c4".into(),
            metrics,
            verdict,
        }],
        client_calibration: None,
        client_busy_poll: false,
        shard: None,
        merged_from: None,
    }
}

fn write_json(dir: &Path, name: &str, r: &Report) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(r).expect("json")).expect("write");
    path
}

fn servebench() -> Command {
    Command::cargo_bin("servebench").expect("binary")
}

// ------------------------------------------------------------------ fixture and writers

#[test]
fn fixture_matches_the_hand_built_report() {
    let built = sample_report(1.0);
    if std::env::var_os("UPDATE_REPORT_FIXTURES").is_some() {
        std::fs::write(
            FIXTURE,
            serde_json::to_string_pretty(&built).expect("json") + "\n",
        )
        .expect("write fixture");
    }
    let read = report::read_report(Path::new(FIXTURE)).expect("fixture reads");
    assert!(
        read == built,
        "{FIXTURE} differs from sample_report(); regenerate with UPDATE_REPORT_FIXTURES=1"
    );
}

#[test]
fn markdown_snapshot() {
    let md = report::markdown::render(&sample_report(1.0));
    insta::assert_snapshot!("sample_markdown", md);
}

#[test]
fn markdown_makes_the_drift_and_warnings_obvious() {
    let md = report::markdown::render(&sample_report(1.0));
    assert!(md.contains("**⚠ 1 of 1 rechecks drifted:**"), "{md}");
    assert!(
        md.contains("> - **gateway-c4 → recheck-c4: ttft.p99 14.9 s → 0.258 s (−98.3%)**"),
        "{md}"
    );
    // Pipes and markup in user text cannot break the table.
    assert!(
        md.contains("Direct vs \\<gateway\\> \\| least-request & friends"),
        "{md}"
    );
    assert!(
        md.contains(
            "| burst-5rps | rate\\_limited | **1** | HTTP 429: slow down, \"burst\" limit hit |"
        ),
        "{md}"
    );
    assert!(
        md.contains("| burst-5rps | stream\\_broken | **2** | connection reset after 3 chunks |"),
        "{md}"
    );
    assert!(
        md.contains("> **⚠ Prompt size outside tolerance in:** burst-5rps\n"),
        "{md}"
    );
}

#[test]
fn a_partial_run_says_so() {
    let mut r = sample_report(1.0);
    r.partial = true;
    r.finished_at = None;
    r.stop_reason = Some("interrupted | Ctrl-C".to_string());
    r.phases[5].partial = true;
    let md = report::markdown::render(&r);
    assert!(
        md.contains("> **Partial run:** not every phase finished (interrupted | Ctrl-C)."),
        "{md}"
    );
    assert!(
        md.contains("| Status | PARTIAL: interrupted \\| Ctrl-C |"),
        "{md}"
    );
    assert!(md.contains("| **burst-5rps (partial)** |"), "{md}");
    let html = report::html::render(&r);
    assert!(html.contains("<b>Partial run:</b> not every phase finished (interrupted | Ctrl-C)."));
}

#[test]
fn csv_snapshot_and_rfc4180() {
    let r = sample_report(1.0);
    let phases = report::csv::render_phases(&r);
    insta::assert_snapshot!("sample_phases_csv", phases);
    let mut rd = csv::Reader::from_reader(phases.as_bytes());
    let header = rd.headers().expect("header").clone();
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.expect("row")).collect();
    assert_eq!(rows.len(), r.phases.len());
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    assert_eq!(&rows[2][col("phase")], "gateway-c4");
    let p99: f64 = rows[2][col("ttft_p99_ms")].parse().expect("number");
    assert!((p99 - r.phases[2].summary.ttft.expect("ttft").p99 * 1000.0).abs() < 1e-6);

    let requests = report::csv::render_requests(&r);
    let mut rd = csv::Reader::from_reader(requests.as_bytes());
    let header = rd.headers().expect("header").clone();
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.expect("row")).collect();
    let total: usize = r.phases.iter().map(|p| p.request_timings.len()).sum();
    assert_eq!(rows.len(), total);
    let msg = header
        .iter()
        .position(|h| h == "error_message")
        .expect("column");
    let messages: Vec<&str> = rows
        .iter()
        .map(|r| &r[msg])
        .filter(|m| !m.is_empty())
        .collect();
    assert!(messages.contains(&"slow down, \"burst\" limit hit"));
    assert!(messages.contains(&"connection reset\nafter 3 chunks"));
}

#[test]
fn html_is_self_contained_and_escaped() {
    let html = report::html::render(&sample_report(1.0));
    for needle in ["<script", "src=", "href=", "@import", "url(", "@font-face"] {
        assert!(
            !html.contains(needle),
            "external or active content: {needle}"
        );
    }
    assert!(html.contains("Direct vs &lt;gateway&gt; | least-request &amp; friends"));
    // Sweep charts, two percentile charts, the recheck chart and one scatter per phase.
    assert_eq!(html.matches("<svg").count(), 2 + 2 + 1 + 6);
    assert!(html.contains("Output throughput vs concurrency"));
    assert!(html.contains("gateway-c4: 24 requests"));
    assert!(html.contains("burst-5rps: 21 requests (3 failed, not shown)"));
}

#[test]
fn write_all_writes_markdown_and_html() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = sample_report(1.0);
    report::write_all(&r, dir.path()).expect("write_all");
    let md = std::fs::read_to_string(dir.path().join("report.md")).expect("md");
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("html");
    assert_eq!(md, report::markdown::render(&r));
    assert!(html.starts_with("<!DOCTYPE html>"));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

// ------------------------------------------------------------------ headless Chromium

const CHROMIUM: &str = "/usr/bin/chromium";

/// The browser, or `None` (with a printed reason) when it is absent outside CI.
fn chromium() -> Option<&'static str> {
    if Path::new(CHROMIUM).exists() {
        return Some(CHROMIUM);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{CHROMIUM} is missing but CI is set: .ci/run installs it with apt-get install -y chromium"
    );
    println!(
        "SKIPPED: {CHROMIUM} not found; install it with `apt-get install -y chromium` to run the HTML browser test"
    );
    None
}

fn chromium_cmd(browser: &str, profile: &Path) -> Command {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// Load `html` in headless Chromium: assert no console errors, that the DOM holds
/// `expect_svgs` charts, and that a screenshot is not blank. Returns the screenshot path.
fn check_in_browser(browser: &str, html: &str, expect_svgs: usize, dir: &Path) -> PathBuf {
    let page = dir.join("report.html");
    std::fs::write(&page, html).expect("write page");
    let url = format!("file://{}", page.display());

    let (dom, console_errors) = load_page(browser, &url, &dir.join("profile-dom"));
    assert_eq!(
        dom.matches("<svg").count(),
        expect_svgs,
        "charts in the rendered DOM"
    );
    assert!(
        console_errors.is_empty(),
        "console errors: {console_errors:#?}"
    );

    let shot = dir.join("shot.png");
    let out = chromium_cmd(browser, &dir.join("profile-shot"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1200,2600")
        .arg(&url)
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "screenshot failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (variance, dark_share) = image_stats(&shot);
    assert!(
        variance > 200.0,
        "screenshot looks blank: luminance variance {variance}"
    );
    assert!(
        dark_share > 0.005,
        "screenshot has almost no ink: {dark_share}"
    );
    shot
}

/// Load `url` and return the DOM after load and every console message or load failure the
/// browser logged.
fn load_page(browser: &str, url: &str, profile: &Path) -> (String, Vec<String>) {
    let out = chromium_cmd(browser, profile)
        .args(["--enable-logging=stderr", "--v=0", "--dump-dom"])
        .arg(url)
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = String::from_utf8_lossy(&out.stderr);
    let errors = log
        .lines()
        .filter(|l| {
            l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("Failed to load resource")
        })
        .map(str::to_string)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), errors)
}

/// Luminance variance and share of pixels darker than mid-grey.
fn image_stats(path: &Path) -> (f64, f64) {
    let decoder = png::Decoder::new(std::fs::File::open(path).expect("png"));
    let mut reader = decoder.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("png frame");
    let channels = info.color_type.samples();
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let lum: Vec<f64> = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|px| match channels {
            1 | 2 => f64::from(px[0]),
            _ => 0.299 * f64::from(px[0]) + 0.587 * f64::from(px[1]) + 0.114 * f64::from(px[2]),
        })
        .collect();
    let n = lum.len() as f64;
    let mean = lum.iter().sum::<f64>() / n;
    let var = lum.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / n;
    let dark = lum.iter().filter(|l| **l < 128.0).count() as f64 / n;
    (var, dark)
}

#[test]
fn html_loads_cleanly_in_headless_chromium() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let html = report::html::render(&sample_report(1.0));
    let shot = check_in_browser(browser, &html, 11, dir.path());
    if let Some(keep) = std::env::var_os("SERVEBENCH_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).expect("keep screenshot");
    }
}

/// The console check is only worth something if it sees a broken page.
#[test]
fn the_browser_check_sees_script_errors() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join("broken.html");
    std::fs::write(
        &page,
        "<html><body><script>missing_function();</script></body></html>",
    )
    .expect("write page");
    let (_, errors) = load_page(
        browser,
        &format!("file://{}", page.display()),
        &dir.path().join("p"),
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("missing_function is not defined")),
        "{errors:#?}"
    );
}

#[test]
fn seed_004_html_loads_cleanly_in_headless_chromium() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let r = report::read_report(Path::new(SEED_004)).expect("seed 004");
    // Two sweep charts, two percentile charts, the recheck chart; no records, no scatter.
    check_in_browser(browser, &report::html::render(&r), 5, dir.path());
}

// ------------------------------------------------------------------ seed formats

#[test]
fn seed_004_imports_with_rechecks_and_renders() {
    let r = report::read_report(Path::new(SEED_004)).expect("seed 004");
    assert_eq!(r.phases.len(), 14);
    assert_eq!(r.phases[2].phase, "gateway-c4");
    let pairs: Vec<(&str, &str)> = r
        .rechecks
        .iter()
        .map(|p| (p.original.as_str(), p.recheck.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("gateway-c4", "recheck-c4"),
            ("gateway-c16", "recheck-c16"),
            ("gateway-c32", "recheck-c32"),
            ("prefix-random", "recheck-prefix-random"),
            ("prefix-aware", "recheck-prefix-aware"),
        ]
    );
    let md = report::markdown::render(&r);
    assert!(
        md.contains("gateway-c4 → recheck-c4: ttft.p99 14.9 s → 0.32"),
        "{md}"
    );
    assert!(md.contains("| gateway-c4 | least-request | c=4 |"), "{md}");
}

#[test]
fn seed_000_renders_as_markdown() {
    let out = servebench()
        .args(["report", SEED_000, "--format", "md"])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = String::from_utf8_lossy(&out.stdout);
    // Recomputed from the records with nearest rank, the seed's own p50 TTFT: 3627.593 ms.
    assert!(
        md.contains("| c16 | 127.0.0.1:39062 | c=16 | 16 | 0 | 514 |"),
        "{md}"
    );
    assert!(md.contains("| 3628 |"), "{md}");
    // Planned 4096 tokens, the server saw 2960: the report warns.
    assert!(md.contains("WARNING: outside tolerance"), "{md}");
}

#[test]
fn unreadable_reports_name_the_file_and_the_problem() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("missing.json", None, "cannot read"),
        ("garbage.json", Some("{not json"), "not valid JSON"),
        (
            "other.json",
            Some(r#"{"schema": "acme/v9"}"#),
            "unsupported report schema \"acme/v9\"",
        ),
        ("empty.json", Some("{}"), "not a known report"),
        (
            "bad.json",
            Some(r#"{"schema": "servebench.report/v1", "tool": 3}"#),
            "not a valid servebench.report/v1 report",
        ),
    ];
    for (name, body, expect) in cases {
        let path = dir.path().join(name);
        if let Some(b) = body {
            std::fs::write(&path, b).expect("write");
        }
        let out = servebench().arg("report").arg(&path).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(name) && err.contains(expect), "{name}: {err}");
    }
}

#[test]
fn requests_flag_needs_csv() {
    let out = servebench()
        .args(["report", FIXTURE, "--format", "md", "--requests"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let out = servebench()
        .args(["report", FIXTURE, "--format", "csv", "--requests"])
        .output()
        .expect("run");
    assert!(out.status.success());
    // Header, one line per request, plus one for each of the two quoted multi-line messages.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        1 + 6 * 24 + 2
    );
}

// ------------------------------------------------------------------ compare

#[test]
fn seed_004_against_itself_passes_every_gate() {
    let out = servebench()
        .args(["compare", SEED_004, SEED_004])
        .args([
            "--gate",
            "ttft.p95 < +10%",
            "--gate",
            "output_tokens_per_second > -5%",
        ])
        .args([
            "--gate",
            "errors <= +0",
            "--gate",
            "tpot.p50 <= +0%",
            "--gate",
            "e2e.p50 < 60s",
        ])
        .args(["--gate", "gateway-c4:ttft.p99 < +1ms"])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("All 71 gate checks passed."), "{stdout}");
    assert!(stdout.contains("n/a (no records)"), "{stdout}");
}

#[test]
fn a_slower_run_fails_the_ttft_gate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = write_json(dir.path(), "base.json", &sample_report(1.0));
    let slow = write_json(dir.path(), "slow.json", &sample_report(1.5));
    let out = servebench()
        .arg("compare")
        .args([&base, &slow])
        .args(["--gate", "ttft.p95 < +10%", "--gate", "errors <= 3"])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("**✗ 6 of 12 gate checks failed.**"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "| ttft.p95 \\< +10% | gateway-c16 | 0.503 s | 0.754 s | +50.0% | **FAIL** |"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("+50.0%"), "{stdout}");

    // JSON: the TTFT p50 shift is significant with 24/24 samples; request count is not a statistic.
    let out = servebench()
        .arg("compare")
        .args([&base, &slow])
        .args(["--format", "json"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "no gates, no failure");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let metric = |phase: &str, name: &str| {
        v["phases"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["phase"] == phase))
            .and_then(|p| p["metrics"].as_array())
            .and_then(|ms| ms.iter().find(|m| m["metric"] == name))
            .cloned()
            .expect("metric")
    };
    let ttft = metric("gateway-c16", "ttft.p50");
    assert_eq!(ttft["significant"], true);
    assert_eq!(ttft["samples"], serde_json::json!([24, 24]));
    let lo = ttft["ci95"][0].as_f64().expect("ci");
    assert!(lo > 0.0);
    let tpot = metric("gateway-c16", "tpot.p50");
    assert_eq!(tpot["significant"], false, "TPOT did not change");
    assert_eq!(
        metric("gateway-c16", "requests")["significant"],
        serde_json::Value::Null
    );
}

#[test]
fn the_same_report_compares_clean() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = write_json(dir.path(), "base.json", &sample_report(1.0));
    let out = servebench()
        .arg("compare")
        .args([&base, &base])
        .args(["--gate", "ttft.p95 < +10%", "--gate", "error_rate < 20%"])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        !stdout.contains("| yes |"),
        "nothing is significant against itself: {stdout}"
    );
}

#[test]
fn gate_grammar_errors_exit_2() {
    for (gate, expect) in [
        ("ttft.p95 10%", "no comparison operator"),
        ("ttft.p95 < 10%", "a relative change needs a sign"),
        ("ttft.p95 < 2", "is a time: give a unit"),
        ("latency.p95 < +5%", "unknown metric `latency.p95`"),
        ("ttft < +5%", "name a statistic"),
    ] {
        let out = servebench()
            .args(["compare", FIXTURE, FIXTURE, "--gate", gate])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{gate}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("invalid gate `{gate}`")) && err.contains(expect),
            "{gate}: {err}"
        );
    }
}

#[test]
fn a_gate_on_a_missing_phase_fails() {
    let out = servebench()
        .args([
            "compare",
            FIXTURE,
            FIXTURE,
            "--format",
            "json",
            "--gate",
            "nope:errors == 0",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["passed"], false);
    assert_eq!(
        v["gates"][0]["problem"],
        "no phase `nope` in the new report"
    );
}

#[test]
fn single_run_seeds_map_to_records() {
    const SEED_002: &str = "tests/fixtures/seeds/002_7f8743b500e818d3.txt";
    let read = |p: &str| -> report::seed::AnvilRun {
        serde_json::from_slice(&std::fs::read(p).expect("seed")).expect("anvil format")
    };
    // Seed 000: 16 requests at concurrency 16 all start together.
    let run = read(SEED_000);
    let recs = report::seed::anvil_records(&run);
    assert_eq!(recs.len(), 16);
    assert!(recs.iter().all(|r| r.start_offset_ms == 0.0 && r.is_ok()));
    let first = &recs[0];
    assert_eq!(first.request_id, "benchmark-20260802T104738Z-0");
    assert_eq!(first.ttft_ms, Some(3352.2910000010597));
    // TPOT = (e2e − ttft) / (output_tokens − 1).
    let tpot = first.tpot_ms.expect("tpot");
    assert!((tpot - (3575.8383000011236 - 3352.2910000010597) / 143.0).abs() < 1e-9);

    // Seed 002: concurrency 1, so each request starts when the previous one ended, and the
    // last one ends at the sum of e2e, within 3 ms of the seed's own wall clock.
    let run = read(SEED_002);
    let recs = report::seed::anvil_records(&run);
    assert_eq!(recs.len(), 10);
    for pair in recs.windows(2) {
        assert!(
            (pair[1].start_offset_ms - (pair[0].start_offset_ms + pair[0].e2e_ms)).abs() < 1e-9
        );
    }
    let last = recs.last().expect("records");
    let end = last.start_offset_ms + last.e2e_ms;
    assert!(
        (run.wall_clock_ms.expect("wall clock") - end).abs() < 3.0,
        "{end}"
    );
}
