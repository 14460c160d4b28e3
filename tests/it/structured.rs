//! Structured output against the simulator: the `response_format` reaches the server as each
//! API takes it, each reply is checked after its request, `valid_share` carries a Wilson
//! interval that holds the simulator's planned share, a `compare_to` phase's overhead
//! recovers the simulator's grammar cost within its interval, and the new figures reach
//! report.json, markdown and HTML, the CSV and the records file, `compare`, gates and the
//! history. Plus the plan checks.

use std::path::Path;

use servebench::report::Report;
use servebench::report::compare::compare;

use crate::common::{history_ok, sim_series};
use servebench::report::compare::gate::Gate;

const SCHEMA: &str = r#"{type: object, required: [name, age, tags], properties: {name: {type: string}, age: {type: integer, minimum: 0, maximum: 120}, tags: {type: array, items: {type: string}}, kind: {enum: [a, b, c]}}}"#;

fn plan(sim: &str, api: &str, phases: &str) -> String {
    format!(
        "version: 1
name: structured
seed: 11
targets:
  sim: {{simulator: {sim}, api: {api}}}
workloads:
  plain: {{input_tokens: 32, output_tokens: 64}}
  json: {{input_tokens: 32, output_tokens: 400, response_format: {{type: json_schema, name: person, strict: true, schema: {SCHEMA}}}}}
defaults: {{target: sim}}
phases:
{phases}"
    )
}

async fn run(dir: &Path, yaml: &str) -> Report {
    crate::common::run_plan_text(dir, yaml).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifth_broken_gives_a_valid_share_whose_interval_holds_four_fifths() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let sim = "{seed: 5, invalid_share: 0.2, prefill_tok_s: 0, decode_ms_per_token: 0, decode_ms_per_running: 0}";
    let phases = "  - {name: json, workload: json, concurrency: 8, requests: 300}\n";
    let report = run(dir.path(), &plan(sim, "chat", phases)).await;
    let phase = &report.phases[0];
    let out = phase.summary.structured_output.as_ref().expect("checked");
    assert_eq!(out.checked, 300, "{out:?}");
    let [lo, hi] = out.valid_share_ci95;
    assert!(lo <= 0.8 && 0.8 <= hi, "{out:?}");
    assert!(out.valid_share < 1.0 && out.valid > 0);
    // Broken replies are either cut JSON or an object without its first required property.
    for reason in &out.invalid {
        assert!(
            ["not JSON", "schema: /"].contains(&reason.reason.as_str()),
            "{reason:?}"
        );
    }
    assert_eq!(
        out.invalid.iter().map(|r| r.count).sum::<u64>(),
        300 - out.valid
    );
    // The kept replies, checked again here by hand, give the same verdicts.
    let schema: serde_json::Value = person_schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for r in &phase.request_timings {
        let reply = r.reply.as_deref().expect("kept");
        let ok =
            serde_json::from_str::<serde_json::Value>(reply).is_ok_and(|v| validator.is_valid(&v));
        assert_eq!(r.valid, Some(ok), "{reply}");
    }
}

