//! Report writers (the seeds' formats too), seed import and compare, one file per concern; the
//! hand-built sample report here.

pub(crate) mod browser;
mod compare;
mod compare_page;
mod compare_reading;
mod formats;
mod import;
mod render;
mod section_parity;
mod sections;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use indexmap::IndexMap;
use servebench::client::{ErrorKind, OutputTokenSource, RequestError, RequestRecord};
use servebench::figure::Figure;
use servebench::metrics::{Distribution, PhaseSummary};
use servebench::plan::{PercentileMethod, Phase, Plan, Target, TokenCount, Workload};
use servebench::report::{
    self, Drift, DriftVerdict, HostFacts, PhaseHeader, PhaseResult, PlanSource, PromptTokenCheck,
    RecheckPair, Report, TimingMethodology, ToolInfo, WarmupResult,
};

const FIXTURE: &str = "tests/fixtures/reports/sample.json";
const SEED_000: &str = "tests/fixtures/seeds/000_adbc5efdce65c6e3.txt";
const SEED_004: &str = "tests/fixtures/seeds/004_00b102e15ffdad6e.txt";

/// Linear-interpolation distribution of `values` (seconds or tokens), as a run computes it.
fn dist(values: &[f64]) -> Option<Distribution> {
    servebench::metrics::distribution(values, PercentileMethod::Linear)
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
                        RequestError::new(
                            ErrorKind::RateLimited,
                            Some(429),
                            "slow down, \"burst\" limit hit".to_string(),
                        )
                    } else {
                        RequestError::new(
                            ErrorKind::StreamBroken,
                            None,
                            "connection reset\nafter 3 chunks".to_string(),
                        )
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
    let recs = phase_records(spec, slow);
    let summary = summary_of(&recs, spec.errors);
    let (elapsed, total_in) = (summary.elapsed, summary.total_input_tokens);
    let ok = summary.success;
    let planned = spec.planned_prompt;
    let actual = total_in as f64 / ok as f64;
    let rel = (actual - planned) / planned;
    let start = index as f64 * 70.0;
    PhaseResult {
        hooks: Vec::new(),
        target_down: None,
        outages: Vec::new(),
        withheld: 0,
        header: PhaseHeader {
            phase: spec.name.to_string(),
            work_sha256: None,
            prompt_salt: None,
            route: spec.route.to_string(),
            target: spec.route.to_string(),
            workload: "short".to_string(),
            concurrency: spec.concurrency,
            rate_rps: spec.rate_rps,
            recheck_of: spec.recheck_of.map(str::to_string),
            started_at: format!("2026-11-30T10:{:02}:00Z", index + 1),
            start_offset_seconds: start,
        },
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
        achieved_rate_ratio: None,
        server_metrics: None,
        transport: Default::default(),
        request_timings: recs,
        records: None,
        client_load_share: None,
        client_ceiling: None,
        probe: None,
        marks: Vec::new(),
        recovery: None,
        cancellations: None,
        until: None,
        saturation_stop: None,
        client_trust: None,
        sessions: None,
        models: Vec::new(),
        archetypes: Vec::new(),
        slo: Vec::new(),
        cost: None,
        energy: None,
        overhead: None,
    }
}

/// The phase's 24 records, slowed by `slow` (their e2e kept consistent with the TTFT).
fn phase_records(spec: &PhaseSpec, slow: f64) -> Vec<RequestRecord> {
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
    recs
}

