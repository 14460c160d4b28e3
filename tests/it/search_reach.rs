//! Searches that answer the plan a user writes: a rate search starts where its probe holds
//! the samples its percentile needs, an under-sampled probe runs again longer up to
//! `until.max_duration`, and a search no probe could decide is refused before it runs.

use servebench::metrics::verdict::Verdict;
use servebench::report::{Report, SearchStop};

fn servebench() -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("servebench"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

/// The simulator of the issue: 8 slots of 32 tokens at 20 ms each, so each slot serves a
/// request per 0.64 s and the knee is 8 / 0.64 = 12.5 req/s (prefill, 64 tokens at
/// 50 000 tok/s, adds about a millisecond).
fn knee_plan(search: &str) -> String {
    format!(
        "version: 1\nname: reach\nseed: 1\ntargets:\n  sim:\n    simulator: \
         {{max_running: 8, decode_ms_per_token: 20, decode_ms_per_running: 0, prefill_tok_s: 50000}}\n\
         workloads:\n  w: {{input_tokens: 64, output_tokens: 32, ignore_eos: true}}\n\
         defaults: {{target: sim, workload: w}}\n\
         phases:\n  - name: capacity\n    search: {{{search}}}\n"
    )
}

/// The exact plan of the issue, which used to stop `indeterminate at 1 req/s` after one
/// probe of 20 samples. It runs in about 90 s: 20 s probes are what the plan asks for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_p95_rate_search_starts_where_a_probe_can_decide_and_brackets_the_knee() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let yaml = knee_plan(
        "load: rate, min: 1, max: 64, slo: {ttft: {p95: 400ms}}, \
         probe: {duration: 20s, warmup: {duration: 1s}}",
    );
    let report = crate::common::run_plan_text(dir.path(), &yaml).await;
    let search = &report.searches[0];
    assert_eq!(
        search.start.as_deref(),
        Some(
            "started at 5 req/s: below it a 20s probe holds fewer than the 99 samples a p95 needs"
        ),
        "{search:#?}"
    );
    // The first probe is at 5 req/s, holds the 99 samples (5 × 20 s) and decides.
    let first = &report.phases[0];
    let probe = first.probe.as_ref().unwrap();
    assert_eq!(probe.load, 5.0);
    assert!(first.summary.requests >= 99, "{}", first.summary.requests);
    if first.client_trust.as_ref().is_some_and(|t| !t.is_trusted()) {
        // A busy machine held the client: the verdict may be withheld, nothing more to judge.
        return;
    }
    assert_eq!(probe.verdict, Verdict::Pass, "{probe:#?}");
    // The answer: a pass below the knee and a fail above it. A probe right at the knee may
    // be undecided (its p95 sits at the limit); the interval stands either way.
    match search.stop() {
        Some(SearchStop::PrecisionReached | SearchStop::Indeterminate { .. }) => {}
        Some(SearchStop::ClientBound { .. }) => return,
        other => panic!("{other:?}: {search:#?}"),
    }
    let [lo, hi] = search.capacity_interval;
    let (lo, hi) = (lo.expect("a passing end"), hi.expect("a failing end"));
    assert!(
        lo <= 14.0 && hi >= 10.0,
        "[{lo}, {hi}] misses [10, 14]: {search:#?}"
    );
    if let Some(SearchStop::Indeterminate { at }) = search.stop() {
        assert!(
            lo < at && at < hi,
            "undecided outside the bracket: {search:#?}"
        );
    }
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("started at 5 req/s"), "{md}");
}

#[test]
fn a_search_no_probe_can_decide_is_refused_naming_what_would_work() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p99.yaml");
    let search = "load: rate, min: 1, max: 64, slo: {ttft: {p99: 400ms}}, \
                  probe: {duration: 6s, warmup: {duration: 1s}}";
    std::fs::write(&path, knee_plan(search)).unwrap();
    for args in [
        vec!["validate"],
        vec!["run", "--dry-run"],
        vec!["run", "--quiet", "-o"],
    ] {
        let mut cmd = servebench();
        cmd.args(&args);
        if args.contains(&"-o") {
            cmd.arg(dir.path().join("out"));
        }
        let out = cmd.arg(&path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        for expected in [
            "phases[0].search: no rate in 1–64 req/s can decide `ttft.p99`",
            "a p99 passes from 505 samples, and a 6s probe holds at most 384 (at 64 req/s)",
            "p99.yaml:12:5",
            "probes of at least 8s decide it at 64 req/s (`duration: 8s`)",
            "or ask for a p95",
        ] {
            assert!(stderr.contains(expected), "{args:?}: {expected}: {stderr}");
        }
    }
    assert!(!dir.path().join("out/report.json").exists(), "nothing ran");
    // The duration it names works: the search validates, and the dry run says from which
    // load each objective can decide.
    std::fs::write(&path, knee_plan(&search.replace("6s", "8s"))).unwrap();
    let out = servebench()
        .args(["run", "--dry-run"])
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("ttft.p99 passes from 505 samples, which a 8s probe holds from 64 req/s"),
        "{stdout}"
    );
    assert!(stdout.contains("first probe at 64 req/s"), "{stdout}");
}

