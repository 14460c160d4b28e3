//! The figure table reaches every consumer: records that carry every field give every row a
//! value in the summary, by turn, on figure paths, in report.json and its schema, in the CSV
//! and in `compare`; and tool-call TTFT, a row like the others, is gated and compared.

use std::path::{Path, PathBuf};

use serde_json::Value;
use servebench::client::{OutputTokenSource, RequestRecord, SpecDecoding, derive_record_fields};
use servebench::figure::{FIGURES, Figure, Stat, Unit};
use servebench::metrics::turn_figures;
use servebench::plan::PercentileMethod;
use servebench::report::compare::compare;
use servebench::report::compare::gate::Gate;
use servebench::report::figure_path::{FigurePath, compared_paths};
use servebench::report::{
    Figures, Measured, PhaseFacts, PhaseHeader, PhaseResult, Report, phase_result, read_report,
};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Successful requests with every field a figure reads: two sessions of two turns, server
/// timings, send lag and slot waits, cached tokens and a tool call; `tool_ms` is the tool-call TTFT.
fn records(tool_ms: f64) -> Vec<RequestRecord> {
    (0..4u64)
        .map(|i| {
            let x = i as f64;
            let mut r = RequestRecord {
                request_index: i,
                request_id: format!("r-{i}"),
                start_offset_ms: 100.0 * x,
                scheduled_offset_ms: Some(100.0 * x - 0.5),
                send_lag_ms: Some(0.5 + x),
                slot_wait_ms: Some(0.25 * x),
                time_to_first_output_ms: Some(40.0 + x),
                ttft_ms: Some(50.0 + x),
                e2e_ms: 400.0 + 10.0 * x,
                max_inter_chunk_ms: Some(12.0 + x),
                prompt_tokens: Some(100 + i),
                output_tokens: Some(20),
                cached_tokens: Some(10 * i),
                server_queue_ms: Some(2.0 + x),
                server_prompt_ms: Some(30.0 + x),
                server_total_ms: Some(380.0 + x),
                ttft_tool_ms: Some(tool_ms + x),
                tool_call_chunks: 3 + i,
                session: Some(i / 2),
                turn: Some(i % 2),
                request_bytes: Some(700 + 10 * i),
                images: i % 2,
                reasoning_tokens: Some(5 + i),
                reasoning_token_source: Some(OutputTokenSource::Usage),
                spec_decoding: Some(SpecDecoding {
                    mean_acceptance_length: 1.0 + (2 + i) as f64 / 4.0,
                    draft_acceptance_rate: (2 + i) as f64 / 12.0,
                    acceptance_histogram: vec![1, 1, 1, 1],
                    num_spec_steps: 4,
                    num_accepted_draft_tokens: 2 + i,
                    num_draft_tokens: Some(12),
                    num_spec_tokens: Some(3),
                }),
                ..RequestRecord::default()
            };
            derive_record_fields(&mut r);
            r
        })
        .collect()
}

fn phase(name: &str, tool_ms: f64) -> PhaseResult {
    let facts = PhaseFacts {
        header: PhaseHeader {
            phase: name.to_string(),
            ..PhaseHeader::default()
        },
        prompt_tolerance: 0.1,
        connection_reuse: true,
        ..PhaseFacts::default()
    };
    let figures = Figures {
        method: PercentileMethod::Linear,
        slo: None,
        previous: None,
    };
    phase_result(facts, Measured::All(records(tool_ms)), figures)
}

/// The sample report with one phase.
fn report_with(phase: PhaseResult) -> Report {
    let mut report = read_report(&root().join("tests/fixtures/reports/sample.json")).unwrap();
    report.phases = vec![phase];
    report.rechecks.clear();
    report
}

