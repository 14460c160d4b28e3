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
        stdout
            .contains("| ttft.p95 \\< +10% | gateway-c16 | 503 ms | 754 ms | +50.0% | **FAIL** |"),
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

#[test]
fn compare_lists_error_causes_the_base_did_not_have() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = sample_report(1.0);
    let mut new = sample_report(1.0);
    // One of burst-5rps's stream breaks becomes a context-length 400 (the hand-built summary
    // has no `errors_by_cause`: the causes come from the records, as for older reports).
    let burst = new
        .phases
        .iter_mut()
        .find(|p| p.header.phase == "burst-5rps")
        .unwrap();
    let record = burst
        .request_timings
        .iter_mut()
        .rev()
        .find(|r| {
            r.error
                .as_ref()
                .is_some_and(|e| e.kind == ErrorKind::StreamBroken)
        })
        .unwrap();
    record.error = Some(RequestError {
        body: Some(r#"{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}"#.into()),
        code: Some("context_length_exceeded".into()),
        error_type: Some("invalid_request_error".into()),
        ..RequestError::new(ErrorKind::HttpStatus, Some(400), "HTTP 400 Bad Request: too long")
    });
    let base_path = write_json(dir.path(), "base.json", &base);
    let new_path = write_json(dir.path(), "new.json", &new);
    let out = servebench()
        .arg("compare")
        .args([&base_path, &new_path])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("New error causes (not in base):"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "| **1** | HTTP 400 · invalid\\_request\\_error · context\\_length\\_exceeded | HTTP 400 Bad Request: too long |"
        ),
        "{stdout}"
    );
    // Causes both sides have (`HTTP 429`, `stream_broken`) are not new.
    assert_eq!(stdout.matches("New error causes").count(), 1, "{stdout}");
    let out = servebench()
        .arg("compare")
        .args([&base_path, &new_path])
        .args(["--format", "json"])
        .output()
        .expect("run");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let phases = v["phases"].as_array().unwrap();
    let with_new: Vec<&serde_json::Value> = phases
        .iter()
        .filter(|p| p.get("new_error_causes").is_some())
        .collect();
    assert_eq!(with_new.len(), 1, "{v}");
    assert_eq!(with_new[0]["phase"], "burst-5rps");
    assert_eq!(
        with_new[0]["new_error_causes"][0]["cause"],
        "HTTP 400 · invalid_request_error · context_length_exceeded"
    );
    // The other way round, nothing is new.
    let out = servebench()
        .arg("compare")
        .args([&new_path, &base_path])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("New error causes"), "{stdout}");
}
