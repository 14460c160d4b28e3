//! `servebench merge` on hand-built shard reports: what it refuses, and the exact recomputation.

use super::*;
use servebench::figure::Figure;

fn small_plan(concurrency: u32) -> Plan {
    let doc = serde_json::json!({
        "version": 1,
        "name": "sharded",
        "seed": 5,
        "percentile_method": "nearest_rank",
        "targets": {"sim": {"simulator": {"seed": 1}}},
        "workloads": {"chat": {"input_tokens": 32, "output_tokens": 8}},
        "defaults": {"target": "sim", "workload": "chat"},
        "phases": [
            {"name": "c", "concurrency": concurrency, "requests": 10},
            {"name": "c-again", "recheck": "c", "requests": 10},
        ],
    });
    match prepare_from_value(doc, "small plan", &ExpandOptions::default()) {
        Ok(loaded) => loaded.plan,
        Err(e) => panic!("the test plan is invalid: {e}"),
    }
}

fn record(shard: u32, index: u64, start_ms: f64, ttft_ms: f64) -> RequestRecord {
    RequestRecord {
        request_index: index,
        // As the runner names them: the run id holds the shard.
        request_id: format!("sharded-shard{shard}of2-c-{index}"),
        start_offset_ms: start_ms,
        time_to_first_output_ms: Some(ttft_ms),
        ttft_ms: Some(ttft_ms),
        e2e_ms: ttft_ms + 70.0,
        prompt_tokens: Some(32),
        output_tokens: Some(8),
        ..RequestRecord::default()
    }
}

fn phase(
    name: &str,
    concurrency: u32,
    started_at: &str,
    records: Vec<RequestRecord>,
) -> PhaseResult {
    PhaseResult {
        hooks: Vec::new(),
        target_down: None,
        outages: Vec::new(),
        withheld: 0,
        header: PhaseHeader {
            phase: name.to_string(),
            work_sha256: None,
            prompt_salt: None,
            route: "sim".to_string(),
            target: "sim".to_string(),
            workload: "chat".to_string(),
            concurrency: Some(concurrency),
            rate_rps: None,
            recheck_of: (name == "c-again").then(|| "c".to_string()),
            started_at: started_at.to_string(),
            start_offset_seconds: 0.0,
        },
        end_offset_seconds: 0.0,
        partial: false,
        summary: PhaseSummary::default(),
        warmup: WarmupResult::default(),
        prompt_tokens: PromptTokenCheck::default(),
        dataset_sha256: None,
        achieved_rate_ratio: None,
        server_metrics: None,
        transport: Default::default(),
        request_timings: records,
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

/// A shard report as `run --shard index/count` writes it, with the records given.
fn shard_report(plan: Plan, shard: Option<(u32, u32)>, phases: Vec<PhaseResult>) -> Report {
    Report {
        schema: REPORT_SCHEMA.to_string(),
        tool: ToolInfo {
            name: "servebench".to_string(),
            version: "test".to_string(),
        },
        span: servebench::report::RunSpan {
            run_id: "sharded-test".to_string(),
            started_at: "2026-12-02T14:00:00Z".to_string(),
            finished_at: Some("2026-12-02T14:01:00Z".to_string()),
            partial: false,
            stop_reason: None,
        },
        provenance: None,
        host: HostFacts::default(),
        plan_source: PlanSource {
            path: "plan.yaml".to_string(),
            sha256: "0".repeat(64),
        },
        vars: IndexMap::new(),
        metadata: IndexMap::new(),
        timing_methodology: TimingMethodology {
            clock: String::new(),
            percentile_method: plan.percentile_method,
            time_to_first_output: String::new(),
            ttft: String::new(),
            generation: String::new(),
            decode: String::new(),
            mean_inter_token_latency: String::new(),
            tpot: String::new(),
            effective_prefill: String::new(),
            elapsed: String::new(),
        },
        shard: shard.map(|(index, count)| ShardInfo {
            index,
            count,
            plan_sha256: plan_sha256(&plan),
            start_at: None,
            phase_starts: Vec::new(),
        }),
        plan,
        phases,
        rechecks: Vec::new(),
        repeats: Vec::new(),
        merged_from: None,
        client_calibration: None,
        client_busy_poll: false,
        searches: Vec::new(),
        endpoints: Default::default(),
    }
}

fn simple_shard(index: u32, count: u32) -> Report {
    shard_report(
        small_plan(4),
        Some((index, count)),
        vec![phase(
            "c",
            2,
            "2026-12-02T14:00:00.000Z",
            vec![record(index, 0, 0.0, 10.0)],
        )],
    )
}

fn write(dir: &Path, name: &str, report: &Report) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(report).unwrap()).unwrap();
    path
}