/// The summary the runner would tally over `recs`, for the figures the tests read.
fn summary_of(recs: &[RequestRecord], errors: u64) -> PhaseSummary {
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
    for r in recs {
        if let Some(e) = &r.error {
            *errors_by_kind.entry(e.kind).or_insert(0) += 1;
        }
    }
    PhaseSummary {
        requests: recs.len() as u64,
        success: ok.len() as u64,
        errors,
        elapsed,
        output_tokens_per_second: total_out as f64 / elapsed,
        request_rate: recs.len() as f64 / elapsed,
        figures: [
            (Figure::Ttft, dist(&secs(|r| r.ttft_ms))),
            (Figure::Tpot, dist(&secs(|r| r.tpot_ms))),
            (Figure::E2e, dist(&secs(|r| Some(r.e2e_ms)))),
            (
                Figure::TimeToFirstOutput,
                dist(&secs(|r| r.time_to_first_output_ms)),
            ),
            (
                Figure::InputTokens,
                dist(
                    &ok.iter()
                        .filter_map(|r| r.prompt_tokens)
                        .map(|v| v as f64)
                        .collect::<Vec<_>>(),
                ),
            ),
            (
                Figure::OutputTokens,
                dist(
                    &ok.iter()
                        .filter_map(|r| r.output_tokens)
                        .map(|v| v as f64)
                        .collect::<Vec<_>>(),
                ),
            ),
        ]
        .into_iter()
        .filter_map(|(figure, d)| Some((figure, d?)))
        .collect(),
        total_input_tokens: total_in,
        total_output_tokens: total_out,
        content_chunks: ok.iter().map(|r| r.content_chunks).sum(),
        output_token_sources: [(OutputTokenSource::Usage, ok.len() as u64)].into(),
        errors_by_kind,
        ..PhaseSummary::default()
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
        original_interval: None,
        recheck_interval: None,
        change_interval: None,
    }
}

/// A hand-built report of a small gateway plan; `slow` multiplies every TTFT.
pub fn sample_report(slow: f64) -> Report {
    let phases: Vec<PhaseResult> = SPECS
        .iter()
        .enumerate()
        .map(|(i, s)| phase(s, i, slow))
        .collect();
    let recheck = sample_recheck(&phases);
    Report {
        schema: report::REPORT_SCHEMA.to_string(),
        tool: ToolInfo {
            name: "servebench".to_string(),
            version: "0.1.0".to_string(),
        },
        span: report::RunSpan {
            run_id: "gateway-demo-20261130T100000Z".to_string(),
            started_at: "2026-11-30T10:00:00Z".to_string(),
            finished_at: Some("2026-11-30T10:07:30Z".to_string()),
            partial: false,
            stop_reason: None,
        },
        provenance: None,
        host: HostFacts {
            hostname: "bench-1".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            cpus: 2,
            cpu_model: None,
            kernel: None,
            memory_bytes: None,
            cpu_latency_hint: None,
        },
        plan_source: PlanSource {
            path: "plans/gateway-demo.yaml".into(),
            sha256: "ab".repeat(32),
        },
        vars: IndexMap::new(),
        plan: sample_plan(),
        metadata: IndexMap::from([("engine".to_string(), "vllm 0.26".into())]),
        timing_methodology: timing_methodology(),
        phases,
        repeats: Vec::new(),
        rechecks: vec![recheck],
        client_calibration: None,
        client_busy_poll: false,
        searches: Vec::new(),
        endpoints: Default::default(),
        shard: None,
        merged_from: None,
    }
}

/// The recheck of `gateway-c4`, stable unless a figure drifted.
fn sample_recheck(phases: &[PhaseResult]) -> RecheckPair {
    let by = |n: &str| {
        phases
            .iter()
            .find(|p| p.header.phase == n)
            .cloned()
            .expect("phase")
    };
    let (orig, re) = (by("gateway-c4"), by("recheck-c4"));
    let ttft = |p: &PhaseResult| *p.summary.distribution(Figure::Ttft).expect("ttft");
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
        original_interval: None,
        recheck_interval: None,
        change_interval: None,
    });
    let verdict = if metrics.iter().any(|d| d.verdict == DriftVerdict::Drifted) {
        DriftVerdict::Drifted
    } else {
        DriftVerdict::Stable
    };
    RecheckPair {
        original: "gateway-c4".into(),
        recheck: "recheck-c4".into(),
        metrics,
        verdict,
    }
}

/// The gateway plan the sample report ran: a direct target and one behind a gateway.
fn sample_plan() -> Plan {
    let target = |url: &str| Target {
        base_url: Some(url.to_string()),
        model: Some("demo-model".to_string()),
        ..Target::default()
    };
    Plan {
        version: 1,
        name: "gateway-demo".to_string(),
        description: Some("Direct vs <gateway> | least-request & friends".to_string()),
        vars: IndexMap::new(),
        metadata: IndexMap::from([("engine".to_string(), "vllm 0.26".into())]),
        seed: Some(7),
        percentile_method: PercentileMethod::Linear,
        slo: None,
        history: None,
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
    }
}

/// The timing definitions the report states.
fn timing_methodology() -> TimingMethodology {
    let words = |s: &str| s.to_string();
    TimingMethodology {
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