/// The workload's schema as JSON.
fn person_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object", "required": ["name", "age", "tags"],
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "tags": {"type": "array", "items": {"type": "string"}},
            "kind": {"enum": ["a", "b", "c"]}
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_api_that_takes_a_schema_gets_it_and_every_reply_satisfies_it() {
    let _exclusive = crate::common::exclusive_run().await;
    // The simulator writes its reply from the schema it was sent: a schema lost on the way
    // would give `{"answer": …}`, which fails the required properties.
    let sim = "{prefill_tok_s: 0, decode_ms_per_token: 0, decode_ms_per_running: 0}";
    for api in ["chat", "completions", "responses"] {
        let dir = tempfile::tempdir().unwrap();
        let phases = "  - {name: json, workload: json, concurrency: 2, requests: 20}\n";
        let report = run(dir.path(), &plan(sim, api, phases)).await;
        let out = report.phases[0].summary.structured_output.clone();
        let out = out.unwrap_or_else(|| panic!("{api}: not checked"));
        assert_eq!((out.checked, out.valid), (20, 20), "{api}: {out:?}");
    }
    // A cap below the reply's length cuts it: every reply is put down to the cut.
    let dir = tempfile::tempdir().unwrap();
    let yaml = plan(
        sim,
        "chat",
        "  - {name: json, workload: json, concurrency: 2, requests: 10}\n",
    )
    .replace("output_tokens: 400", "output_tokens: 3");
    let report = run(dir.path(), &yaml).await;
    let out = report.phases[0].summary.structured_output.clone().unwrap();
    assert_eq!(out.valid, 0);
    assert_eq!(out.invalid[0].reason, "cut by max_tokens", "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overhead_of_a_grammar_cost_comes_out_within_its_interval() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    // 2 ms a token unconstrained, 2 + 2 under the grammar, each jittered ±20%. Replies of
    // about 160 tokens either way, so the last token's timer rounding is a small part of TPOT.
    let sim = "{seed: 9, jitter: 0.2, prefill_tok_s: 0, decode_ms_per_token: 2, decode_ms_per_running: 0, grammar_ms_per_token: 2}";
    let phases = "  - {name: free, workload: plain, concurrency: 4, requests: 80}
  - {name: json, workload: json, concurrency: 4, requests: 80, compare_to: free}
";
    let long = "{type: object, required: [items], properties: {items: {type: array, minItems: 8, maxItems: 10, items: {type: object, properties: {name: {type: string}, note: {type: string}, n: {type: integer}}}}}}";
    let yaml = plan(sim, "chat", phases)
        .replace(SCHEMA, long)
        .replace("output_tokens: 64", "output_tokens: 160, ignore_eos: true");
    let report = run(dir.path(), &yaml).await;
    let json = &report.phases[1];
    let overhead = json.overhead.as_ref().expect("compared");
    assert_eq!(overhead.against, "free");
    let tpot = overhead
        .figures
        .iter()
        .find(|f| f.figure == "tpot.p50")
        .expect("tpot");
    // TPOT is in seconds: the grammar's 2 ms a token.
    let [lo, hi] = tpot.ci95;
    assert!(lo <= 0.002 && 0.002 <= hi, "{tpot:?}");
    assert!(lo > 0.0, "the overhead is told from noise: {tpot:?}");
    assert!((tpot.relative_change - 1.0).abs() < 0.1, "{tpot:?}");
    for figure in ["ttft.p50", "decode_tok_s.p50"] {
        assert!(
            overhead.figures.iter().any(|f| f.figure == figure),
            "{figure}"
        );
    }
    let path: servebench::report::model::figure_path::FigurePath =
        "overhead.tpot_p50".parse().unwrap();
    assert_eq!(path.value(json), Some(tpot.relative_change));
    assert!(report.phases[0].overhead.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_share_and_overhead_reach_every_output() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let sim = "{seed: 2, invalid_share: 0.1, prefill_tok_s: 0, decode_ms_per_token: 0.2, decode_ms_per_running: 0, grammar_ms_per_token: 0.2}";
    let phases = "  - {name: free, workload: plain, concurrency: 2, requests: 40}
  - {name: json, workload: json, concurrency: 2, requests: 40, compare_to: free}
";
    let yaml = plan(sim, "chat", phases);
    let report = run(dir.path(), &yaml).await;
    let json = &report.phases[1];
    let share = json.summary.structured_output.clone().unwrap().valid_share;
    // report.json, and its schema.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/report.json")).unwrap())
            .unwrap();
    crate::common::assert_valid_report(&doc);
    assert_eq!(doc["phases"][1]["structured_output"]["valid_share"], share);
    assert!(doc["phases"][1]["overhead"]["figures"].is_array());
    // Markdown and HTML.
    let md = servebench::report::formats::markdown::render(&report);
    let html = servebench::report::formats::html::render(&report);
    for text in [&md, &html] {
        assert!(text.contains("Checked replies"), "no section");
        assert!(
            text.contains(&format!("{:.1}%", share * 100.0)),
            "no valid_share"
        );
        assert!(text.contains("tpot.p50"), "no overhead");
    }
    // The phase CSV, and the records file with each reply's verdict.
    let csv_text = servebench::report::formats::csv::render_phases(&report);
    let mut csv = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    for column in ["valid_share", "valid_share_ci95_lo", "overhead.tpot_p50"] {
        let at = header.iter().position(|h| h == column).expect(column);
        assert!(!rows[1][at].is_empty(), "{column}");
    }
    let at = header.iter().position(|h| h == "valid_share").unwrap();
    assert_eq!(rows[1][at].parse::<f64>().unwrap(), share);
    let records = crate::common::record_rows(&dir.path().join("out"));
    let checked: Vec<_> = records
        .iter()
        .filter(|r| r.phase == "json" && r.record.valid.is_some())
        .collect();
    assert_eq!(checked.len(), 40);
    assert!(checked.iter().all(|r| r.record.reply.is_some()));
    assert!(
        records
            .iter()
            .filter(|r| r.phase == "free")
            .all(|r| r.record.reply.is_none()),
        "unchecked replies are not kept"
    );
    // Compare (with a bootstrap interval of the share) and gates.
    let gates: Vec<Gate> = [
        "json:valid_share >= 0.95",
        "json:valid_share >= 0.5",
        "json:overhead.tpot_p50 < 10",
    ]
    .iter()
    .map(|g| g.parse().unwrap())
    .collect();
    let comparison = compare("a", &report, "b", &report, &gates);
    let compared = comparison
        .phases
        .iter()
        .find(|p| p.phase == "json")
        .unwrap();
    let change = compared
        .metrics
        .iter()
        .find(|m| m.metric == "valid_share")
        .expect("compared");
    assert_eq!(change.new, Some(share));
    assert!(change.ci95.is_some(), "{change:?}");
    assert!(
        compared
            .metrics
            .iter()
            .any(|m| m.metric == "overhead.tpot_p50")
    );
    let verdicts: Vec<bool> = comparison.gates.iter().map(|g| g.passed).collect();
    assert_eq!(
        verdicts,
        [share >= 0.95, true, true],
        "{:?}",
        comparison.gates
    );
    // The history: recorded with its interval, read back as a series.
    let store = dir.path().join("history.sqlite");
    let store = store.to_str().unwrap();
    let report = dir.path().join("out/report.json");
    history_ok(store, &["record", report.to_str().unwrap()]);
    for figure in ["valid_share", "overhead.tpot_p50"] {
        let series = sim_series(store, "structured", "json", figure);
        let point = &series["points"][0];
        assert!(point["value"].is_number(), "{figure}: {series}");
        if figure == "valid_share" {
            assert_eq!(point["value"], share);
            assert!(!point["interval"].is_null(), "{series}");
        }
    }
}

#[test]
fn response_formats_an_api_cannot_take_or_without_a_schema_are_refused_at_their_key() {
    let with_schema =
        "{input_tokens: 8, response_format: {type: json_schema, schema: {type: object}}}";
    let cases = [
        (
            with_schema,
            "messages",
            "applies to `api: chat`",
            "response_format",
        ),
        (
            with_schema,
            "embeddings",
            "applies to `api: chat`",
            "response_format",
        ),
        (
            "{input_tokens: 8, response_format: {type: json_schema}}",
            "chat",
            "needs the schema",
            "type",
        ),
        (
            "{input_tokens: 8, response_format: {type: json_object, name: x}}",
            "chat",
            "belongs to `type: json_schema`",
            "name",
        ),
        (
            "{input_tokens: 8, response_format: {type: json_schema, schema: {type: 12}}}",
            "chat",
            "not a valid JSON Schema",
            "schema: {type: 12}",
        ),
    ];
    crate::common::assert_refused_at_their_key("structured", &cases);
    // compare_to names a phase of the plan.
    let dir = tempfile::tempdir().unwrap();
    let yaml = crate::common::one_phase_sim_plan("structured", "{input_tokens: 8}", "chat")
        .replace("requests: 4}", "requests: 4, compare_to: q}");
    let (code, stderr) = crate::common::validate_yaml(dir.path(), &yaml);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no phase is named `q`"), "{stderr}");
    assert!(stderr.contains("plan.yaml:8:"), "{stderr}");
}
