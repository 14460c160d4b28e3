//! Answers checked under load, against the simulator: a generated scored set answered right
//! for a planned share gives an accuracy whose interval holds that share; the figure reaches
//! report.json, markdown and HTML, the CSV and the records file, `compare`, gates and the
//! history; bad scorers are refused at their key, and a scored dataset row without
//! `expected` stops the run before any request is sent.

use servebench::report::compare::compare;

use crate::common::{history_ok, sim_series};
use servebench::report::compare::gate::Gate;

fn plan(sim: &str, set: &str, score: &str, requests: u32) -> String {
    format!(
        "version: 1
name: accuracy
seed: 3
targets:
  sim: {{simulator: {sim}}}
workloads:
  w: {{dataset: {set}, output_tokens: 32, temperature: 0, score: {score}}}
phases:
  - {{name: scored, target: sim, workload: w, concurrency: 4, requests: {requests}}}
"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nine_in_ten_simulator_gives_an_accuracy_whose_interval_holds_nine_in_ten() {
    let _exclusive = crate::common::exclusive_run().await;
    let sim = "{seed: 4, correct_share: 0.9, prefill_tok_s: 0, decode_ms_per_token: 0, decode_ms_per_running: 0}";
    for (set, score) in [
        (
            "{generate: arithmetic, rows: 50, seed: 1}",
            "{number: {tolerance: 0}}",
        ),
        ("{generate: copy, rows: 50, seed: 1}", "normalized"),
        ("{generate: json_extract, rows: 50, seed: 1}", "exact"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let report = crate::common::run_plan_text(dir.path(), &plan(sim, set, score, 400)).await;
        let phase = &report.phases[0];
        let a = phase
            .summary
            .accuracy
            .clone()
            .unwrap_or_else(|| panic!("{set}: unscored"));
        assert_eq!(a.scored, 400, "{set}: {a:?}");
        let [lo, hi] = a.accuracy_ci95;
        assert!(lo <= 0.9 && 0.9 <= hi, "{set}: {a:?}");
        assert!(a.correct < a.scored, "{set}: some answers are wrong");
        // Each kept reply, scored again here, gives the record's verdict.
        for r in &phase.request_timings {
            let (reply, expected) = (r.reply.as_deref().unwrap(), r.expected.as_deref().unwrap());
            let right = match score {
                "exact" => reply.trim() == expected,
                _ => reply.trim().to_lowercase() == expected.to_lowercase(),
            };
            assert_eq!(r.correct, Some(right), "{reply:?} against {expected:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accuracy_reaches_every_output() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let sim = "{seed: 6, correct_share: 0.8, prefill_tok_s: 0, decode_ms_per_token: 0, decode_ms_per_running: 0}";
    let yaml = plan(sim, "{generate: copy, rows: 20}", "normalized", 60);
    let report = crate::common::run_plan_text(dir.path(), &yaml).await;
    let phase = &report.phases[0];
    let accuracy = phase.summary.accuracy.clone().unwrap().accuracy;
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/report.json")).unwrap())
            .unwrap();
    crate::common::assert_valid_report(&doc);
    assert_eq!(doc["phases"][0]["accuracy"]["accuracy"], accuracy);
    let md = servebench::report::formats::markdown::render(&report);
    let html = servebench::report::formats::html::render(&report);
    for text in [&md, &html] {
        assert!(text.contains("Checked replies"));
        assert!(text.contains(&format!("{:.1}%", accuracy * 100.0)));
    }
    let csv_text = servebench::report::formats::csv::render_phases(&report);
    let mut csv = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    let row = csv.records().next().unwrap().unwrap();
    let at = header.iter().position(|h| h == "accuracy").unwrap();
    assert_eq!(row[at].parse::<f64>().unwrap(), accuracy);
    let rows = crate::common::record_rows(&dir.path().join("out"));
    assert_eq!(
        rows.iter().filter(|r| r.record.correct.is_some()).count(),
        60
    );
    assert!(
        rows.iter()
            .all(|r| r.record.expected.is_some() && r.record.reply.is_some())
    );
    let gates: Vec<Gate> = ["accuracy >= 0.95", "scored:accuracy >= 0.5"]
        .iter()
        .map(|g| g.parse().unwrap())
        .collect();
    let comparison = compare("a", &report, "b", &report, &gates);
    let change = comparison.phases[0]
        .metrics
        .iter()
        .find(|m| m.metric == "accuracy")
        .expect("compared");
    assert_eq!(change.new, Some(accuracy));
    assert!(change.ci95.is_some());
    let verdicts: Vec<bool> = comparison.gates.iter().map(|g| g.passed).collect();
    assert_eq!(verdicts, [accuracy >= 0.95, true]);
    let store = dir.path().join("history.sqlite");
    let store = store.to_str().unwrap();
    let report = dir.path().join("out/report.json");
    history_ok(store, &["record", report.to_str().unwrap()]);
    let series = sim_series(store, "accuracy", "scored", "accuracy");
    assert_eq!(series["points"][0]["value"], accuracy);
    assert!(!series["points"][0]["interval"].is_null(), "{series}");
}

#[test]
fn bad_scorers_are_refused_at_their_key() {
    let cases = [
        (
            "{dataset: {generate: copy}, score: {regex: \"(unclosed\"}}",
            "chat",
            "does not compile",
            "\"(unclosed\"",
        ),
        (
            "{input_tokens: 8, score: exact}",
            "chat",
            "needs a `dataset`",
            "score",
        ),
        (
            "{dataset: {generate: copy}, score: {number: {tolerance: -1}}}",
            "chat",
            "zero or more",
            "-1",
        ),
        (
            "{dataset: {generate: copy, path: a.jsonl}}",
            "chat",
            "not both",
            "generate",
        ),
    ];
    crate::common::assert_refused_at_their_key("accuracy", &cases);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scored_row_without_an_answer_stops_the_run_before_any_request() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rows.jsonl"),
        "{\"prompt\": \"2 + 2?\", \"expected\": 4}\n{\"prompt\": \"3 + 3?\"}\n",
    )
    .unwrap();
    let (addr, handle) = servebench::sim::serve(servebench::sim::SimConfig::default())
        .await
        .unwrap();
    let yaml = format!(
        "version: 1
name: unanswered
targets:
  sim: {{base_url: \"http://{addr}/v1\", model: sim}}
workloads:
  w: {{dataset: {{path: rows.jsonl, format: jsonl}}, score: exact}}
phases:
  - {{name: p, target: sim, workload: w, concurrency: 1, requests: 4}}
"
    );
    let path = dir.path().join("plan.yaml");
    std::fs::write(&path, yaml).unwrap();
    let err = servebench::runner::run(crate::common::quiet_run_options(
        path,
        &dir.path().join("out"),
    ))
    .await
    .expect_err("refused");
    let message = err.to_string();
    assert!(message.contains("rows.jsonl:2"), "{message}");
    assert!(message.contains("`expected`"), "{message}");
    assert_eq!(handle.stats().requests_total, 0, "nothing was sent");
    handle.shutdown().await;
}