/// A concurrency search against a fast simulator: at concurrency 1 a request takes about
/// 40 ms (8 tokens at 5 ms), so a 1 s probe holds some 25 samples, short of the 99 a p95
/// needs.
fn fast_plan(probe: &str) -> String {
    format!(
        "version: 1\nname: lengthen\nseed: 1\ntargets:\n  sim:\n    simulator: \
         {{decode_ms_per_token: 5, decode_ms_per_running: 0, prefill_tok_s: 0, max_running: 16}}\n\
         workloads:\n  w: {{input_tokens: 16, output_tokens: 8, ignore_eos: true}}\n\
         defaults: {{target: sim, workload: w}}\n\
         phases:\n  - name: capacity\n    search: {{load: concurrency, min: 1, max: 2, \
         slo: {{ttft: {{p95: 500ms}}}}, probe: {{{probe}}}}}\n"
    )
}

/// Whether a busy machine made the search stop client-bound (then there is nothing to judge).
fn client_bound(report: &Report) -> bool {
    matches!(
        report.searches[0].stop(),
        Some(SearchStop::ClientBound { .. })
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_under_sampled_concurrency_probe_runs_again_longer_up_to_max_duration() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    // Without `until` the probe is reported as before: undecided, the search stops there.
    let report =
        crate::common::run_plan_text(&dir.path().join("short"), &fast_plan("duration: 1s")).await;
    if !client_bound(&report) {
        let search = &report.searches[0];
        assert_eq!(
            search.stop(),
            Some(SearchStop::Indeterminate { at: 1.0 }),
            "{search:#?}"
        );
        // Never lengthened: every probe (a client-bound one runs again) stayed at 1 s.
        for phase in &report.phases {
            assert!(phase.summary.elapsed < 1.5, "{}", phase.summary.elapsed);
        }
    }
    // With `until.max_duration` the probe runs again, long enough to decide, and answers.
    // `within: 0.1%` is never met, so no stability check ends a probe early.
    let probe = "duration: 1s, until: {stable: [ttft.p95], within: 0.1%, max_duration: 8s}";
    let report = crate::common::run_plan_text(&dir.path().join("long"), &fast_plan(probe)).await;
    if client_bound(&report) {
        return;
    }
    let search = &report.searches[0];
    // A client-bound probe that did not decide runs again at the same load with the same
    // duration: only the probes that could decide tell the lengthening.
    let outcomes: Vec<(f64, Verdict, u64, f64)> = report
        .phases
        .iter()
        .filter(|p| {
            p.client_trust.as_ref().is_none_or(|t| t.is_trusted())
                || p.probe.as_ref().is_some_and(|o| o.holds_despite_client())
        })
        .map(|p| {
            let probe = p.probe.as_ref().unwrap();
            let samples = probe.objectives[0].bounds.unwrap().samples;
            (probe.load, probe.verdict, samples, p.summary.elapsed)
        })
        .collect();
    let (load, verdict, samples, elapsed) = outcomes[0];
    assert_eq!(
        (load, verdict),
        (1.0, Verdict::Indeterminate),
        "{outcomes:?}"
    );
    assert!(samples < 99 && elapsed < 1.5, "{outcomes:?}");
    let (load, verdict, samples, elapsed) = outcomes[1];
    assert_eq!((load, verdict), (1.0, Verdict::Pass), "{outcomes:?}");
    assert!(
        samples >= 99 && elapsed > 2.0 && elapsed < 9.0,
        "{outcomes:?}"
    );
    assert!(!search.lower_bound, "{search:#?}");
    assert_eq!(search.stop(), Some(SearchStop::MaxMet), "{search:#?}");
    assert_eq!(search.capacity, Some(2.0), "{search:#?}");
}
