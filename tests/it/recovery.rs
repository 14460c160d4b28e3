//! Recovery after a fault: a simulator fault switched on for 5 s in the middle of a phase,
//! measured from the report, the markdown and the HTML. The simulator takes 20 ms over each
//! prompt, so a healthy TTFT is far above the millisecond of jitter a loaded machine adds
//! (with a sub-millisecond TTFT, that jitter alone failed the recovery rule).

use std::path::Path;

use servebench::runner::run;

const PLAN: &str = "version: 1
name: recovery
seed: 5
targets:
  sim:
    simulator: {decode_ms_per_token: 1, prefill_tok_s: 1600, jitter: 0}
workloads:
  w: {input_tokens: 32, output_tokens: 4, ignore_eos: true}
defaults: {target: sim, workload: w}
phases:
  - name: outage
    rate: {rps: 50, arrival: constant}
    duration: 10s
    during:
      - {at: 2s, fault_on: {kind: status, status: 503, probability: 1.0}}
      - {at: 7s, fault_off: true}
";

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_five_second_fault_is_measured_from_its_switch_instants() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(&plan, PLAN).unwrap();
    let out = dir.path().join("out");
    run(crate::common::quiet_run_options(plan, &out))
        .await
        .unwrap();
    let report: serde_json::Value = serde_json::from_str(&read(&out, "report.json")).unwrap();
    let phase = &report["phases"][0];
    let mark = |name: &str| {
        phase["marks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no {name} mark: {phase}"))["offset_s"]
            .as_f64()
            .unwrap()
    };
    // The truth: when the switching actions finished (the simulator switched before it
    // answered them).
    let (on, off) = (mark("fault-on"), mark("fault-off"));
    let recovery = &phase["recovery"];
    assert_eq!(recovery["fault_on_s"].as_f64(), Some(on));
    assert_eq!(recovery["fault_off_s"].as_f64(), Some(off));
    assert_eq!(recovery["baseline"]["source"], "pre-fault");
    let start = recovery["outage_start_s"].as_f64().unwrap();
    let end = recovery["outage_end_s"].as_f64().unwrap();
    assert!(
        (start - on).abs() < 0.5,
        "outage starts {start}, fault on {on}"
    );
    assert!(
        (end - off).abs() < 0.5,
        "outage ends {end}, fault off {off}"
    );
    let recover = recovery["time_to_recover_s"].as_f64().unwrap();
    assert!((0.0..0.5).contains(&recover), "{recover}");
    let errors = phase["errors"]
        .as_u64()
        .unwrap_or_else(|| panic!("{phase}"));
    assert!(errors > 100, "{errors} errors in a 5 s outage at 50 req/s");

    let md = read(&out, "report.md");
    assert!(md.contains("## Marks and recovery"), "{md}");
    assert!(md.contains(&format!("{:.2}", end - start)), "{md}");
    assert!(md.contains(&format!("{recover:.2}")), "{md}");

    let html = read(&out, "report.html");
    assert!(html.contains("<h2 id=\"marks-and-recovery\">Marks and recovery</h2>"));
    assert_eq!(
        html.matches("class=\"mark\"").count(),
        2,
        "both marks drawn"
    );
    assert_eq!(
        html.matches("class=\"outage\"").count(),
        1,
        "the outage shaded"
    );
    assert!(html.contains(&format!("fault-on {on:.2}s")));
    assert!(html.contains(&format!("fault-off {off:.2}s")));
}

#[test]
fn a_during_action_needs_at_and_before_takes_none() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    let bad = PLAN.replace("{at: 7s, fault_off: true}", "{fault_off: true}")
        + "    before: [{at: 1s, sleep: 1s}]\n";
    std::fs::write(&plan, bad).unwrap();
    let errors = servebench::plan::prepare(&plan, &Default::default()).unwrap_err();
    let text = errors.to_string();
    assert!(text.contains("a `during` action needs `at`"), "{text}");
    assert!(text.contains("`at` is for `during` actions"), "{text}");
}
