//! One plan three ways: run live, recovered after a kill (its last phases rebuilt from the
//! journal) and merged from two shards. Each phase result is built by the one builder, so the
//! three reports carry the same sections.

use std::path::{Path, PathBuf};

use servebench::plan::ExpandOptions;
use servebench::report::render::sections::{SectionId, shown_sections};
use servebench::report::{PhaseResult, Report};

const PLAN: &str = r#"
version: 1
name: twins
seed: 5
targets:
  sim:
    model: sim
    simulator: {}
workloads:
  chat: {input_tokens: 64, output_tokens: 8, ignore_eos: true}
defaults: {target: sim, workload: chat, drain_timeout: 20s}
phases:
  - name: steady
    rate: {rps: 40, arrival: constant}
    duration: 1500ms
    before:
      - {sleep: 10ms, mark: settled}
    until: {stable: [e2e.p50], within: 50%, max_duration: 1500ms, check_every: 200ms}
  - name: outage
    rate: {rps: 40, arrival: constant}
    duration: 3s
    during:
      - {at: 1s, fault_on: {kind: status, status: 503, probability: 1.0}}
      - {at: 1500ms, fault_off: true}
    after:
      - {sleep: 10ms, mark: done}
  - {recheck: steady}
"#;

/// Fixed simulator delays, shared by every run of the test.
fn simulator() -> servebench::sim::SimConfig {
    servebench::sim::SimConfig {
        seed: Some(1),
        max_running: Some(64),
        prefill_tok_s: Some(50_000.0),
        decode_ms_per_token: Some(2.0),
        decode_ms_per_running: Some(0.0),
        jitter: Some(0.0),
        ..Default::default()
    }
}

fn options(
    plan: &Path,
    addr: std::net::SocketAddr,
    out: PathBuf,
    shard: Option<u32>,
) -> servebench::runner::RunOptions {
    servebench::runner::RunOptions {
        expand: ExpandOptions {
            target_overrides: vec![format!("sim=http://{addr}/v1")],
            ..ExpandOptions::default()
        },
        shard: shard.and_then(|i| servebench::shard::ShardSpec::new(i, 2).ok()),
        // The client's ceiling: every phase then states its share of it.
        calibrate: true,
        ..crate::common::quiet_run_options(plan.to_path_buf(), &out)
    }
}

fn finished(
    outcome: Result<servebench::runner::RunOutcome, servebench::runner::RunError>,
) -> (PathBuf, Report) {
    match outcome {
        Ok(servebench::runner::RunOutcome {
            report_path: Some(path),
            report: Some(report),
            interrupted: false,
            target_down: None,
        }) => (path, report),
        Ok(other) => panic!("the run did not finish: {other:?}"),
        Err(e) => panic!("the run failed: {e}"),
    }
}

/// What a phase result carries beyond its figures: the parts each section is drawn from.
fn parts(phase: &PhaseResult) -> Vec<&'static str> {
    let present = [
        ("hooks", !phase.hooks.is_empty()),
        ("marks", !phase.marks.is_empty()),
        ("recovery", phase.recovery.is_some()),
        ("until", phase.until.is_some()),
        ("client_trust", phase.client_trust.is_some()),
        ("client_load_share", phase.client_load_share.is_some()),
        ("client_ceiling", phase.client_ceiling.is_some()),
        ("recheck_of", phase.header.recheck_of.is_some()),
        ("request_timings", !phase.request_timings.is_empty()),
        ("warmup", phase.warmup.requests > 0),
    ];
    present
        .into_iter()
        .filter_map(|(name, yes)| yes.then_some(name))
        .collect()
}

fn parts_by_phase(report: &Report) -> Vec<(String, Vec<&'static str>)> {
    report
        .phases
        .iter()
        .map(|p| (p.header.phase.clone(), parts(p)))
        .collect()
}

