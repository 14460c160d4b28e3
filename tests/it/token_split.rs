//! Reasoning tokens apart from content and speculative-decoding acceptance, against the
//! simulator over loopback with a fixed seed: a draft model accepting 0.6 of its draft tokens
//! gives a measured rate whose 95% interval holds 0.6 and agrees with the counters scraped
//! over the window; reasoning tokens from usage equal the simulator's; a server reporting 0
//! while it streams reasoning is counted from the stream with a note; and each new figure is
//! found in report.json, markdown and HTML, the CSV and the records' Parquet, `compare`, gates
//! and the history.

use std::path::Path;

use serde_json::Value;
use servebench::client::OutputTokenSource;
use servebench::figure::Figure;
use servebench::report::Report;
use servebench::report::compare::compare;
use servebench::report::compare::gate::Gate;
use servebench::report::figure_path::FigurePath;
use servebench::report::formats::records::{COLUMNS, Cell, read_records};

const REQUESTS: u64 = 24;
const OUTPUT_TOKENS: u64 = 40;
/// The draft test's longer replies: some 2,000 verify steps, 6,000 draft tokens, so the
/// interval is a few hundredths wide.
const DRAFT_OUTPUT_TOKENS: u64 = 240;
const REASONING_TOKENS: u64 = 12;

/// A plan of one closed-loop phase against an embedded simulator with `simulator` settings.
fn plan(simulator: &str, output_tokens: u64) -> String {
    format!(
        "version: 1
name: token-split
seed: 3
targets:
  sim:
    simulator: {simulator}
workloads:
  w: {{input_tokens: 32, output_tokens: {output_tokens}, ignore_eos: true}}
phases:
  - {{name: p, target: sim, workload: w, concurrency: 4, requests: {REQUESTS}}}
"
    )
}

async fn run(dir: &Path, simulator: &str) -> Report {
    run_with(dir, simulator, OUTPUT_TOKENS).await
}

async fn run_with(dir: &Path, simulator: &str, output_tokens: u64) -> Report {
    crate::common::run_plan_text(dir, &plan(simulator, output_tokens)).await
}

fn value(report: &Report, path: &str) -> Option<f64> {
    let path: FigurePath = path.parse().unwrap();
    path.value(&report.phases[0])
}

