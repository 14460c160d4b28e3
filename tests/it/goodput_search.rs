//! A capacity search on goodput: "at least 90% of requests within every per-request limit".
//! The simulator's TPOT is `decode_ms_per_token + decode_ms_per_running × (running − 1)` and
//! a closed loop of `c` workers keeps `c` requests running, so every request's TPOT is about
//! `c` ms with 1 ms for each: with a 10.5 ms limit per request, all requests meet it at
//! concurrency 10 and almost none at 11. The knee is 10 whatever the seed.

use servebench::metrics::verdict::Verdict;

fn plan(seed: u64, search: &str) -> String {
    format!(
        "version: 1
name: goodput-search
seed: {seed}
targets:
  sim:
    simulator: {{seed: {seed}, prefill_tok_s: 0, decode_ms_per_token: 1, decode_ms_per_running: 1, max_running: 256}}
workloads:
  w: {{input_tokens: 16, output_tokens: 12, ignore_eos: true}}
defaults: {{target: sim, workload: w}}
phases:
  - name: capacity
    search: {search}
"
    )
}

const SEARCH: &str = "{load: concurrency, min: 1, max: 32, slo: {tpot: {max: 10.5ms}}, \
    goodput: {min: 90%}, probe: {duration: 700ms, warmup: {requests: 2}}}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goodput_search_finds_the_analytic_knee_over_five_seeds() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    // TPOT(c) = 1 + 1 × (c − 1) ms; the largest c with TPOT within 10.5 ms.
    let (d0, dr, limit) = (1.0, 1.0, 10.5);
    let knee = ((limit - d0) / dr + 1.0_f64).floor();
    assert_eq!(knee, 10.0);
    for seed in 1..=5u64 {
        let report =
            crate::common::run_plan_text(&dir.path().join(seed.to_string()), &plan(seed, SEARCH))
                .await;
        let search = &report.searches[0];
        if search.lower_bound {
            // A probe client-bound twice, or undecided by its end, stops the search saying
            // so; what it found is then only a lower bound, and no higher than the knee.
            assert!(search.stop_reason.starts_with("stopped: "), "{search:#?}");
            assert!(
                search.capacity.is_none_or(|c| c <= knee * 1.1),
                "{search:#?}"
            );
            continue;
        }
        let capacity = search.capacity.expect("a capacity");
        assert!(
            (capacity / knee - 1.0).abs() <= 0.1,
            "seed {seed}: knee {knee}, found {capacity}: {search:#?}"
        );
        // The capacity's interval covers the knee (an open end covers everything past it).
        let [lo, hi] = search.capacity_interval;
        assert!(lo.is_none_or(|lo| lo <= knee), "seed {seed}: {search:#?}");
        assert!(hi.is_none_or(|hi| hi >= knee), "seed {seed}: {search:#?}");
        // Every probe is judged on goodput alone (the `max` limit is its per-request limit,
        // not an objective of its own), from its share's exact bounds.
        for phase in &report.phases {
            let probe = phase.probe.as_ref().unwrap();
            assert_eq!(probe.objectives.len(), 1, "{probe:#?}");
            let goodput = &probe.objectives[0];
            assert_eq!(goodput.objective, "goodput");
            assert_eq!(goodput.limit, 0.9);
            let share = goodput.share.expect("share bounds");
            assert_eq!(goodput.verdict, share.verdict);
            assert!(
                share.lo <= share.share && share.share <= share.hi,
                "{share:?}"
            );
            assert!(share.effective_samples <= share.samples as f64);
            // Well below the knee every request meets the limit; well above, hardly any.
            if probe.load <= knee - 2.0 && probe.verdict != Verdict::Indeterminate {
                assert_eq!(share.verdict, Verdict::Pass, "{phase:#?}");
            }
            if probe.load >= knee + 2.0 {
                assert_eq!(share.verdict, Verdict::Fail, "{probe:#?}");
                assert!(share.hi < 0.9, "{share:?}");
            }
        }
    }
}

fn servebench() -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("servebench"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

#[test]
fn a_bad_goodput_objective_is_refused_at_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |search: &str| {
        let path = dir.path().join("bad.yaml");
        std::fs::write(&path, plan(1, search)).unwrap();
        let out = servebench().arg("validate").arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let stderr = refused(
        "{load: concurrency, min: 1, max: 8, slo: {tpot: {max: 10ms}}, goodput: {min: 100%}, probe: {duration: 1s}}",
    );
    assert!(
        stderr.contains("search.goodput.min: must be between 0 and 1"),
        "{stderr}"
    );
    assert!(stderr.contains("bad.yaml:"), "file:line:col: {stderr}");
    let stderr = refused(
        "{load: concurrency, min: 1, max: 8, slo: {error_rate: 1%}, goodput: {min: 90%}, probe: {duration: 1s}}",
    );
    assert!(
        stderr.contains("goodput needs a per-request limit in `slo`"),
        "{stderr}"
    );
    let stderr = refused(
        "{load: concurrency, min: 1, max: 8, slo: {tpot: {max: 10ms}}, goodput: {mni: 90%}, probe: {duration: 1s}}",
    );
    assert!(stderr.contains("mni"), "{stderr}");
    assert!(stderr.contains("min"), "{stderr}");
    let stderr = refused(
        "{load: concurrency, min: 1, max: 8, slo: {tpot: {max: 10ms}}, godput: {min: 90%}, probe: {duration: 1s}}",
    );
    assert!(stderr.contains("did you mean `goodput`"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_calls_a_capacity_change_only_when_the_intervals_part() {
    use servebench::report::compare::capacity::CapacityVerdict;
    use servebench::report::compare::{CompareOptions, compare_with};
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let fast = crate::common::run_plan_text(&dir.path().join("fast"), &plan(1, SEARCH)).await;
    // Twice the slowdown per running request: TPOT(c) = 1 + 2 (c − 1) ms, knee 5.
    let slow_plan = plan(1, SEARCH).replace("decode_ms_per_running: 1", "decode_ms_per_running: 2");
    let slow = crate::common::run_plan_text(&dir.path().join("slow"), &slow_plan).await;
    let compared = compare_with(
        ("fast", &fast),
        ("slow", &slow),
        &[],
        CompareOptions::default(),
    );
    let change = &compared.capacities[0];
    assert_eq!(change.search, "capacity");
    let md = servebench::report::render_comparison(&compared);
    assert!(md.contains("## Capacity"), "{md}");
    if fast.searches[0].lower_bound || slow.searches[0].lower_bound {
        // A search that stopped client-bound on a busy machine gives only a lower bound.
        assert_eq!(change.verdict, CapacityVerdict::NotComparable, "{change:?}");
        assert!(
            change.why.as_deref().unwrap().contains("lower bound"),
            "{change:?}"
        );
        return;
    }
    assert_eq!(change.verdict, CapacityVerdict::Lower, "{change:?}");
    assert!(change.relative.unwrap() < -0.3, "{change:?}");
    assert!(md.contains("lower (intervals apart)"), "{md}");
    // The same search against itself: the intervals overlap, no change is told.
    let same = compare_with(
        ("fast", &fast),
        ("fast", &fast),
        &[],
        CompareOptions::default(),
    );
    assert_eq!(same.capacities[0].verdict, CapacityVerdict::Overlapping);
}
