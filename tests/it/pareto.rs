//! The Pareto frontier of a concurrency sweep run against the simulator over loopback: the
//! markdown flags each phase as report.json's own figures say, and the HTML draws the charts.

use servebench::figure::Figure;
use servebench::report::{PhaseResult, Report};

const PLAN: &str = "\
version: 1
name: pareto-sweep
seed: 3
targets:
  sim:
    simulator: {max_running: 4, prefill_tok_s: 40000, decode_ms_per_token: 1, decode_ms_per_running: 0.5}
workloads:
  short: {input_tokens: 64, output_tokens: 32, ignore_eos: true}
defaults: {target: sim, workload: short, requests: 32}
phases:
  - name: \"c{{ concurrency }}\"
    matrix:
      concurrency: [1, 2, 4, 8]
";

/// A phase on a frontier chart: its two axes (higher is better on both) and its trust.
type Point = (f64, f64, bool);

/// Whether some other trusted point is at least as good on both axes and better on one.
fn dominated(points: &[Point], i: usize) -> bool {
    let (x, y, _) = points[i];
    points.iter().enumerate().any(|(j, &(ox, oy, trusted))| {
        j != i && trusted && ox >= x && oy >= y && (ox > x || oy > y)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrency_sweep_reports_its_pareto_frontier() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let report: Report = crate::common::run_plan_text(dir.path(), PLAN).await;
    let out = dir.path().join("out");
    assert_eq!(report.phases.len(), 4);

    // Expected flags, from the figures report.json holds.
    let (per_user, ttft) = frontier_points(&report);
    let flag = |points: &[Point], i: usize| match (points[i].2, dominated(points, i)) {
        (false, _) => "**client-bound**",
        (true, false) => "yes",
        (true, true) => "no",
    };

    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let section = md
        .split("## Pareto frontier")
        .nth(1)
        .expect("a Pareto frontier section")
        .split("\n## ")
        .next()
        .unwrap();
    let mut on_some_frontier = 0;
    for (i, p) in report.phases.iter().enumerate() {
        let row = section
            .lines()
            .find(|l| l.starts_with(&format!("| sim / short | {} |", p.header.phase)))
            .unwrap_or_else(|| panic!("no row for {}:\n{section}", p.header.phase));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // | group | phase | load | tok/s | per user | TTFT | per-user frontier | TTFT frontier |
        assert_eq!(
            cells[3],
            format!("c={}", p.header.concurrency.unwrap()),
            "{row}"
        );
        assert_eq!(cells[7], flag(&per_user, i), "{}: {row}", p.header.phase);
        assert_eq!(cells[8], flag(&ttft, i), "{}: {row}", p.header.phase);
        on_some_frontier += usize::from(cells[7] == "yes" || cells[8] == "yes");
    }
    // Some trusted phase always survives: the one with the most output tok/s.
    if report.phases.iter().all(trusted) {
        assert!(on_some_frontier >= 1, "{section}");
    }

    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_pareto_charts(&html, dir.path());
}

/// A phase whose client kept up (or was not judged).
fn trusted(p: &PhaseResult) -> bool {
    p.client_trust.as_ref().is_none_or(|t| t.is_trusted())
}

/// Each phase's point on the two frontiers, with its trust: output tok/s against tok/s per
/// user, and against TTFT p50 (negated, so higher is better on both axes).
fn frontier_points(report: &Report) -> (Vec<Point>, Vec<Point>) {
    let figure =
        |p: &PhaseResult, f: Figure| *p.summary.distribution(f).expect("a generated figure");
    let per_user = report
        .phases
        .iter()
        .map(|p| {
            let decode = figure(p, Figure::DecodeTokS).mean;
            (p.summary.output_tokens_per_second, decode, trusted(p))
        })
        .collect();
    let ttft = report
        .phases
        .iter()
        .map(|p| {
            let ttft = figure(p, Figure::Ttft).p50;
            (p.summary.output_tokens_per_second, -ttft, trusted(p))
        })
        .collect();
    (per_user, ttft)
}

/// The HTML's Pareto section: its heading, both charts with one frontier line each and
/// every load's point labelled; the page loads cleanly in a browser when one is at hand.
fn assert_pareto_charts(html: &str, dir: &std::path::Path) {
    assert!(
        html.contains("<h2 id=\"pareto-frontier\">Pareto frontier</h2>"),
        "no section heading"
    );
    for title in [
        "sim / short: output tok/s vs tok/s per user",
        "sim / short: output tok/s vs TTFT p50",
    ] {
        assert!(
            html.contains(&format!("aria-label=\"{title}\"")),
            "no chart {title}"
        );
    }
    let frontier_lines = html.matches("<polyline class=\"frontier\"").count();
    assert_eq!(frontier_lines, 2, "one frontier line per chart");
    for load in ["c=1", "c=2", "c=4", "c=8"] {
        assert!(
            html.contains(&format!("class=\"tick\">{load}</text>")),
            "no point labelled {load}"
        );
    }
    // The page, charts and all, loads cleanly in a browser.
    if let Some(browser) = crate::report::browser::chromium() {
        let charts = html.matches("<svg").count();
        crate::report::browser::check_in_browser(browser, html, charts, dir);
    }
}
