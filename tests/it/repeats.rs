//! `repeat` groups: rounds expanded in order and named `ARM/round-N`, arms pooled, and arm
//! differences judged against the round-to-round spread.

use std::path::Path;

use servebench::plan::source::Format;
use servebench::plan::{ExpandOptions, prepare_from_str};
use servebench::runner::run;

const HEAD: &str = "version: 1\nname: rep\nseed: 1\ntargets:\n  fast: {simulator: {decode_ms_per_token: 1}}\n  slow: {simulator: {decode_ms_per_token: 12}}\nworkloads:\n  w: {input_tokens: 32, output_tokens: 12, ignore_eos: true}\ndefaults: {workload: w, requests: 8}\nphases:\n";

fn names(body: &str) -> Vec<String> {
    let loaded = prepare_from_str(
        &format!("{HEAD}{body}"),
        Format::Yaml,
        "rep.yaml",
        &ExpandOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    loaded
        .plan
        .phases
        .iter()
        .map(|p| p.name.clone().unwrap_or_default())
        .collect()
}

fn errors(body: &str) -> String {
    prepare_from_str(
        &format!("{HEAD}{body}"),
        Format::Yaml,
        "rep.yaml",
        &ExpandOptions::default(),
    )
    .unwrap_err()
    .to_string()
}

#[test]
fn rounds_expand_in_the_groups_order() {
    let group = |order: &str| {
        format!(
            "  - {{name: first, target: fast, concurrency: 1}}\n  - name: speed\n    repeat: {{times: 2, order: {order}, seed: 3}}\n    phases:\n      - {{name: \"c{{{{ concurrency }}}}\", target: fast, matrix: {{concurrency: [1, 2]}}}}\n      - {{name: slow, target: slow, concurrency: 1}}\n  - {{name: last, target: fast, concurrency: 1}}\n"
        )
    };
    assert_eq!(
        names(&group("interleaved")),
        [
            "first",
            "c1/round-1",
            "c2/round-1",
            "slow/round-1",
            "c1/round-2",
            "c2/round-2",
            "slow/round-2",
            "last"
        ]
    );
    assert_eq!(
        names(&group("blocked")),
        [
            "first",
            "c1/round-1",
            "c2/round-1",
            "c1/round-2",
            "c2/round-2",
            "slow/round-1",
            "slow/round-2",
            "last"
        ]
    );
    let mut shuffled = names(&group("shuffled"));
    assert_eq!(shuffled.len(), 8);
    shuffled.sort();
    let mut interleaved = names(&group("interleaved"));
    interleaved.sort();
    assert_eq!(shuffled, interleaved, "the same rounds, in another order");

    let loaded = prepare_from_str(
        &format!("{HEAD}{}", group("interleaved")),
        Format::Yaml,
        "rep.yaml",
        &ExpandOptions::default(),
    )
    .unwrap();
    let round = loaded.plan.phases[5].round.as_ref().unwrap();
    assert_eq!(
        (
            round.group.as_str(),
            round.arm.as_str(),
            round.index,
            round.of
        ),
        ("speed", "c2", 2, 2)
    );
}

#[test]
fn a_bad_group_is_located() {
    let text = errors(
        "  - repeat: {times: 0, order: sideways}\n    phases:\n      - {target: fast, concurrency: 1}\n",
    );
    assert!(
        text.contains("`times` must be a whole number from 1 to 1000, found 0"),
        "{text}"
    );
    assert!(text.contains("rep.yaml:11:"), "{text}");
    assert!(
        text.contains("`order` is one of `interleaved`, `blocked`, `shuffled`"),
        "{text}"
    );
    assert!(
        text.contains("a phase in a repeat group needs a `name`"),
        "{text}"
    );
    assert!(text.contains("rep.yaml:13:"), "{text}");
    // An error inside an arm points at the arm as written, not at an expanded round.
    let text = errors(
        "  - repeat: {times: 2}\n    phases:\n      - {name: a, target: nowhere, concurrency: 1}\n",
    );
    assert!(text.contains("no target named `nowhere`"), "{text}");
    assert!(text.contains("rep.yaml:13:27"), "{text}");
}

async fn run_plan(dir: &Path, body: &str) -> serde_json::Value {
    let plan = dir.join("plan.yaml");
    std::fs::write(&plan, format!("{HEAD}{body}")).unwrap();
    let out = dir.join("out");
    run(crate::common::quiet_run_options(plan, &out))
        .await
        .unwrap();
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn verdicts(report: &serde_json::Value) -> Vec<(String, bool)> {
    report["repeats"][0]["pairs"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["metric"].as_str().unwrap().to_string(),
                m["exceeds_spread"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arms_of_different_speed_differ_beyond_the_spread() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let report = run_plan(
        dir.path(),
        "  - name: speed\n    repeat: {times: 3, order: interleaved}\n    phases:\n      - {name: fast, target: fast, concurrency: 2}\n      - {name: slow, target: slow, concurrency: 2}\n",
    )
    .await;
    crate::common::assert_valid_report(&report);
    let phases: Vec<&str> = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(
        phases,
        [
            "fast/round-1",
            "slow/round-1",
            "fast/round-2",
            "slow/round-2",
            "fast/round-3",
            "slow/round-3"
        ]
    );
    let group = &report["repeats"][0];
    assert_eq!(group["group"], "speed");
    assert_eq!(group["rounds"], 3);
    let fast = &group["arms"][0];
    assert_eq!(fast["arm"], "fast");
    assert_eq!(
        fast["pooled"]["requests"], 24,
        "the union of three rounds of 8"
    );
    let tpot = &fast["spread"][1];
    assert_eq!(tpot["metric"], "tpot.p50");
    assert_eq!(tpot["rounds"].as_array().unwrap().len(), 3);
    assert!(tpot["min"].as_f64() <= tpot["pooled"].as_f64());
    assert!(tpot["pooled"].as_f64() <= tpot["max"].as_f64());
    let verdicts = verdicts(&report);
    for metric in ["tpot.p50", "e2e.p50", "output_tokens_per_second"] {
        assert!(
            verdicts.contains(&(metric.to_string(), true)),
            "{metric}: {verdicts:?}\n{}",
            group["pairs"]
        );
    }
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(
        md.contains("> **speed: fast and slow differ by more than the round-to-round spread in"),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(
        html.contains("<h2 id=\"repeats\">Repeats</h2>") && html.contains("larger than the spread")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_arms_stay_within_the_spread() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    // With identical arms, noise alone puts one figure outside the spread in about 1% of runs
    // at four rounds per arm and 0.004% at eight (simulated with Gaussian noise).
    let report = run_plan(
        dir.path(),
        "  - name: same\n    repeat: {times: 8, order: shuffled, seed: 5}\n    phases:\n      - {name: a, target: slow, concurrency: 2}\n      - {name: b, target: slow, concurrency: 2}\n",
    )
    .await;
    let verdicts = verdicts(&report);
    assert_eq!(verdicts.len(), 4, "{verdicts:?}");
    for metric in ["tpot.p50", "e2e.p50"] {
        assert!(
            verdicts.contains(&(metric.to_string(), false)),
            "{metric}: {verdicts:?}\n{}",
            report["repeats"][0]["pairs"]
        );
    }
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(
        md.contains("## Repeats") && !md.contains("differ by more than"),
        "{md}"
    );
}
