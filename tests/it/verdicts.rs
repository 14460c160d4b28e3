//! Three-valued rechecks and `until` over loopback: a steady recheck reads `stable`, one under
//! a switched-on stall `drifted`, one from too few samples `inconclusive`; an overloaded
//! `until` phase `drifted`, a steady one `stable`, a noisy short one `inconclusive`.

use std::path::Path;

use servebench::report::{DriftVerdict, RecheckPair, Report};
use servebench::runner::run;

async fn run_plan(dir: &Path, yaml: &str) -> (Report, String, String) {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, yaml).unwrap();
    let out = dir.join("out");
    run(crate::common::quiet_run_options(path, &out))
        .await
        .unwrap();
    let json = std::fs::read_to_string(out.join("report.json")).unwrap();
    crate::common::assert_valid_report(&serde_json::from_str(&json).unwrap());
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let report: Report = serde_json::from_str(&json).unwrap();
    let csv = servebench::report::formats::csv::render_phases(&report);
    (report, md, csv)
}

/// The recheck named `recheck` with its original.
fn recheck_pair<'a>(report: &'a Report, recheck: &str) -> &'a RecheckPair {
    report
        .rechecks
        .iter()
        .find(|p| p.recheck == recheck)
        .unwrap()
}

fn verdict_of(report: &Report, recheck: &str, metric: &str) -> DriftVerdict {
    let m = recheck_pair(report, recheck)
        .metrics
        .iter()
        .find(|m| m.metric == metric)
        .unwrap();
    m.verdict
}

/// The CSV cell of `column` on `phase`'s row.
fn csv_cell(csv: &str, phase: &str, column: &str) -> String {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == column).unwrap();
    let row = lines.find(|l| l.starts_with(&format!("{phase},"))).unwrap();
    row.split(',').nth(at).unwrap().to_string()
}

/// One request at a time per worker pair, fixed prefill and decode: the recheck of a
/// steady phase repeats its figures closely. `base`'s after-hook switches on a 60 ms stall
/// in every stream, so its recheck runs slower. `few` has 24 requests: no p99 interval.
const RECHECK_PLAN: &str = "version: 1
name: verdicts
seed: 5
targets:
  sim:
    simulator: {prefill_tok_s: 2000, decode_ms_per_token: 2, decode_ms_per_running: 0, jitter: 0.02}
workloads:
  w: {input_tokens: 16, output_tokens: 8, ignore_eos: true}
defaults: {target: sim, workload: w}
phases:
  - {name: steady, concurrency: 2, requests: 420, warmup: {requests: 20}}
  - {recheck: steady, name: steady-again}
  - {name: few, concurrency: 2, requests: 24}
  # Throughput over 24 requests moves with the machine's load; the percentiles are the point.
  - {recheck: few, name: few-again, tolerance: {output_tokens_per_second: 0.9}}
  - name: base
    concurrency: 4
    requests: 120
    after: [{fault_on: {kind: stall, probability: 1.0, seconds: 0.06, after_tokens: 2}}]
  - {recheck: base, name: stalled}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rechecks_read_stable_drifted_and_inconclusive() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let (report, md, csv) = run_plan(dir.path(), RECHECK_PLAN).await;

    let e2e = |recheck| verdict_of(&report, recheck, "e2e.p50");
    assert_eq!(e2e("steady-again"), DriftVerdict::Stable, "{md}");
    assert_eq!(e2e("stalled"), DriftVerdict::Drifted, "{md}");
    let stalled = recheck_pair(&report, "stalled");
    let e2e_stalled = stalled
        .metrics
        .iter()
        .find(|m| m.metric == "e2e.p50")
        .unwrap();
    // About 30 ms became about 90 ms: the whole interval of the change is far above +20%.
    assert!(
        e2e_stalled.change_interval.unwrap()[0] > 0.5,
        "{e2e_stalled:?}"
    );
    assert_eq!(stalled.verdict, DriftVerdict::Drifted);

    // 420 samples give every percentile an interval, and the medians of the steady pair are
    // stable. Its tails are not asserted: a p99 interval from 420 samples reaches the largest
    // values, which one stall of a loaded machine's scheduler can multiply.
    let steady = recheck_pair(&report, "steady-again");
    for metric in ["ttft.p50", "tpot.p50", "e2e.p50"] {
        assert_eq!(
            verdict_of(&report, "steady-again", metric),
            DriftVerdict::Stable,
            "{metric}: {steady:#?}"
        );
    }
    let p99 = steady
        .metrics
        .iter()
        .find(|m| m.metric == "ttft.p99")
        .unwrap();
    assert!(p99.change_interval.is_some(), "{p99:?}");
    assert_ne!(steady.verdict, DriftVerdict::Drifted, "{steady:#?}");

    // 24 samples: no p99 interval, so the p99 cannot be called stable however close.
    assert_eq!(
        verdict_of(&report, "few-again", "ttft.p99"),
        DriftVerdict::Inconclusive
    );
    let few = recheck_pair(&report, "few-again");
    assert_eq!(few.verdict, DriftVerdict::Inconclusive, "{few:#?}");

    // Every format says which.
    for (phase, verdict) in [
        ("steady-again", steady.verdict.as_str()),
        ("few-again", "inconclusive"),
        ("stalled", "drifted"),
    ] {
        assert_eq!(csv_cell(&csv, phase, "recheck_verdict"), verdict);
    }
    assert!(md.contains("| stable |"), "{md}");
    assert!(md.contains("| **inconclusive** |"), "{md}");
    assert!(md.contains("| **DRIFTED** |"), "{md}");
    assert!(md.contains("Change 95% interval"), "{md}");
}