#[test]
fn every_row_of_the_figure_table_reaches_every_consumer() {
    let phase = phase("all", 20.0);
    let json = serde_json::to_value(&phase).unwrap();
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schemas/report.schema.json")).unwrap(),
    )
    .unwrap();
    let phase_schema = &schema["$defs"]["PhaseResult"]["properties"];
    let report = report_with(phase.clone());
    let csv_text = servebench::report::formats::csv::render_phases(&report);
    let mut csv = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    let row = csv.records().next().unwrap().unwrap();
    let turn = &phase.sessions.as_ref().expect("sessions").turns[0];
    for spec in &FIGURES {
        let name = spec.name;
        let d = phase.summary.distribution(spec.figure);
        assert!(d.is_some_and(|d| d.samples > 0), "{name}: no summary value");
        assert!(json[name]["p50"].is_number(), "{name}: not in report.json");
        assert!(
            phase_schema.get(name).is_some(),
            "{name}: not in the schema"
        );
        for stat in Stat::ALL {
            let path: FigurePath = format!("{name}.{}", stat.name()).parse().unwrap();
            assert!(path.value(&phase).is_some(), "{path}: no value");
            // Times in milliseconds with the unit last, other figures in their own unit.
            let heading = match spec.unit {
                Unit::Seconds => format!("{name}_{}_ms", stat.name()),
                _ => format!("{name}_{}", stat.name()),
            };
            let column = header.iter().position(|h| *h == heading);
            let column = column.unwrap_or_else(|| panic!("{path}: no CSV column {heading}"));
            assert!(!row[column].is_empty(), "{path}: empty CSV cell");
        }
    }
    for spec in turn_figures() {
        let d = turn.figures.get(spec.figure);
        assert!(
            d.is_some_and(|d| d.samples > 0),
            "{}: no value by turn",
            spec.name
        );
    }
    // Compare lists each row's `compared` statistics.
    let listed: Vec<String> = compare("a", &report, "b", &report, &[]).phases[0]
        .metrics
        .iter()
        .map(|m| m.metric.clone())
        .collect();
    // (Counts and rates are listed when a side has them: inputs/s only for embeddings.)
    for path in compared_paths() {
        if let FigurePath::Dist(..) = path {
            assert!(listed.contains(&path.to_string()), "{path} not compared");
        }
    }
}

fn gate(text: &str) -> Gate {
    text.parse().unwrap()
}

#[test]
fn tool_call_ttft_is_compared_and_gated() {
    let base = report_with(phase("tools", 20.0));
    let new = report_with(phase("tools", 30.0));
    let gates = [
        gate("ttft_tool_ms.p99 < +10%"),
        gate("tools:ttft_tool_ms.p50 <= 40ms"),
    ];
    let comparison = compare("base.json", &base, "new.json", &new, &gates);
    let change = comparison.phases[0]
        .metrics
        .iter()
        .find(|m| m.metric == "ttft_tool_ms.p99")
        .expect("compared by default");
    // Milliseconds, as the figure is named: p99 of 20–23 ms against 30–33 ms.
    assert!((change.change.unwrap() - 10.0).abs() < 1e-9, "{change:?}");
    let verdicts: Vec<bool> = comparison.gates.iter().map(|g| g.passed).collect();
    assert_eq!(verdicts, [false, true], "{:?}", comparison.gates);
    assert!(!comparison.passed);
    // Phases without tool calls list no tool-call figures.
    let mut plain = new.clone();
    plain.phases[0].summary.figures.set(Figure::TtftTool, None);
    let mut plain_base = base;
    plain_base.phases[0]
        .summary
        .figures
        .set(Figure::TtftTool, None);
    let quiet = compare("a", &plain_base, "b", &plain, &[]);
    assert!(
        quiet.phases[0]
            .metrics
            .iter()
            .all(|m| !m.metric.starts_with("ttft_tool_ms")),
        "{:?}",
        quiet.phases[0].metrics
    );
}

#[test]
fn the_sample_report_reads_without_its_null_figures() {
    // Reports written before absent figures were left out carry `null` for them.
    let path: &Path = &root().join("tests/fixtures/reports/sample.json");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.contains("\"decode_tok_s\": null"),
        "the fixture has nulls"
    );
    let report = read_report(path).unwrap();
    let s = &report.phases[0].summary;
    assert!(s.distribution(Figure::DecodeTokS).is_none());
    assert!(s.distribution(Figure::Ttft).is_some());
}