const DRAFT: &str = "{seed: 7, prefill_tok_s: 0, decode_ms_per_token: 0.2, \
    speculative: {acceptance_rate: 0.6, num_speculative_tokens: 3}}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_accepting_six_tenths_is_measured_within_its_interval_and_by_the_counters() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let report = run_with(dir.path(), DRAFT, DRAFT_OUTPUT_TOKENS).await;
    let phase = &report.phases[0];
    assert_eq!((phase.summary.success, phase.summary.errors), (REQUESTS, 0));
    // Every record carries the server's acceptance, and its chunks carry several tokens.
    let records = &phase.request_timings;
    assert!(records.iter().all(|r| r.spec_decoding.is_some()));
    let chunks: u64 = records.iter().map(|r| r.content_chunks).sum();
    assert_eq!(
        phase.summary.total_output_tokens,
        REQUESTS * DRAFT_OUTPUT_TOKENS
    );
    assert!(
        chunks * 3 < phase.summary.total_output_tokens * 2,
        "{chunks} chunks"
    );
    let s = phase.summary.spec_decode.as_ref().expect("acceptance");
    assert_eq!(s.requests, REQUESTS);
    let [lo, hi] = s.acceptance_rate_ci95.expect("an interval");
    println!(
        "simulated draft (0.6): rate {:?} [{lo}, {hi}], length {:?}, {} steps",
        s.acceptance_rate, s.acceptance_length, s.num_spec_steps
    );
    assert!(lo <= 0.6 && 0.6 <= hi, "[{lo}, {hi}]");
    assert!(hi - lo < 0.05, "[{lo}, {hi}]");
    assert_eq!(s.acceptance_histogram.iter().sum::<u64>(), s.num_spec_steps);
    assert_eq!(s.acceptance_histogram.len(), 4);
    // Accepted draft tokens and one bonus token a step, and a plain step where one token
    // was left, make every output token.
    let plain = REQUESTS * DRAFT_OUTPUT_TOKENS - s.num_accepted_draft_tokens - s.num_spec_steps;
    assert!(plain <= REQUESTS, "{plain} plain steps");
    // The counters over the window saw exactly the requests' steps and tokens.
    let c = s.counters.as_ref().expect("scraped counters");
    assert_eq!(c.draft_tokens, s.num_draft_tokens as f64);
    assert_eq!(c.accepted_tokens, s.num_accepted_draft_tokens as f64);
    assert!((c.acceptance_rate.unwrap() - s.acceptance_rate.unwrap()).abs() < 1e-12);
    assert!((c.acceptance_length.unwrap() - s.acceptance_length.unwrap()).abs() < 1e-12);
    let rate = value(&report, "spec_decode.acceptance_rate").unwrap();
    assert_eq!(Some(rate), s.acceptance_rate);
    assert!(value(&report, "spec_decode.acceptance_length").unwrap() > 2.0);
    assert!(value(&report, "spec_acceptance_rate.mean").is_some());
    assert!(value(&report, "spec_acceptance_length.p50").is_some());
    check_outputs(
        &dir.path().join("out"),
        &report,
        &["spec_acceptance_rate", "spec_acceptance_length"],
    );
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("## Speculative decoding"), "{md}");
    assert!(md.contains("| Accepted | Steps | Share |"), "{md}");
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(html.contains("verify steps by draft tokens accepted</text>"));
    let gates = [
        "spec_decode.acceptance_rate > 0.5",
        "spec_acceptance_length.mean > 1",
    ];
    check_compare_and_gates(&report, &gates, "spec_decode.acceptance_rate");
    check_history(
        dir.path(),
        &report,
        &[
            "spec_decode.acceptance_rate",
            "spec_decode.acceptance_length",
            "spec_acceptance_rate.mean",
            "spec_acceptance_length.p50",
        ],
    );
    check_scalar_columns(
        &report,
        &[
            "spec_decode_acceptance_rate",
            "spec_decode_acceptance_length",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_tokens_from_usage_equal_the_simulators_and_content_is_the_rest() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let sim = format!(
        "{{seed: 5, prefill_tok_s: 0, decode_ms_per_token: 0.2, reasoning_tokens: {REASONING_TOKENS}}}"
    );
    let report = run(dir.path(), &sim).await;
    let phase = &report.phases[0];
    for r in &phase.request_timings {
        assert_eq!(r.reasoning_tokens, Some(REASONING_TOKENS));
        assert_eq!(r.reasoning_token_source, Some(OutputTokenSource::Usage));
        assert_eq!(r.content_tokens(), Some(OUTPUT_TOKENS - REASONING_TOKENS));
    }
    let s = phase.summary.reasoning.as_ref().expect("reasoning apart");
    assert_eq!(s.total_reasoning_tokens, REQUESTS * REASONING_TOKENS);
    assert_eq!(
        s.total_content_tokens,
        REQUESTS * (OUTPUT_TOKENS - REASONING_TOKENS)
    );
    assert_eq!(s.counted_from_stream, 0);
    let content_rate = s.total_content_tokens as f64 / phase.summary.elapsed;
    assert!((s.content_tokens_per_second - content_rate).abs() < 1e-9);
    assert!(s.content_tokens_per_second < phase.summary.output_tokens_per_second);
    assert_eq!(
        value(&report, "total_reasoning_tokens"),
        Some((REQUESTS * REASONING_TOKENS) as f64)
    );
    assert_eq!(
        value(&report, "reasoning_tokens.p50"),
        Some(REASONING_TOKENS as f64)
    );
    assert_eq!(
        value(&report, "content_tokens.max"),
        Some((OUTPUT_TOKENS - REASONING_TOKENS) as f64)
    );
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("## Reasoning and content tokens"), "{md}");
    assert!(!md.contains("Reasoning counted from the stream"), "{md}");
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(html.contains("Content tok/s"));
    check_outputs(
        &dir.path().join("out"),
        &report,
        &["reasoning_tokens", "content_tokens"],
    );
    check_compare_and_gates(
        &report,
        &[
            "content_tokens_per_second > 1",
            "reasoning_tokens.mean >= 12",
        ],
        "content_tokens_per_second",
    );
    check_history(
        dir.path(),
        &report,
        &[
            "content_tokens_per_second",
            "total_reasoning_tokens",
            "total_content_tokens",
            "reasoning_tokens.mean",
            "content_tokens.p50",
        ],
    );
    check_scalar_columns(
        &report,
        &[
            "total_reasoning_tokens",
            "total_content_tokens",
            "content_tokens_per_second",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_reporting_zero_while_streaming_reasoning_is_counted_from_the_stream() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let sim = format!(
        "{{seed: 5, prefill_tok_s: 0, decode_ms_per_token: 0.2, reasoning_tokens: {REASONING_TOKENS}, \
         dialect: {{zero_reasoning_usage: true}}}}"
    );
    let report = run(dir.path(), &sim).await;
    let phase = &report.phases[0];
    for r in &phase.request_timings {
        // One token a delta: the reasoning deltas' share of the usage's 40 is the 12 streamed.
        assert_eq!(r.reasoning_chunks, REASONING_TOKENS);
        assert_eq!(r.reasoning_tokens, Some(REASONING_TOKENS));
        assert_eq!(r.reasoning_token_source, Some(OutputTokenSource::Counted));
    }
    let s = phase.summary.reasoning.as_ref().expect("reasoning apart");
    assert_eq!(s.counted_from_stream, REQUESTS);
    assert_eq!(s.total_reasoning_tokens, REQUESTS * REASONING_TOKENS);
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("Reasoning counted from the stream"), "{md}");
    assert!(
        md.contains(&format!("p ({REQUESTS} of {REQUESTS})")),
        "{md}"
    );
}

/// report.json (and its schema), the phase CSV and the records' Parquet name each figure.
fn check_outputs(out: &Path, report: &Report, figures: &[&str]) {
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    crate::common::assert_valid_report(&json);
    let phase = &json["phases"][0];
    for name in figures {
        assert!(phase[name]["mean"].is_number(), "{name} not in report.json");
        let figure = Figure::named(name).unwrap();
        assert!(report.phases[0].summary.distribution(figure).is_some());
    }
    let csv_text = servebench::report::formats::csv::render_phases(report);
    let mut csv = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    let row = csv.records().next().unwrap().unwrap();
    for name in figures {
        let at = header
            .iter()
            .position(|h| *h == format!("{name}_mean"))
            .unwrap();
        assert!(!row[at].is_empty(), "{name}: empty CSV cell");
    }
    let parts: Vec<_> = walk(&out.join("requests"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    assert!(
        !parts.is_empty(),
        "no Parquet parts under {}",
        out.display()
    );
    let rows: Vec<_> = parts
        .iter()
        .flat_map(|p| read_records(p).unwrap())
        .map(Result::unwrap)
        .filter(|r| r.record.is_ok())
        .collect();
    for name in figures {
        let column = COLUMNS.iter().find(|c| c.name == *name);
        let figure = Figure::named(name).unwrap();
        // The records read back give the figure, and a column holds it where one is named.
        assert!(
            rows.iter().all(|r| r.record.value(figure).is_some()),
            "{name}"
        );
        if let Some(column) = column {
            assert!(
                rows.iter().all(|r| !matches!((column.get)(r), Cell::Null)),
                "{name}"
            );
        }
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| {
            let path = e.path();
            if path.is_dir() {
                walk(&path)
            } else {
                vec![path]
            }
        })
        .collect()
}

/// The phase CSV's scalar columns hold the report's values.
fn check_scalar_columns(report: &Report, columns: &[&str]) {
    let csv_text = servebench::report::formats::csv::render_phases(report);
    let mut csv = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    let row = csv.records().next().unwrap().unwrap();
    for column in columns {
        let at = header.iter().position(|h| h == column).expect(column);
        let path = column.replacen("spec_decode_", "spec_decode.", 1);
        let want = value(report, &path).expect("the report has it");
        assert_eq!(row[at].parse::<f64>().ok(), Some(want), "{column}");
    }
}

/// `compare` lists `listed` for the phase; every gate passes against the report itself.
fn check_compare_and_gates(report: &Report, gates: &[&str], listed: &str) {
    let gates: Vec<Gate> = gates.iter().map(|g| g.parse().unwrap()).collect();
    let comparison = compare("a.json", report, "b.json", report, &gates);
    let metrics: Vec<&str> = comparison.phases[0]
        .metrics
        .iter()
        .map(|m| m.metric.as_str())
        .collect();
    assert!(metrics.contains(&listed), "{metrics:?}");
    assert!(comparison.passed, "{:?}", comparison.gates);
    assert_eq!(comparison.gates.len(), gates.len());
}

/// `history record` keeps each figure and `history series` gives it back as the report has it.
fn check_history(dir: &Path, report: &Report, figures: &[&str]) {
    let store = dir.join("history.db");
    let store = store.to_str().unwrap();
    let path = dir.join("out/report.json");
    crate::common::history_ok(store, &["record", path.to_str().unwrap()]);
    for figure in figures {
        let json = crate::common::sim_series(store, "token-split", "p", figure);
        let want = value(report, figure).expect("the report has it");
        assert_eq!(
            json["points"][0]["value"].as_f64(),
            Some(want),
            "{figure}: {json}"
        );
    }
}

/// Seed 000, a reasoning run read from its file: reasoning apart, counted from its stream.
#[test]
fn the_seeds_reasoning_run_reports_reasoning_and_content_apart() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let report = servebench::report::read_report(
        &root.join("tests/fixtures/seeds/000_adbc5efdce65c6e3.txt"),
    )
    .expect("seed 000");
    let s = &report.phases[0].summary;
    let r = s.reasoning.as_ref().expect("reasoning apart");
    assert_eq!(r.requests, 16);
    assert_eq!(r.counted_from_stream, 16);
    assert_eq!(
        r.total_reasoning_tokens + r.total_content_tokens,
        s.total_output_tokens
    );
    // 783 of 887 deltas were reasoning: most of the 3,179 tokens.
    assert!(
        r.total_reasoning_tokens > 2500 && r.total_reasoning_tokens < 3000,
        "{r:?}"
    );
    let md = servebench::report::formats::markdown::render(&report);
    assert!(md.contains("## Reasoning and content tokens"));
    assert!(md.contains("Reasoning counted from the stream"));
}

/// A stream vLLM 0.32's CPU build sent with n-gram speculation and
/// `--per-request-spec-decode-metrics summary`: the usage chunk's acceptance is kept as sent,
/// and its deltas carry several tokens each.
#[test]
fn vllms_captured_stream_gives_its_acceptance_as_sent() {
    use servebench::client::stream::StreamState;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(
        root.join("tests/fixtures/spec_decode/vllm-0.32-cpu-ngram-stream.txt"),
    )
    .unwrap();
    let mut state = StreamState::default();
    for (i, data) in text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .enumerate()
    {
        state.on_event(data.as_bytes(), i as f64);
    }
    assert!(state.done);
    let s = state.spec_decoding.expect("the usage chunk's acceptance");
    assert_eq!(s.acceptance_histogram, vec![5, 1, 0, 5]);
    assert_eq!((s.num_spec_steps, s.num_accepted_draft_tokens), (11, 16));
    assert_eq!((s.num_draft_tokens, s.num_spec_tokens), (Some(33), Some(3)));
    assert_eq!(s.draft_acceptance_rate, 0.48484848484848486);
    assert_eq!(state.completion_tokens, Some(32));
    assert!(state.content_chunks < 32, "{} deltas", state.content_chunks);
}