/// Run `servebench merge` on the files; expect exit 2 and return stderr.
fn merge_fails(dir: &Path, files: &[PathBuf]) -> String {
    let out = servebench()
        .current_dir(dir)
        .arg("merge")
        .args(files)
        .arg("-o")
        .arg(dir.join("merged.json"))
        .assert()
        .code(2);
    assert!(!dir.join("merged.json").exists());
    String::from_utf8_lossy(&out.get_output().stderr).into_owned()
}

#[test]
fn merge_refuses_shards_of_different_plans() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", &simple_shard(0, 2));
    let mut other = simple_shard(1, 2);
    other.plan = small_plan(6);
    other.shard.as_mut().unwrap().plan_sha256 = plan_sha256(&other.plan);
    let b = write(dir.path(), "b.json", &other);
    let err = merge_fails(dir.path(), &[a, b]);
    assert!(err.contains("the reports ran different plans"), "{err}");
    assert!(err.contains("a.json ran plan sha256"), "{err}");
    assert!(err.contains("b.json ran plan sha256"), "{err}");
}

#[test]
fn merge_refuses_a_plan_edited_after_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", &simple_shard(0, 2));
    let mut edited = simple_shard(1, 2);
    edited.plan = small_plan(6);
    let b = write(dir.path(), "b.json", &edited);
    let err = merge_fails(dir.path(), &[a, b]);
    assert!(
        err.contains("b.json: its plan was edited after the run"),
        "{err}"
    );
}

#[test]
fn merge_refuses_duplicate_and_missing_shards() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", &simple_shard(0, 3));
    let b = write(dir.path(), "b.json", &simple_shard(0, 3));
    let c = write(dir.path(), "c.json", &simple_shard(2, 3));
    let err = merge_fails(dir.path(), &[a, b, c]);
    assert!(err.contains("shard 0 appears 2 times: "), "{err}");
    assert!(err.contains("a.json, "), "{err}");
    assert!(err.contains("missing shard(s) 1/3"), "{err}");
}

#[test]
fn merge_refuses_a_missing_shard() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", &simple_shard(0, 3));
    let b = write(dir.path(), "b.json", &simple_shard(1, 3));
    let err = merge_fails(dir.path(), &[a, b]);
    assert!(err.contains("missing shard(s) 2/3"), "{err}");
    assert!(err.contains("0/3 ("), "{err}");
    assert!(err.contains("b.json)"), "{err}");
}

#[test]
fn merge_refuses_mixed_shard_counts_unsharded_and_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", &simple_shard(0, 2));
    let b = write(dir.path(), "b.json", &simple_shard(1, 3));
    let err = merge_fails(dir.path(), &[a.clone(), b]);
    assert!(
        err.contains("the reports disagree on the number of shards"),
        "{err}"
    );

    let whole = shard_report(small_plan(4), None, Vec::new());
    let c = write(dir.path(), "whole.json", &whole);
    let err = merge_fails(dir.path(), &[a.clone(), c]);
    assert!(err.contains("whole.json: not a shard report"), "{err}");

    let foreign = dir.path().join("seed.json");
    std::fs::write(&foreign, r#"{"schema": "anvil-serving.benchmark/v1"}"#).unwrap();
    let garbage = dir.path().join("notes.txt");
    std::fs::write(&garbage, "hello").unwrap();
    let err = merge_fails(dir.path(), &[a, foreign, garbage]);
    assert!(err.contains("seed.json: not a servebench report"), "{err}");
    assert!(err.contains("notes.txt: not a JSON file"), "{err}");
}

