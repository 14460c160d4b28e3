//! Archetype mixes over loopback: a phase drawing its requests from several workloads by
//! weight. Exact per-archetype counts, each archetype's TTFT against the same workload run
//! alone, the breakdown in report.json, markdown, HTML, CSV, Parquet and `compare`, and bad
//! `mix` settings refused at their keys.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use servebench::figure::Figure;
use servebench::report::Report;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Each archetype's requests of the test's 200 (40%, 20%, 40%).
const WEIGHTS: [(&str, u64); 3] = [("short-chat", 80), ("long-rag", 40), ("vision", 80)];

/// plans/archetypes.yaml with a phase per archetype run alone after the mix: the simulator
/// has ample `max_running` and no per-running decode cost, and one request at a time shares
/// no prefill, so nothing one archetype does slows another.
fn plan_with_archetypes_alone() -> String {
    let text = std::fs::read_to_string(root().join("plans/archetypes.yaml")).unwrap();
    // 200 requests, 40% of them images: each archetype's median in the mix rests on at
    // least 40 values, so it sits close to the one its interval alone is about.
    let mut text = text.replace("requests: 100", "requests: 200");
    let weights = "mix: {short-chat: 40%, long-rag: 20%, vision: 40%}";
    text = text.replace(
        "mix: {short-chat: 70%, long-rag: 20%, vision: 10%}",
        weights,
    );
    assert!(text.contains(weights), "the example's mix moved");
    // Wider seeded jitter (±20%) spreads each archetype's TTFT over more than this busy
    // machine's own delays, so the intervals are about the simulator, not the machine.
    let text_jitter = text.replace(
        "      decode_ms_per_running: 0\n",
        "      decode_ms_per_running: 0\n      jitter: 0.2\n",
    );
    assert_ne!(text_jitter, text, "the example's simulator settings moved");
    text = text_jitter;
    for (name, _) in WEIGHTS {
        text.push_str(&format!(
            "  - {{name: alone-{name}, target: sim, workload: {name}, concurrency: 1, requests: 20}}\n"
        ));
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mix_gives_each_archetype_its_share_and_the_ttft_it_has_alone() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let report = crate::common::run_plan_text(dir.path(), &plan_with_archetypes_alone()).await;
    let out = dir.path().join("out");
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    crate::common::assert_valid_report(&json);
    let mix = &report.phases[0];
    assert_eq!(mix.header.phase, "mix");
    assert_eq!(mix.summary.errors, 0);
    assert_eq!(mix.request_timings.len(), 200);

    // Counts: exactly the weights' shares of 200 (largest remainder), so within 2 of them.
    let mut counted: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &mix.request_timings {
        let name = r
            .archetype
            .as_deref()
            .expect("every record names its archetype");
        *counted.entry(name).or_default() += 1;
    }
    for (name, weight) in WEIGHTS {
        assert!(counted[name].abs_diff(weight) <= 2, "{name}: {counted:?}");
        assert_eq!(counted[name], weight, "{name}: {counted:?}");
        let by = mix.archetypes.iter().find(|a| a.archetype == name).unwrap();
        assert_eq!(by.requests, weight);
        assert!((by.share - weight as f64 / 200.0).abs() < 1e-9);
    }
    // Shuffled, not in blocks: the first 10 requests are not all one archetype.
    let first: Vec<_> = mix.request_timings[..10]
        .iter()
        .map(|r| &r.archetype)
        .collect();
    assert!(first.iter().any(|a| *a != first[0]), "{first:?}");

    // Each archetype's TTFT p50 in the mix lies in the interval of its p50 run alone.
    for (name, _) in WEIGHTS {
        let alone = report
            .phases
            .iter()
            .find(|p| p.header.phase == format!("alone-{name}"))
            .unwrap();
        let ttft = alone.summary.figures.get(Figure::Ttft).unwrap();
        let ci = ttft
            .ci95
            .as_ref()
            .and_then(|c| c.p50)
            .expect("a p50 interval");
        let by = mix.archetypes.iter().find(|a| a.archetype == name).unwrap();
        let p50 = by.figures.get(Figure::Ttft).unwrap().p50;
        eprintln!("{name}: p50 {p50} in the mix, [{}, {}] alone", ci.lo, ci.hi);
        assert!(
            ci.lo <= p50 && p50 <= ci.hi,
            "{name}: p50 {p50} in the mix, [{}, {}] alone",
            ci.lo,
            ci.hi
        );
    }
    // The long prompts' prefill shows: their TTFT is well above the short chats'.
    let p50 = |name: &str| {
        let by = mix.archetypes.iter().find(|a| a.archetype == name).unwrap();
        by.figures.get(Figure::Ttft).unwrap().p50
    };
    assert!(p50("long-rag") > 3.0 * p50("short-chat"));

    assert_json_breaks_down_by_archetype(&json);
    assert_documents_break_down_by_archetype(&out, &report);
    assert_compare_by_archetype(&report);
}

/// report.json: per archetype every figure, goodput and the SLO verdict, and the phase's
/// own verdict beside them.
fn assert_json_breaks_down_by_archetype(json: &serde_json::Value) {
    let phase = &json["phases"][0];
    let archetypes = phase["archetypes"].as_array().expect("archetypes");
    assert_eq!(archetypes.len(), 3);
    for a in archetypes {
        for key in [
            "ttft",
            "tpot",
            "e2e",
            "goodput",
            "slo",
            "requests",
            "request_rate",
        ] {
            assert!(!a[key].is_null(), "{key} missing in {a}");
        }
        let slo = &a["slo"][0];
        assert_eq!(slo["objective"], "ttft.p99");
        let met = slo["value"].as_f64().unwrap() <= slo["limit"].as_f64().unwrap();
        assert_eq!(slo["met"], met);
    }
    assert_eq!(phase["slo"][0]["objective"], "ttft.p99");
    // The long prompts miss the TTFT objective that the short chats meet.
    let verdict = |name: &str| {
        let a = archetypes.iter().find(|a| a["archetype"] == name).unwrap();
        a["slo"][0]["met"].as_bool().unwrap()
    };
    assert!(verdict("short-chat"));
    assert!(!verdict("long-rag"));
}

/// Markdown and HTML sections, and the archetype of every CSV and Parquet row.
fn assert_documents_break_down_by_archetype(out: &Path, report: &Report) {
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let section = md
        .split("## By archetype")
        .nth(1)
        .expect("a By archetype section");
    for (name, _) in WEIGHTS {
        assert!(section.contains(&format!("| mix | {name} |")), "{section}");
    }
    assert!(section.contains("| mix | (whole phase) |"), "{section}");
    assert!(section.contains("missed ttft.p99"), "{section}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let html_section = html
        .split("id=\"by-archetype\"")
        .nth(1)
        .expect("HTML section");
    assert!(
        html_section.contains("long-rag"),
        "no long-rag row in the HTML"
    );

    let records = &report.phases[0].request_timings;
    let by_index: BTreeMap<u64, Option<String>> = records
        .iter()
        .map(|r| (r.request_index, r.archetype.clone()))
        .collect();
    let rows = crate::common::record_rows(out);
    let measured: Vec<_> = rows.iter().filter(|r| r.phase == "mix").collect();
    assert!(!measured.is_empty());
    for row in measured {
        if let Some(want) = by_index.get(&row.record.request_index) {
            assert_eq!(&row.record.archetype, want, "#{}", row.record.request_index);
        }
    }
    let csv_text = servebench::report::formats::csv::render_requests(report);
    let mut csv = csv::Reader::from_reader(csv_text.as_bytes());
    let header = csv.headers().unwrap().clone();
    let at = header
        .iter()
        .position(|h| h == "archetype")
        .expect("an archetype column");
    let phase_at = header
        .iter()
        .position(|h| h == "phase")
        .expect("a phase column");
    let mut csv_counts: BTreeMap<String, u64> = BTreeMap::new();
    for row in csv.records().map(Result::unwrap) {
        if &row[phase_at] == "mix" {
            *csv_counts.entry(row[at].to_string()).or_default() += 1;
        }
    }
    let want: BTreeMap<String, u64> = WEIGHTS.iter().map(|(n, w)| (n.to_string(), *w)).collect();
    assert_eq!(csv_counts, want);
}

/// `compare` of the report with itself: each archetype beside the same archetype.
fn assert_compare_by_archetype(report: &Report) {
    let mix = &report.phases[0];
    let cmp = servebench::report::compare::compare("a", report, "b", report, &[]);
    for a in &mix.archetypes {
        let name = format!("mix {{{}}}", a.archetype);
        let compared = cmp
            .phases
            .iter()
            .find(|p| p.phase == name)
            .unwrap_or_else(|| panic!("no `{name}` in compare"));
        let metric = |m: &str| compared.metrics.iter().find(|x| x.metric == m).unwrap();
        let requests = Some(a.requests as f64);
        assert_eq!(metric("requests").new, requests);
        let p50 = a.figures.get(Figure::Ttft).unwrap().p50;
        assert_eq!(metric("ttft.p50").new, Some(p50), "{name}");
    }
}

#[test]
fn validate_refuses_bad_mixes_at_their_keys() {
    let check = |fixture: &str, wants: &[&str]| {
        let out = assert_cmd::Command::new(assert_cmd::cargo::cargo_bin!("servebench"))
            .current_dir(root())
            .args(["validate", &format!("tests/fixtures/invalid/{fixture}")])
            .assert()
            .failure();
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        for want in wants {
            assert!(stderr.contains(want), "{fixture}: no {want:?} in\n{stderr}");
        }
    };
    check(
        "mix-unknown-workload.yaml",
        &[
            "no workload named `long-rog`",
            "did you mean `long-rag`?",
            "mix-unknown-workload.yaml:13:",
        ],
    );
    check(
        "mix-shares-not-100.yaml",
        &[
            "the shares sum to 90%, not 100%",
            "mix-shares-not-100.yaml:13:5",
        ],
    );
    check(
        "mix-and-workload.yaml",
        &[
            "a phase takes `workload` or `mix`, not both",
            "mix-and-workload.yaml:14:5",
        ],
    );
    check(
        "mix-empty.yaml",
        &["lists no workload", "mix-empty.yaml:13:5"],
    );
}

/// A plan with `defaults.workload`, archetypes `a` and `b` (`b` written as `b_yaml`) and a
/// phase mixing them half and half, then its recheck.
fn mix_plan(b_yaml: &str) -> String {
    format!(
        "version: 1
name: mix
targets:
  sim: {{simulator: {{}}}}
workloads:
  a: {{input_tokens: 64, output_tokens: 8}}
  b: {b_yaml}
defaults: {{target: sim, workload: a}}
phases:
  - name: mix
    mix: {{a: 50%, b: 50%}}
    concurrency: 1
    requests: 4
  - recheck: mix
"
    )
}

#[test]
fn a_mix_takes_the_place_of_the_default_workload_and_its_archetypes_must_agree() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = crate::common::validate_yaml(dir.path(), &mix_plan("{input_tokens: 512}"));
    assert_eq!(code, 0, "{stderr}");
    // Request settings differ: refused at the archetype's key in the mix.
    let (code, stderr) = crate::common::validate_yaml(
        dir.path(),
        &mix_plan("{input_tokens: 512, temperature: 0.7}"),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("phases[0].mix.b: `b` sets `temperature` unlike `a`"),
        "{stderr}"
    );
    assert!(stderr.contains("plan.yaml:11:19"), "{stderr}");
    // Sessions follow one another: not an archetype.
    let (code, stderr) = crate::common::validate_yaml(
        dir.path(),
        &mix_plan("{input_tokens: 64, session: {turns: 3}}"),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("`b` runs sessions"), "{stderr}");
}