fn until_plan(simulator: &str, load: &str, until: &str) -> String {
    format!(
        "version: 1
name: until-verdicts
seed: 7
targets:
  sim:
    simulator: {simulator}
workloads:
  w: {{input_tokens: 16, output_tokens: 8, ignore_eos: true}}
defaults: {{target: sim, workload: w}}
phases:
  - name: p
    {load}
    until: {until}
"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_until_phase_reads_drifted() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    // One slot serving about 50 requests a second, offered 100: the queue, and with it TTFT,
    // grows all through the window, so its second half is far slower than its first.
    let yaml = until_plan(
        "{max_running: 1, prefill_tok_s: 0, decode_ms_per_token: 2.5, jitter: 0.02}",
        "rate: {rps: 100, arrival: constant}",
        "{stable: [ttft.p50], within: 5%, max_duration: 3s, check_every: 500ms}",
    );
    let (report, md, csv) = run_plan(dir.path(), &yaml).await;
    let until = report.phases[0].until.as_ref().unwrap();
    assert_eq!(until.verdict, DriftVerdict::Drifted, "{until:#?}");
    assert_eq!(until.stopped_by, "max_duration");
    let [lo, _] = until.estimates[0].halves_change.unwrap();
    assert!(lo > 0.05, "{until:#?}");
    assert!(until.warning.as_ref().unwrap().contains("ttft.p50 drifted"));
    assert!(md.contains("| **DRIFTED** |"), "{md}");
    assert_eq!(csv_cell(&csv, "p", "until_verdict"), "drifted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steady_and_noisy_until_phases_read_stable_and_inconclusive() {
    let _exclusive = crate::common::exclusive_run().await;
    for (simulator, until, verdict) in [
        (
            "{decode_ms_per_token: 2, jitter: 0.02}",
            "{stable: [ttft.p50, tpot.p50], within: 5%, max_duration: 60s, check_every: 250ms}",
            DriftVerdict::Stable,
        ),
        // A p99 from under 368 requests has no interval at all.
        (
            "{decode_ms_per_token: 2, jitter: 0.9}",
            "{stable: [ttft.p99], within: 1%, max_duration: 1s, check_every: 250ms}",
            DriftVerdict::Inconclusive,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let yaml = until_plan(simulator, "concurrency: 2", until);
        let (report, md, csv) = run_plan(dir.path(), &yaml).await;
        let outcome = report.phases[0].until.as_ref().unwrap();
        assert_eq!(outcome.verdict, verdict, "{outcome:#?}");
        assert_eq!(csv_cell(&csv, "p", "until_verdict"), verdict.as_str());
        let cell = match verdict {
            DriftVerdict::Stable => "| stable |",
            _ => "| **inconclusive** |",
        };
        assert!(md.contains(cell), "{md}");
    }
}
