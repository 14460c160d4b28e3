//! Significance against the simulator: `compare` of two runs of one plan calls nothing
//! significant, a 20% slower prefill (so TTFT) is called significant; rechecks of a steady
//! phase are not called drifted.

use std::path::Path;

use servebench::report::compare::untested::Untested;
use servebench::report::compare::{Comparison, compare};
use servebench::report::{DriftVerdict, Report};
use servebench::runner::run;

/// One closed-loop phase and its recheck on a simulator whose TTFT is the prefill of 240
/// prompt tokens (60 ms at 4000 tok/s); `prefill_tok_s` sets the speed. Tokens are 3 ms
/// apart: at 1 ms, a loaded machine's timer wake-ups shifted one run's TPOT p50 by 3.5%,
/// which a near-deterministic sample rightly calls significant.
fn plan(prefill_tok_s: f64) -> String {
    format!(
        "version: 1\nname: significance\nseed: 5\n\
         targets:\n  sim:\n    simulator: {{prefill_tok_s: {prefill_tok_s}, decode_ms_per_token: 3, decode_ms_per_running: 0, seed: 9}}\n\
         workloads:\n  w: {{input_tokens: 240, output_tokens: 12, ignore_eos: true}}\n\
         defaults: {{target: sim, workload: w, warmup: {{requests: 4}}}}\n\
         phases:\n  - {{name: c1, concurrency: 1, requests: 90}}\n  - {{recheck: c1}}\n"
    )
}

async fn run_plan(dir: &Path, prefill_tok_s: f64) -> Report {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("plan.yaml");
    std::fs::write(&path, plan(prefill_tok_s)).unwrap();
    let out = dir.join("out");
    run(crate::common::quiet_run_options(path, &out))
        .await
        .expect("run");
    servebench::report::read_report(&out.join("report.json")).expect("report")
}

fn significant(c: &Comparison) -> Vec<String> {
    c.phases
        .iter()
        .flat_map(|p| {
            p.metrics
                .iter()
                .filter(|m| m.significant == Some(true))
                .map(move |m| format!("{}:{}", p.phase, m.metric))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_plan_twice_is_not_significant_and_slower_ttft_is() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let a = run_plan(&dir.path().join("a"), 4000.0).await;
    let b = run_plan(&dir.path().join("b"), 4000.0).await;
    // 240 tokens at 4000 vs 3333.3 tok/s: 60 ms vs 72 ms of prefill.
    let slow = run_plan(&dir.path().join("slow"), 4000.0 / 1.2).await;

    let same = compare("a", &a, "b", &b, &[]);
    let of = |c: &Comparison, name: &str| {
        c.phases[0]
            .metrics
            .iter()
            .find(|m| m.metric == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} compared"))
    };
    for name in [
        "ttft.p50",
        "ttft.p95",
        "tpot.p50",
        "tpot.p95",
        "e2e.p50",
        "e2e.p95",
        "error_rate",
    ] {
        assert!(of(&same, name).significant.is_some(), "{name} is tested");
    }
    // 90 samples are too few for a p99 interval: not tested, and said so.
    let p99 = of(&same, "ttft.p99");
    assert_eq!(p99.significant, None);
    assert_eq!(p99.note, Some(Untested::TooFewSamples));
    // Both runs draw the same seeded delays, so what differs is the machine: on a loaded one,
    // late timer wake-ups moved one run's TPOT p50 by 0.8% and another's e2e p95 by 0.7%, real
    // shifts the tight intervals rightly resolve. A false alarm is a larger one.
    let false_alarms: Vec<_> = same
        .phases
        .iter()
        .flat_map(|p| &p.metrics)
        .filter(|m| m.significant == Some(true))
        .filter(|m| m.relative_change.is_none_or(|r| r.abs() > 0.02))
        .collect();
    assert!(false_alarms.is_empty(), "{false_alarms:#?}");

    let slower = compare("a", &a, "slow", &slow, &[]);
    let hits = significant(&slower);
    // Not p95: from 90 samples its interval reaches the top order statistics, which a stall
    // of the client on a loaded machine moves by more than the 12 ms shift.
    for metric in ["ttft.p50", "e2e.p50"] {
        assert!(
            hits.contains(&format!("c1:{metric}")),
            "{metric} not significant: {hits:?} {slower:#?}"
        );
    }
    let ttft = slower.phases[0]
        .metrics
        .iter()
        .find(|m| m.metric == "ttft.p50")
        .unwrap();
    // Order-statistic intervals on both sides, apart.
    let (bi, ni) = (ttft.base_interval.unwrap(), ttft.new_interval.unwrap());
    assert!(bi[1] < ni[0], "{bi:?} {ni:?}");
    // TPOT did not change: not significant.
    assert!(!hits.contains(&"c1:tpot.p50".to_string()), "{hits:?}");

    // A steady phase and its recheck: nothing drifted.
    for report in [&a, &b, &slow] {
        assert_eq!(report.rechecks.len(), 1);
        let pair = &report.rechecks[0];
        assert_ne!(pair.verdict, DriftVerdict::Drifted, "{pair:#?}");
        let p50 = pair
            .metrics
            .iter()
            .find(|m| m.metric == "ttft.p50")
            .unwrap();
        assert_eq!(p50.verdict, DriftVerdict::Stable, "{p50:#?}");
        assert!(p50.original_interval.is_some() && p50.recheck_interval.is_some());
        // 90 samples are too few for a p99 interval.
        let p99 = pair
            .metrics
            .iter()
            .find(|m| m.metric == "ttft.p99")
            .unwrap();
        assert!(p99.original_interval.is_none());
    }
}