/// Two shards of a phase and its recheck. Shard 1 started its phase 100 ms after shard 0:
/// its offsets move by 100 ms.
fn two_shards_of_two_phases() -> (Report, Report) {
    let plan = small_plan(4);
    let s0 = shard_report(
        plan.clone(),
        Some((0, 2)),
        vec![
            phase(
                "c",
                2,
                "2026-12-02T14:00:00.000Z",
                vec![
                    record(0, 0, 0.0, 10.0),
                    record(0, 1, 5.0, 20.0),
                    record(0, 2, 90.0, 90.0),
                ],
            ),
            phase(
                "c-again",
                2,
                "2026-12-02T14:00:10.000Z",
                vec![record(0, 0, 0.0, 10.0)],
            ),
        ],
    );
    let s1 = shard_report(
        plan,
        Some((1, 2)),
        vec![
            phase(
                "c",
                2,
                "2026-12-02T14:00:00.100Z",
                vec![record(1, 0, 0.0, 40.0), record(1, 1, 1.0, 50.0)],
            ),
            phase(
                "c-again",
                2,
                "2026-12-02T14:00:10.000Z",
                vec![record(1, 0, 0.0, 30.0)],
            ),
        ],
    );
    (s0, s1)
}

#[test]
fn merge_recomputes_figures_from_the_union_of_records() {
    let (s0, s1) = two_shards_of_two_phases();
    let merged = merge_reports(vec![("s0.json".into(), s0), ("s1.json".into(), s1)]).unwrap();
    assert_eq!(merged.merged_from.as_ref().map(Vec::len), Some(2));
    assert!(merged.shard.is_none());
    assert!(!merged.span.partial);
    let names: Vec<&str> = merged
        .phases
        .iter()
        .map(|p| p.header.phase.as_str())
        .collect();
    assert_eq!(names, ["c", "c-again"]);
    let c = &merged.phases[0];
    assert_eq!(c.header.concurrency, Some(4));
    assert_eq!(c.header.started_at, "2026-12-02T14:00:00.000Z");
    assert_eq!(c.request_timings.len(), 5);
    let order: Vec<(&str, u64, f64)> = c
        .request_timings
        .iter()
        .map(|r| (r.request_id.as_str(), r.request_index, r.start_offset_ms))
        .collect();
    assert_eq!(
        order,
        [
            ("sharded-shard0of2-c-0", 0, 0.0),
            ("sharded-shard0of2-c-1", 1, 5.0),
            ("sharded-shard0of2-c-2", 2, 90.0),
            ("sharded-shard1of2-c-0", 3, 100.0),
            ("sharded-shard1of2-c-1", 4, 101.0),
        ]
    );
    // Exact nearest-rank percentiles over all five TTFTs, not an average of two shards'.
    let ttft = c
        .summary
        .distribution(Figure::Ttft)
        .expect("ttft distribution");
    assert_eq!(ttft.p50, 0.040);
    assert_eq!(ttft.max, 0.090);
    assert_eq!(ttft.samples, 5);
    assert_eq!(
        c.summary,
        metrics::summarize(&c.request_timings, PercentileMethod::NearestRank, None)
    );
    // The recheck pairs the merged summaries.
    assert_eq!(merged.rechecks.len(), 1);
    let p50 = merged.rechecks[0]
        .metrics
        .iter()
        .find(|m| m.metric == "ttft.p50")
        .unwrap();
    assert_eq!(p50.original, Some(0.040));
    assert_eq!(p50.recheck, Some(0.010));
}

