//! Capacity search against the simulator, whose knee follows from its settings:
//! - concurrency: TPOT is `decode_ms_per_token + decode_ms_per_running × (running − 1)`, so
//!   with a TPOT p50 limit halfway between two concurrencies' TPOT the knee is the lower one;
//! - rate: prefills run one at a time, so the simulator serves at most
//!   `prefill_tok_s / prompt_tokens` requests per second; above it the queue grows and TTFT
//!   with it.

use servebench::figure::Figure;
use servebench::report::{Report, SearchResult, SearchStop};

fn plan(simulator: &str, workload: &str, search: &str) -> String {
    format!(
        "version: 1\nname: search\nseed: 1\ntargets:\n  sim:\n    simulator: {{{simulator}}}\n\
         workloads:\n  w: {{{workload}, ignore_eos: true}}\n\
         defaults: {{target: sim, workload: w}}\n\
         phases:\n  - name: capacity\n    search: {{{search}}}\n"
    )
}

/// Whether the search answered; when it did not, it stopped saying why (a probe client-bound
/// twice, or one that could not tell by its end, at most `undecided_within` of the knee away)
/// and its capacity reads as a lower bound no higher than the knee allows.
fn answered(search: &SearchResult, knee: f64, undecided_within: f64) -> bool {
    if !search.lower_bound {
        return true;
    }
    let reason = &search.stop_reason;
    assert!(reason.starts_with("stopped: "), "{search:#?}");
    if reason.contains("indeterminate") {
        let at: f64 = reason
            .split_whitespace()
            .find_map(|w| w.parse().ok())
            .expect("the load it stopped at");
        assert!(
            (at / knee - 1.0).abs() <= undecided_within,
            "undecided far from the knee {knee}: {search:#?}"
        );
    }
    assert!(
        search.capacity.is_none_or(|c| c <= knee * 1.05),
        "{search:#?}"
    );
    false
}

