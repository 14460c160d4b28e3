//! Older report formats: the seed reports import, render and map to records; unreadable files say why.

use super::*;

#[test]
fn seed_004_imports_with_rechecks_and_renders() {
    let r = report::read_report(Path::new(SEED_004)).expect("seed 004");
    assert_eq!(r.phases.len(), 14);
    assert_eq!(r.phases[2].header.phase, "gateway-c4");
    let pairs: Vec<(&str, &str)> = r
        .rechecks
        .iter()
        .map(|p| (p.original.as_str(), p.recheck.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("gateway-c4", "recheck-c4"),
            ("gateway-c16", "recheck-c16"),
            ("gateway-c32", "recheck-c32"),
            ("prefix-random", "recheck-prefix-random"),
            ("prefix-aware", "recheck-prefix-aware"),
        ]
    );
    let md = report::formats::markdown::render(&r);
    assert!(
        md.contains("gateway-c4 → recheck-c4: ttft.p99 14927 ms → 323 ms"),
        "{md}"
    );
    assert!(md.contains("| gateway-c4 | least-request | c=4 |"), "{md}");
}

#[test]
fn seed_000_renders_as_markdown() {
    let out = servebench()
        .args(["report", SEED_000, "--format", "md"])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = String::from_utf8_lossy(&out.stdout);
    // Recomputed from the records with nearest rank, the seed's own p50 TTFT: 3627.593 ms.
    assert!(
        md.contains("| c16 | 127.0.0.1:39062 | c=16 | 16 | 0 | 514 |"),
        "{md}"
    );
    assert!(md.contains("| 3628 |"), "{md}");
    // Planned 4096 tokens, the server saw 2960: the report warns.
    assert!(md.contains("WARNING: outside tolerance"), "{md}");
}

#[test]
fn unreadable_reports_name_the_file_and_the_problem() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("missing.json", None, "cannot read"),
        ("garbage.json", Some("{not json"), "not valid JSON"),
        (
            "other.json",
            Some(r#"{"schema": "acme/v9"}"#),
            "unsupported report schema \"acme/v9\"",
        ),
        ("empty.json", Some("{}"), "not a known report"),
        (
            "bad.json",
            Some(r#"{"schema": "servebench.report/v1", "tool": 3}"#),
            "not a valid servebench.report/v1 report",
        ),
    ];
    for (name, body, expect) in cases {
        let path = dir.path().join(name);
        if let Some(b) = body {
            std::fs::write(&path, b).expect("write");
        }
        let out = servebench().arg("report").arg(&path).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(name) && err.contains(expect), "{name}: {err}");
    }
}

#[test]
fn single_run_seeds_map_to_records() {
    const SEED_002: &str = "tests/fixtures/seeds/002_7f8743b500e818d3.txt";
    let read = |p: &str| -> report::formats::anvil::AnvilRun {
        serde_json::from_slice(&std::fs::read(p).expect("seed")).expect("anvil format")
    };
    // Seed 000: 16 requests at concurrency 16 all start together.
    let run = read(SEED_000);
    let recs = report::formats::anvil::anvil_records(&run);
    assert_eq!(recs.len(), 16);
    assert!(recs.iter().all(|r| r.start_offset_ms == 0.0 && r.is_ok()));
    let first = &recs[0];
    assert_eq!(first.request_id, "benchmark-20260802T104738Z-0");
    assert_eq!(first.ttft_ms, Some(3352.2910000010597));
    // TPOT = (e2e − ttft) / (output_tokens − 1).
    let tpot = first.tpot_ms.expect("tpot");
    assert!((tpot - (3575.8383000011236 - 3352.2910000010597) / 143.0).abs() < 1e-9);

    // Seed 002: concurrency 1, so each request starts when the previous one ended, and the
    // last one ends at the sum of e2e, within 3 ms of the seed's own wall clock.
    let run = read(SEED_002);
    let recs = report::formats::anvil::anvil_records(&run);
    assert_eq!(recs.len(), 10);
    for pair in recs.windows(2) {
        assert!(
            (pair[1].start_offset_ms - (pair[0].start_offset_ms + pair[0].e2e_ms)).abs() < 1e-9
        );
    }
    let last = recs.last().expect("records");
    let end = last.start_offset_ms + last.e2e_ms;
    assert!(
        (run.wall_clock_ms.expect("wall clock") - end).abs() < 3.0,
        "{end}"
    );
}
