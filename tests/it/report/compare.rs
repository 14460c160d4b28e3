//! `servebench compare`: gates on real and seeded reports, exit codes.

use super::*;

#[test]
fn seed_004_against_itself_passes_every_gate() {
    let out = servebench()
        .args(["compare", SEED_004, SEED_004])
        .args([
            "--gate",
            "ttft.p95 < +10%",
            "--gate",
            "output_tokens_per_second > -5%",
        ])
        .args([
            "--gate",
            "errors <= +0",
            "--gate",
            "tpot.p50 <= +0%",
            "--gate",
            "e2e.p50 < 60s",
        ])
        .args(["--gate", "gateway-c4:ttft.p99 < +1ms"])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("All 71 gate checks passed."), "{stdout}");
    assert!(stdout.contains("n/a (no records or intervals)"), "{stdout}");
}

#[test]
fn a_slower_run_fails_the_ttft_gate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = write_json(dir.path(), "base.json", &sample_report(1.0));
    let slow = write_json(dir.path(), "slow.json", &sample_report(1.5));
    let out = servebench()
        .arg("compare")
        .args([&base, &slow])
        .args(["--gate", "ttft.p95 < +10%", "--gate", "errors <= 3"])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("**✗ 6 of 12 gate checks failed.**"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "| ttft.p95 \\< +10% | gateway-c16 | 0.503 s | 0.754 s | +50.0% | **FAIL** |"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("+50.0%"), "{stdout}");

    // JSON: the TTFT p50 shift is significant with 24/24 samples; request count is not a statistic.
    let out = servebench()
        .arg("compare")
        .args([&base, &slow])
        .args(["--format", "json"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "no gates, no failure");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let metric = |phase: &str, name: &str| {
        v["phases"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["phase"] == phase))
            .and_then(|p| p["metrics"].as_array())
            .and_then(|ms| ms.iter().find(|m| m["metric"] == name))
            .cloned()
            .expect("metric")
    };
    let ttft = metric("gateway-c16", "ttft.p50");
    assert_eq!(ttft["significant"], true);
    assert_eq!(ttft["samples"], serde_json::json!([24, 24]));
    let lo = ttft["ci95"][0].as_f64().expect("ci");
    assert!(lo > 0.0);
    let tpot = metric("gateway-c16", "tpot.p50");
    assert_eq!(tpot["significant"], false, "TPOT did not change");
    assert_eq!(
        metric("gateway-c16", "requests")["significant"],
        serde_json::Value::Null
    );
}

#[test]
fn the_same_report_compares_clean() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = write_json(dir.path(), "base.json", &sample_report(1.0));
    let out = servebench()
        .arg("compare")
        .args([&base, &base])
        .args(["--gate", "ttft.p95 < +10%", "--gate", "error_rate < 20%"])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        !stdout.contains("| yes |"),
        "nothing is significant against itself: {stdout}"
    );
}

#[test]
fn gate_grammar_errors_exit_2() {
    for (gate, expect) in [
        ("ttft.p95 10%", "no comparison operator"),
        ("ttft.p95 < 10%", "a relative change needs a sign"),
        ("ttft.p95 < 2", "is a time: give a unit"),
        ("latency.p95 < +5%", "unknown metric `latency.p95`"),
        ("ttft < +5%", "name a statistic"),
    ] {
        let out = servebench()
            .args(["compare", FIXTURE, FIXTURE, "--gate", gate])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{gate}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("invalid gate `{gate}`")) && err.contains(expect),
            "{gate}: {err}"
        );
    }
}

#[test]
fn a_gate_on_a_missing_phase_fails() {
    let out = servebench()
        .args([
            "compare",
            FIXTURE,
            FIXTURE,
            "--format",
            "json",
            "--gate",
            "nope:errors == 0",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["passed"], false);
    assert_eq!(
        v["gates"][0]["problem"],
        "no phase `nope` in the new report"
    );
}
