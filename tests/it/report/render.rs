//! Report writers: the committed fixture, markdown and CSV snapshots, HTML, the report command's flags.

use super::*;
use servebench::figure::Figure;

#[test]
fn fixture_matches_the_hand_built_report() {
    let built = sample_report(1.0);
    if std::env::var_os("UPDATE_REPORT_FIXTURES").is_some() {
        std::fs::write(
            FIXTURE,
            serde_json::to_string_pretty(&built).expect("json") + "\n",
        )
        .expect("write fixture");
    }
    let read = report::read_report(Path::new(FIXTURE)).expect("fixture reads");
    assert!(
        read == built,
        "{FIXTURE} differs from sample_report(); regenerate with UPDATE_REPORT_FIXTURES=1"
    );
}

#[test]
fn markdown_snapshot() {
    let md = report::formats::markdown::render(&sample_report(1.0));
    insta::assert_snapshot!("sample_markdown", md);
}

#[test]
fn markdown_makes_the_drift_and_warnings_obvious() {
    let md = report::formats::markdown::render(&sample_report(1.0));
    assert!(md.contains("**⚠ 1 of 1 rechecks drifted:**"), "{md}");
    assert!(
        md.contains("> - **gateway-c4 → recheck-c4: ttft.p99 14891 ms → 258 ms (−98.3%)**"),
        "{md}"
    );
    // Pipes and markup in user text cannot break the table.
    assert!(
        md.contains("Direct vs \\<gateway\\> \\| least-request & friends"),
        "{md}"
    );
    assert!(
        md.contains(
            "| burst-5rps | rate\\_limited | **1** | HTTP 429: slow down, \"burst\" limit hit |"
        ),
        "{md}"
    );
    assert!(
        md.contains("| burst-5rps | stream\\_broken | **2** | connection reset after 3 chunks |"),
        "{md}"
    );
    assert!(
        md.contains("> **⚠ Prompt size outside tolerance in:** burst-5rps\n"),
        "{md}"
    );
}

#[test]
fn a_partial_run_says_so() {
    let mut r = sample_report(1.0);
    r.span.partial = true;
    r.span.finished_at = None;
    r.span.stop_reason = Some("interrupted | Ctrl-C".to_string());
    r.phases[5].partial = true;
    let md = report::formats::markdown::render(&r);
    assert!(
        md.contains("> **Partial run:** not every phase finished (interrupted | Ctrl-C)."),
        "{md}"
    );
    assert!(
        md.contains("| Status | PARTIAL: interrupted \\| Ctrl-C |"),
        "{md}"
    );
    assert!(md.contains("| **burst-5rps (partial)** |"), "{md}");
    let html = report::formats::html::render(&r);
    assert!(html.contains("<b>Partial run:</b> not every phase finished (interrupted | Ctrl-C)."));
}

#[test]
fn csv_snapshot_and_rfc4180() {
    let r = sample_report(1.0);
    let phases = report::formats::csv::render_phases(&r);
    insta::assert_snapshot!("sample_phases_csv", phases);
    let mut rd = csv::Reader::from_reader(phases.as_bytes());
    let header = rd.headers().expect("header").clone();
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.expect("row")).collect();
    assert_eq!(rows.len(), r.phases.len());
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    assert_eq!(&rows[2][col("phase")], "gateway-c4");
    let p99: f64 = rows[2][col("ttft_p99_ms")].parse().expect("number");
    assert!(
        (p99 - r.phases[2]
            .summary
            .distribution(Figure::Ttft)
            .expect("ttft")
            .p99
            * 1000.0)
            .abs()
            < 1e-6
    );
    assert_eq!(
        &rows[2][col("frontend_network_mean_ms")],
        "",
        "no server timings"
    );

    // A phase whose server timed its requests carries the split, its remainder named.
    let mut timed = r.clone();
    timed.phases[2].transport.server_timing_gap = Some(servebench::metrics::ServerTimingGap {
        requests: 24,
        split: Some(servebench::metrics::LatencySplit {
            requests: 24,
            server_queue_ms: Some(1.5),
            server_prefill_ms: 300.0,
            server_decode_ms: 900.0,
            frontend_network_ms: 100.0,
            e2e_ms: 1301.5,
            ..Default::default()
        }),
    });
    let timed_csv = report::formats::csv::render_phases(&timed);
    let mut rd = csv::Reader::from_reader(timed_csv.as_bytes());
    let row = rd.records().nth(2).expect("row").expect("csv");
    let split: Vec<&str> = [
        "server_queue_mean_ms",
        "server_prefill_mean_ms",
        "server_decode_mean_ms",
        "frontend_network_mean_ms",
    ]
    .iter()
    .map(|c| &row[col(c)])
    .collect();
    assert_eq!(split, ["1.5", "300", "900", "100"]);

    let requests = report::formats::csv::render_requests(&r);
    let mut rd = csv::Reader::from_reader(requests.as_bytes());
    let header = rd.headers().expect("header").clone();
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.expect("row")).collect();
    let total: usize = r.phases.iter().map(|p| p.request_timings.len()).sum();
    assert_eq!(rows.len(), total);
    let msg = header
        .iter()
        .position(|h| h == "error_message")
        .expect("column");
    let messages: Vec<&str> = rows
        .iter()
        .map(|r| &r[msg])
        .filter(|m| !m.is_empty())
        .collect();
    assert!(messages.contains(&"slow down, \"burst\" limit hit"));
    assert!(messages.contains(&"connection reset\nafter 3 chunks"));
}

#[test]
fn html_is_self_contained_and_escaped() {
    let html = report::formats::html::render(&sample_report(1.0));
    for needle in ["<script", "src=", "@import", "url(", "@font-face"] {
        assert!(
            !html.contains(needle),
            "external or active content: {needle}"
        );
    }
    // Links only within the page: the table of contents.
    let links: Vec<&str> = html.split("href=\"").skip(1).collect();
    assert!(!links.is_empty(), "a table of contents");
    for link in links {
        assert!(link.starts_with('#'), "a link off the page: {link:.60}");
    }
    assert!(html.contains("Direct vs &lt;gateway&gt; | least-request &amp; friends"));
    // Sweep charts, two percentile charts, the recheck chart and one scatter per phase.
    assert_eq!(html.matches("<svg").count(), 2 + 2 + 1 + 6);
    assert!(html.contains("Output throughput vs concurrency"));
    assert!(html.contains("gateway-c4: 24 requests"));
    assert!(html.contains("burst-5rps: 21 requests (3 failed not shown)"));
}

#[test]
fn write_all_writes_markdown_and_html() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = sample_report(1.0);
    report::write_all(&r, dir.path()).expect("write_all");
    let md = std::fs::read_to_string(dir.path().join("report.md")).expect("md");
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("html");
    assert_eq!(md, report::formats::markdown::render(&r));
    assert!(html.starts_with("<!DOCTYPE html>"));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn requests_flag_needs_csv() {
    let out = servebench()
        .args(["report", FIXTURE, "--format", "md", "--requests"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let out = servebench()
        .args(["report", FIXTURE, "--format", "csv", "--requests"])
        .output()
        .expect("run");
    assert!(out.status.success());
    // Header, one line per request, plus one for each of the two quoted multi-line messages.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        1 + 6 * 24 + 2
    );
}
