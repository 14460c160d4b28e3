//! The Kubernetes example: its plan runs aligned shards, its manifests merge them.

use super::*;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/kubernetes")
        .join(name)
}

#[test]
fn the_kubernetes_example_plan_runs_aligned_shards() {
    let out = servebench()
        .args([
            "run",
            "--dry-run",
            "--shard",
            "1/3",
            "--start-at",
            "2030-01-01T00:00:00Z",
        ])
        .arg(example("plan.yaml"))
        .assert()
        .success();
    let schedule = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(schedule.contains("shard 1/3"), "{schedule}");
    // 20 s warmup + 2 min + 10 s cooldown + the drain allowance.
    let second = chrono::DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z").unwrap()
        + chrono::Duration::seconds(20 + 120 + 10)
        + chrono::Duration::from_std(servebench::shard::DRAIN_ALLOWANCE).unwrap();
    let line = format!(
        "c1024 starts at {}",
        second.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    assert!(schedule.contains(&line), "{line} not in {schedule}");
}

#[test]
fn the_kubernetes_manifests_run_indexed_shards_and_merge_them() {
    let load = |name: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(example(name)).unwrap();
        let text = text
            .replace("${RUN}", "r1")
            .replace("${SHARDS}", "4")
            .replace("${START_AT}", "2030-01-01T00:00:00Z");
        assert!(
            !text.contains("${"),
            "{name} has a placeholder the README does not set"
        );
        serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let shards = load("shards-job.yaml");
    assert_eq!(shards["kind"], "Job");
    assert_eq!(shards["spec"]["completionMode"], "Indexed");
    assert_eq!(shards["spec"]["completions"], 4);
    assert_eq!(shards["spec"]["parallelism"], 4);
    let container = &shards["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    let after = |flag: &str| args[args.iter().position(|a| *a == flag).unwrap() + 1];
    assert_eq!(args[..2], ["run", "/plan/plan.yaml"]);
    assert_eq!(after("--shard"), "$(JOB_COMPLETION_INDEX)/4");
    assert!(servebench::shard::parse_start_at(after("--start-at")).is_ok());
    assert_eq!(
        after("--output"),
        "/reports/r1/shard-$(JOB_COMPLETION_INDEX)"
    );

    let merge = load("merge-job.yaml");
    let script = merge["spec"]["template"]["spec"]["containers"][0]["args"][0]
        .as_str()
        .unwrap();
    assert!(
        script.contains(
            "servebench merge /reports/r1/shard-*/report.json -o /reports/r1/merged.json"
        ),
        "{script}"
    );
    for name in ["storage.yaml", "reports-pod.yaml"] {
        assert!(load(name)["kind"].is_string(), "{name}");
    }
}