/// The live run's directory as a kill after its first phase leaves it: the report written
/// after that phase, the records' parts and the journal (each phase's facts).
fn killed_after_first_phase(live: &Path, into: &Path) {
    std::fs::create_dir_all(into.join("requests")).unwrap();
    for file in ["journal.jsonl", "report.json"] {
        std::fs::copy(live.join(file), into.join(file)).unwrap();
    }
    for part in std::fs::read_dir(live.join("requests")).unwrap() {
        let part = part.unwrap();
        std::fs::copy(part.path(), into.join("requests").join(part.file_name())).unwrap();
    }
    let text = std::fs::read_to_string(into.join("report.json")).unwrap();
    let mut report: Report = serde_json::from_str(&text).unwrap();
    report.phases.truncate(1);
    report.rechecks.clear();
    report.span.finished_at = None;
    std::fs::write(
        into.join("report.json"),
        serde_json::to_string(&report).unwrap(),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_recovered_and_merged_reports_carry_the_same_sections() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("twins.yaml");
    std::fs::write(&plan, PLAN).unwrap();
    let (addr, sim) = servebench::sim::serve(simulator())
        .await
        .expect("simulator starts");

    let (live_path, live) = finished(
        servebench::runner::run(options(&plan, addr, dir.path().join("live"), None)).await,
    );
    let want = parts_by_phase(&live);
    let sections = shown_sections(&live);
    for needed in [
        SectionId::MarksAndRecovery,
        SectionId::RunUntilStable,
        SectionId::Rechecks,
    ] {
        assert!(
            sections.contains(&needed),
            "live lacks {needed:?}: {sections:?}"
        );
    }
    let has = |index: usize, part: &str| want[index].1.contains(&part);
    for (index, (phase, _)) in want.iter().enumerate() {
        for needed in ["client_trust", "client_load_share", "request_timings"] {
            assert!(
                has(index, needed),
                "live phase `{phase}` lacks {needed}: {want:?}"
            );
        }
    }
    assert!(
        has(0, "hooks") && has(0, "marks") && has(0, "until"),
        "{want:?}"
    );
    assert!(
        has(1, "hooks") && has(1, "marks") && has(1, "recovery"),
        "{want:?}"
    );
    assert!(has(2, "recheck_of"), "{want:?}");

    // Recovered: every phase after the first rebuilt from the journal's facts and records.
    let killed = dir.path().join("killed");
    killed_after_first_phase(live_path.parent().unwrap(), &killed);
    let recovered = servebench::runner::recover::recover(&killed, usize::MAX).expect("recovers");
    assert!(recovered.killed);
    assert_eq!(parts_by_phase(&recovered.report), want, "recovered");
    assert_eq!(shown_sections(&recovered.report), sections, "recovered");
    for (live_phase, phase) in live.phases.iter().zip(&recovered.report.phases) {
        assert_eq!(phase.summary.requests, live_phase.summary.requests);
        assert_eq!(phase.hooks, live_phase.hooks, "{}", phase.header.phase);
        assert_eq!(phase.marks, live_phase.marks, "{}", phase.header.phase);
        assert_eq!(
            phase.recovery, live_phase.recovery,
            "{}",
            phase.header.phase
        );
        assert_eq!(
            phase.client_trust, live_phase.client_trust,
            "{}",
            phase.header.phase
        );
        assert!(!phase.partial, "its window ended: {}", phase.header.phase);
    }
    assert_eq!(
        recovered.report.rechecks.len(),
        1,
        "recover pairs the recheck again"
    );

    // Merged: two shards at once against the same simulator.
    let (s0, s1) = tokio::join!(
        servebench::runner::run(options(&plan, addr, dir.path().join("s0"), Some(0))),
        servebench::runner::run(options(&plan, addr, dir.path().join("s1"), Some(1))),
    );
    let (s0_path, _) = finished(s0);
    let (s1_path, _) = finished(s1);
    let merged = servebench::shard::merge_files(&[s0_path, s1_path]).expect("merges");
    assert_eq!(parts_by_phase(&merged), want, "merged");
    assert_eq!(shown_sections(&merged), sections, "merged");
    sim.shutdown().await;
}