#[test]
fn a_phase_missing_from_an_interrupted_shard_makes_the_merge_partial() {
    let plan = small_plan(4);
    let whole = shard_report(
        plan.clone(),
        Some((0, 2)),
        vec![
            phase(
                "c",
                2,
                "2026-12-02T14:00:00.000Z",
                vec![record(0, 0, 0.0, 10.0)],
            ),
            phase(
                "c-again",
                2,
                "2026-12-02T14:00:10.000Z",
                vec![record(0, 0, 0.0, 10.0)],
            ),
        ],
    );
    let mut cut = shard_report(
        plan,
        Some((1, 2)),
        vec![phase(
            "c",
            2,
            "2026-12-02T14:00:00.000Z",
            vec![record(1, 0, 0.0, 20.0)],
        )],
    );
    cut.span.partial = true;
    cut.span.stop_reason = Some("interrupted".to_string());
    let merged = merge_reports(vec![("s0.json".into(), whole), ("s1.json".into(), cut)]).unwrap();
    assert!(merged.span.partial);
    assert!(!merged.phases[0].partial);
    assert!(merged.phases[1].partial);
    assert_eq!(merged.phases[1].summary.requests, 1);
    let reason = merged.span.stop_reason.unwrap_or_default();
    assert!(
        reason.contains("phase `c-again` is missing from shard(s) 1 (s1.json)"),
        "{reason}"
    );
    assert!(
        reason.contains("shard 1 (s1.json): interrupted"),
        "{reason}"
    );
}

/// A shard report whose prompts carried `salt`.
fn salted_shard(index: u32, salt: &str) -> Report {
    let mut report = simple_shard(index, 2);
    report.provenance = Some(servebench::report::Provenance {
        salt: Some(salt.to_string()),
        ..Default::default()
    });
    report
}

/// Run `servebench merge` on the shards; the merged report's JSON and merge's stderr.
fn merge_ok(dir: &Path, shards: [&Report; 2]) -> (serde_json::Value, String) {
    let files = [
        write(dir, "s0.json", shards[0]),
        write(dir, "s1.json", shards[1]),
    ];
    let out = servebench()
        .current_dir(dir)
        .arg("merge")
        .args(&files)
        .arg("-o")
        .arg(dir.join("merged.json"))
        .assert()
        .success();
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("merged.json")).unwrap()).unwrap();
    assert_valid_report(&merged);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    (merged, stderr)
}

/// Shards run without one shared `--salt` or `--start-at` drew their own salts: the merge keeps
/// every one, claims none for the run, and says so; shards that shared one keep it as the run's.
#[test]
fn merge_records_each_shards_salt_and_claims_one_only_when_shared() {
    let dir = tempfile::tempdir().unwrap();
    let (merged, stderr) = merge_ok(
        dir.path(),
        [
            &salted_shard(0, "a1a1a1a1a1a1a1a1"),
            &salted_shard(1, "b2b2b2b2b2b2b2b2"),
        ],
    );
    assert_eq!(merged["merged_from"][0]["salt"], "a1a1a1a1a1a1a1a1");
    assert_eq!(merged["merged_from"][1]["salt"], "b2b2b2b2b2b2b2b2");
    assert!(
        merged["provenance"].get("salt").is_none(),
        "no one salt for the run: {}",
        merged["provenance"]
    );
    assert!(
        stderr.contains(
            "note: the shards' prompts carried different salts (shard 0: a1a1a1a1a1a1a1a1, \
             shard 1: b2b2b2b2b2b2b2b2)"
        ) && stderr.contains("--salt VALUE"),
        "{stderr}"
    );
    let head = servebench()
        .args(["report", "--format", "md"])
        .arg(dir.path().join("merged.json"))
        .assert()
        .success();
    let md = String::from_utf8_lossy(&head.get_output().stdout).into_owned();
    assert!(
        md.contains(
            "| Prompts | a salt per shard (0: a1a1a1a1a1a1a1a1, 1: b2b2b2b2b2b2b2b2): the shards \
             ran without one shared --salt or --start-at |"
        ),
        "{md}"
    );

    let shared = tempfile::tempdir().unwrap();
    let (merged, stderr) = merge_ok(
        shared.path(),
        [
            &salted_shard(0, "c3c3c3c3c3c3c3c3"),
            &salted_shard(1, "c3c3c3c3c3c3c3c3"),
        ],
    );
    assert_eq!(merged["provenance"]["salt"], "c3c3c3c3c3c3c3c3");
    assert_eq!(merged["merged_from"][1]["salt"], "c3c3c3c3c3c3c3c3");
    assert!(!stderr.contains("salts"), "{stderr}");
}