/// Every probe is a phase in the report, named and judged, and the search names them.
fn check_probes(report: &Report) {
    let search = &report.searches[0];
    assert_eq!(search.probes.len(), report.phases.len());
    for (i, (name, phase)) in search.probes.iter().zip(&report.phases).enumerate() {
        assert_eq!(name, &format!("capacity/probe-{}", i + 1));
        assert_eq!(&phase.header.phase, name);
        let probe = phase.probe.as_ref().expect("a probe outcome");
        assert!(phase.summary.requests > 0, "{name} ran");
        assert_eq!(
            probe.passed,
            probe.objectives.iter().all(|o| o.passed) && !probe.over_saturated
        );
        // Each percentile objective is judged on bounds that rest on its samples.
        for o in &probe.objectives {
            let Some(b) = o.bounds else { continue };
            assert!(b.samples > 0 && b.effective_samples <= b.samples as f64);
            assert_eq!(o.verdict, b.verdict, "{o:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_search_finds_the_tpot_knee_for_three_settings() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    // (decode_ms_per_token, decode_ms_per_running, knee)
    for (i, (d0, dr, knee)) in [(2.0, 1.0, 4u32), (1.0, 2.0, 3), (0.5, 1.0, 7)]
        .into_iter()
        .enumerate()
    {
        // TPOT at the knee and one above: the limit sits halfway.
        let limit_ms = d0 + dr * (f64::from(knee) - 0.5);
        let yaml = plan(
            &format!(
                "prefill_tok_s: 0, decode_ms_per_token: {d0}, decode_ms_per_running: {dr}, max_running: 256"
            ),
            "input_tokens: 32, output_tokens: 24",
            &format!(
                "load: concurrency, min: 1, max: 32, slo: {{tpot: {{p50: {limit_ms}ms}}}}, probe: {{duration: 1s, warmup: {{requests: 2}}}}"
            ),
        );
        let report = crate::common::run_plan_text(&dir.path().join(i.to_string()), &yaml).await;
        check_probes(&report);
        let search = &report.searches[0];
        if !answered(search, f64::from(knee), 0.3) {
            continue;
        }
        assert_eq!(search.capacity, Some(f64::from(knee)), "{search:#?}");
        assert_eq!(
            search.bracket,
            [Some(f64::from(knee)), Some(f64::from(knee + 1))]
        );
        assert_eq!(search.stop_reason, "precision reached");
        assert!(search.goodput.is_some_and(|g| g > 0.0));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_search_finds_the_prefill_knee_and_names_over_saturated_probes() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    // (prefill_tok_s, input_tokens)
    for (i, (prefill, input)) in [(10_000.0, 200u32), (8_000.0, 400), (8_000.0, 100)]
        .into_iter()
        .enumerate()
    {
        let prefill_ms = f64::from(input) / prefill * 1000.0;
        // Slack of half a prefill, at least 25 ms so a busy client's few milliseconds never
        // fail a probe below the knee; a probe 5% over the knee queues 50 ms more within its 1 s.
        let limit_ms = prefill_ms + (0.5 * prefill_ms).max(25.0);
        let yaml = plan(
            &format!(
                "prefill_tok_s: {prefill}, decode_ms_per_token: 1, decode_ms_per_running: 0, max_running: 256"
            ),
            &format!("input_tokens: {input}, output_tokens: 4"),
            &format!(
                "load: rate, min: 10, max: 200, precision: 0.05, slo: {{ttft: {{p50: {limit_ms}ms}}, error_rate: 0.01}}, probe: {{duration: 2s, warmup: {{requests: 2}}}}"
            ),
        );
        let report = crate::common::run_plan_text(&dir.path().join(i.to_string()), &yaml).await;
        check_probes(&report);
        // The knee from the prompt size the simulator counted.
        let prompt = report.phases[0]
            .summary
            .distribution(Figure::InputTokens)
            .unwrap()
            .mean;
        let knee = prefill / prompt;
        let search = &report.searches[0];
        if !answered(search, knee, 0.3) {
            continue;
        }
        let capacity = search.capacity.expect("a capacity");
        assert!(
            capacity >= 0.9 * knee && capacity <= 1.05 * knee,
            "knee {knee:.1} req/s, found {capacity:.1}: {search:#?}"
        );
        let [lo, hi] = search.bracket;
        assert!(hi.unwrap() / lo.unwrap() <= 1.05, "{search:#?}");
        // Doubling overshoots the knee by far at least once: that probe fails, the target
        // falling behind is named as over-saturation, and every over-saturated probe failed.
        let probes: Vec<_> = report
            .phases
            .iter()
            .filter_map(|p| p.probe.as_ref())
            .collect();
        let overloaded: Vec<_> = probes.iter().filter(|p| p.load >= 1.5 * knee).collect();
        assert!(!overloaded.is_empty(), "{search:#?}");
        assert!(overloaded.iter().all(|p| !p.passed), "{overloaded:#?}");
        assert!(probes.iter().any(|p| p.over_saturated), "{probes:#?}");
        let saturated = probes.iter().filter(|p| p.over_saturated);
        assert!(saturated.clone().all(|p| !p.passed));
    }
}

fn servebench() -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("servebench"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

#[test]
fn dry_run_shows_the_bounds_and_the_worst_case() {
    let out = servebench()
        .args(["run", "plans/capacity-search.yaml", "--dry-run"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // 1–64 doubling is 7 probes, bisecting a doubling to 5% at most 4 more.
    assert!(
        stdout.contains(
            "capacity search over concurrency 1–64, precision 5%, at most 11 probes of 2s"
        ),
        "{stdout}"
    );
    // 30–160 doubling is 4 probes, bisecting a doubling to 10% at most 3 more; a p95 needs
    // 99 samples, which a 4 s probe holds from 25 req/s, below the lowest rate.
    assert!(
        stdout.contains(
            "rate (req/s, constant arrivals) 30–160, precision 10%, at most 7 probes of 4s \
             (ttft.p95 passes from 99 samples, which a 4s probe holds from 25 req/s)"
        ),
        "{stdout}"
    );
    // 11 probes of 2 s and 7 of 4 s.
    assert!(
        stdout.contains("estimated duration: at least 50s"),
        "{stdout}"
    );
}

#[test]
fn a_bad_search_is_refused_with_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.yaml");
    std::fs::write(
        &path,
        plan(
            "prefill_tok_s: 0",
            "input_tokens: 8, output_tokens: 4",
            "load: concurrency, min: 0, max: 8.5, precision: 2, slo: {}, probe: {duration: 1s}",
        ) + "    concurrency: 4\n",
    )
    .unwrap();
    let out = servebench().arg("validate").arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for expected in [
        "a search phase sets its own load",
        "search.min: must be greater than zero, found 0",
        "a concurrency search needs whole `min` and `max`",
        "must be between 0 and 1 (0.05 = 5%), found 2",
        "the search has no objective",
    ] {
        assert!(stderr.contains(expected), "{expected}: {stderr}");
    }
    assert!(stderr.contains("bad.yaml:"), "file:line:col: {stderr}");
}

/// Tool-call TTFT is a figure like the others: a search limits it, and each probe is judged
/// on its value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_limits_tool_call_ttft() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let yaml = "version: 1\nname: tool-search\nseed: 1\ntargets:\n  sim: {simulator: {decode_ms_per_token: 0.5}}\n\
        workloads:\n  w: {input_tokens: 32, output_tokens: 8, ignore_eos: true, tools: {choice: required}}\n\
        defaults: {target: sim, workload: w}\n\
        phases:\n\
        \x20 - {name: loose, search: {load: concurrency, min: 1, max: 2, slo: {ttft_tool_ms: {p95: 10s}}, probe: {duration: 3s}}}\n\
        \x20 - {name: tight, search: {load: concurrency, min: 1, max: 2, slo: {ttft_tool_ms: {p50: 1us}}, probe: {duration: 1s}}}\n";
    let report = crate::common::run_plan_text(dir.path(), yaml).await;
    if report.searches.iter().any(|s| s.lower_bound) {
        // A busy machine held the client twice in a row: the search said so, nothing to judge.
        assert!(
            report
                .searches
                .iter()
                .any(|s| s.stop_reason.contains("client-bound"))
        );
        return;
    }
    // A client-bound probe ran again at the same load: only the trusted runs decided.
    let outcomes: Vec<(&str, bool, Option<f64>)> = report
        .phases
        .iter()
        .filter(|p| p.client_trust.as_ref().is_none_or(|t| t.is_trusted()))
        .map(|p| {
            let probe = p.probe.as_ref().expect("a probe");
            let check = &probe.objectives[0];
            let measured = p.summary.distribution(Figure::TtftTool).map(|d| d.p50);
            assert!(measured.is_some_and(|ms| ms > 0.001), "{}", p.header.phase);
            (check.objective.as_str(), check.passed, check.value)
        })
        .collect();
    assert_eq!(
        outcomes.len(),
        3,
        "two probes up to max, one at min: {outcomes:?}"
    );
    for (i, (objective, passed, value)) in outcomes.iter().enumerate() {
        assert!(value.is_some(), "probe {i} has the figure");
        assert_eq!(*passed, i < 2, "{outcomes:?}");
        assert_eq!(
            *objective,
            if i < 2 {
                "ttft_tool_ms.p95"
            } else {
                "ttft_tool_ms.p50"
            }
        );
    }
    let stops: Vec<&str> = report
        .searches
        .iter()
        .map(|s| s.stop_reason.as_str())
        .collect();
    assert_eq!(stops, ["max met", "min failed"]);
    // Goodput at the capacity counts requests within the loosest limit: all of them here.
    let loose = &report.searches[0];
    assert!(loose.goodput.is_some_and(|g| g > 0.0), "{loose:?}");
}

/// A probe whose percentile sits at its limit cannot tell pass from fail: it runs its whole
/// duration, says `indeterminate` rather than a coin-flip verdict, and the search stops with
/// its capacity a lower bound and exit code 4. At concurrency 1 the simulator's TTFT is the
/// prefill, 100 ms with ±5% uniform jitter, so its median sits within a millisecond of 101 ms.
#[test]
fn a_probe_at_its_limit_is_indeterminate_after_its_duration() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = plan(
        "prefill_tok_s: 2000, decode_ms_per_token: 1, max_running: 4",
        "input_tokens: 200, output_tokens: 2",
        "load: concurrency, min: 1, max: 1, slo: {ttft: {p50: 101ms}}, probe: {duration: 3s}",
    );
    std::fs::write(dir.path().join("plan.yaml"), yaml).unwrap();
    let out = servebench()
        .args(["run", "--quiet", "-o"])
        .arg(dir.path().join("out"))
        .arg(dir.path().join("plan.yaml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let report = servebench::report::read_report(&dir.path().join("out/report.json")).unwrap();
    let search = &report.searches[0];
    assert!(search.lower_bound, "{search:#?}");
    assert_eq!(search.capacity, None);
    assert!(
        search.stop_reason == "stopped: indeterminate at concurrency 1"
            || search.stop_reason == "stopped: client-bound at concurrency 1",
        "{search:#?}"
    );
    assert!(
        matches!(
            search.stop,
            Some(SearchStop::Indeterminate { at: 1.0 } | SearchStop::ClientBound { at: 1.0 })
        ),
        "{search:#?}"
    );
    for phase in &report.phases {
        let probe = phase.probe.as_ref().unwrap();
        assert_eq!(
            probe.verdict,
            servebench::metrics::verdict::Verdict::Indeterminate
        );
        let b = probe.objectives[0].bounds.unwrap();
        assert!(b.lo.unwrap() <= 0.101 && b.hi.unwrap() >= 0.101, "{b:?}");
        // No early look could decide, so the probe ran to its end.
        assert!(phase.summary.elapsed >= 2.5, "{}", phase.summary.elapsed);
    }
    // No probe passed, so no bound is claimed: the report says why the probe could not answer.
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(
        md.contains("no probe passed; the probe at concurrency 1 could not decide")
            || md.contains("no probe passed; the probe at concurrency 1 was client-bound twice"),
        "{md}"
    );
    assert!(md.contains("indeterminate"));
    assert!(!md.contains("≥ –"), "{md}");
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(html.contains("no probe passed"));
}
