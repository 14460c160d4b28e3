//! `servebench compare` as a reader meets it: what the summary lines, marks and notes say.

use super::*;

/// `compare BASE NEW` in markdown: exit code and stdout.
fn compare_md(base: &Path, new: &Path) -> (Option<i32>, String) {
    let out = servebench()
        .arg("compare")
        .args([base, new])
        .output()
        .expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn every_shared_phase_refused_says_so_rather_than_no_names_in_common() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut base = sample_report(1.0);
    let mut new = sample_report(1.0);
    for (i, (b, n)) in base.phases.iter_mut().zip(&mut new.phases).enumerate() {
        b.header.work_sha256 = Some(format!("{i:064}"));
        n.header.work_sha256 = Some(format!("{:064}", i + 100));
    }
    let phases = base.phases.len();
    let base = write_json(dir.path(), "base.json", &base);
    let new = write_json(dir.path(), "new.json", &new);
    let (code, stdout) = compare_md(&base, &new);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "No phase compared: the {phases} phases with matching names asked for different \
             work (see Not compared)."
        )),
        "{stdout}"
    );
    assert!(!stdout.contains("No phase names in common"), "{stdout}");
}

/// The markdown table row of `metric` under the phase heading `### phase`.
fn row<'a>(md: &'a str, phase: &str, metric: &str) -> &'a str {
    let heading = format!("### {phase}\n");
    let at = md.find(&heading).expect("phase heading");
    let prefix = format!("| {} |", metric.replace('_', "\\_"));
    md[at..]
        .lines()
        .find(|l| l.starts_with(&prefix))
        .expect("metric row")
}

#[test]
fn only_a_significant_change_for_the_worse_is_bold_and_a_tiny_drop_keeps_its_sign() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = sample_report(1.0);
    // Output throughput a hair lower everywhere: untested, so not bold, and shown as a drop.
    let mut same = sample_report(1.0);
    for p in &mut same.phases {
        p.summary.output_tokens_per_second -= 0.01;
    }
    let base_path = write_json(dir.path(), "base.json", &base);
    let same = write_json(dir.path(), "same.json", &same);
    let (code, md) = compare_md(&base_path, &same);
    assert_eq!(code, Some(0), "{md}");
    let changes = &md[md.find("## Changes by phase").expect("changes")..];
    let table_rows: Vec<&str> = changes.lines().filter(|l| l.starts_with("| ")).collect();
    assert!(!table_rows.is_empty(), "{md}");
    assert!(
        table_rows.iter().all(|l| !l.contains("**")),
        "nothing is bold between runs that differ by noise: {changes}"
    );
    let throughput = row(&md, "gateway-c16", "output_tokens_per_second");
    assert!(throughput.contains("| −0.0% |"), "{throughput}");
    assert!(
        md.contains("Bold marks a significant change for the worse."),
        "{md}"
    );

    // A 50% slower TTFT, significant, is still bold.
    let slow = write_json(dir.path(), "slow.json", &sample_report(1.5));
    let (_, md) = compare_md(&base_path, &slow);
    let ttft = row(&md, "gateway-c16", "ttft.p50");
    assert!(ttft.contains("| **+50.0%** |"), "{ttft}");
    assert!(ttft.contains("| yes |"), "{ttft}");
}

#[test]
fn a_tally_leads_and_too_few_samples_says_what_phase_would_test_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base_report = sample_report(1.0);
    let slow_report = sample_report(1.5);
    let base = write_json(dir.path(), "base.json", &base_report);
    let slow = write_json(dir.path(), "slow.json", &slow_report);
    let json = servebench()
        .arg("compare")
        .args([&base, &slow])
        .args(["--format", "json"])
        .output()
        .expect("run");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let metrics: Vec<&serde_json::Value> = v["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .flat_map(|p| p["metrics"].as_array().expect("metrics"))
        .collect();
    let by_design = ["a count", "one value per phase"];
    let not_testable = metrics
        .iter()
        .filter(|m| m["significant"].is_null())
        .filter(|m| !by_design.contains(&m["note"].as_str().expect("a note on every untested")))
        .count();
    let tally = &v["tally"];
    assert_eq!(tally["not_testable"], not_testable, "{tally}");
    let regressions = tally["regressions"].as_u64().expect("regressions");
    assert!(
        regressions > 0,
        "a 50% slower TTFT is a regression: {tally}"
    );
    let (code, md) = compare_md(&base, &slow);
    assert_eq!(code, Some(0), "{md}");
    let line = format!(
        "**{regressions} significant regressions, {} significant improvements, {not_testable} \
         figures not testable.**",
        tally["improvements"]
    );
    assert!(md.contains(&line), "{line}\n{md}");

    // p95 and p99 need 72 and 368 samples a side; at a side's pace, 368 samples of a figure
    // take 368 × elapsed / samples seconds and 368 × requests / samples requests.
    let c16 = v["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .find(|p| p["phase"] == "gateway-c16")
        .expect("gateway-c16");
    let gap = &c16["too_few_samples"];
    let figures: Vec<&str> = gap["figures"]
        .as_array()
        .expect("figures")
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    assert!(
        figures.contains(&"ttft.p95") && figures.contains(&"ttft.p99"),
        "{gap}"
    );
    assert_eq!(gap["samples_needed"], 368);
    let summary = |r: &Report| {
        let p = r
            .phases
            .iter()
            .find(|p| p.header.phase == "gateway-c16")
            .expect("phase");
        (p.summary.elapsed, p.summary.requests as f64)
    };
    let sides = [summary(&base_report), summary(&slow_report)];
    let (mut seconds, mut requests) = (0f64, 0f64);
    for m in c16["metrics"].as_array().expect("metrics") {
        if !figures.contains(&m["metric"].as_str().expect("name")) {
            continue;
        }
        for (i, (elapsed, reqs)) in sides.iter().enumerate() {
            let have = m["samples"][i].as_f64().expect("samples");
            seconds = seconds.max(368.0 * elapsed / have);
            requests = requests.max((368.0 * reqs / have).ceil());
        }
    }
    let got = gap["seconds_needed"].as_f64().expect("seconds");
    assert!((got - seconds).abs() < 1e-6 * seconds, "{got} vs {seconds}");
    assert_eq!(gap["requests_needed"].as_f64(), Some(requests));
    assert!(
        md.contains(&format!(
            "Not testable for too few samples: {}. They need up to 368 samples a side; at \
             these runs' rates, a phase of about {} s ({requests} requests) would give them.",
            figures.join(", "),
            seconds.ceil()
        )),
        "{md}"
    );
}

#[test]
fn counts_and_phase_rates_say_they_are_not_tested_by_design() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = write_json(dir.path(), "base.json", &sample_report(1.0));
    let slow = write_json(dir.path(), "slow.json", &sample_report(1.5));
    let (_, md) = compare_md(&base, &slow);
    for (metric, cell) in [
        ("requests", "| not tested (a count) |"),
        ("errors", "| not tested (a count) |"),
        (
            "output_tokens_per_second",
            "| not tested (one value per phase) |",
        ),
        ("request_rate", "| not tested (one value per phase) |"),
    ] {
        let row = row(&md, "gateway-c16", metric);
        assert!(row.contains(cell), "{row}");
    }
    assert!(!md.contains("n/a (no records or intervals)"), "{md}");
}

#[test]
fn a_run_directory_stands_for_its_report_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (q1, q2, empty) = (
        dir.path().join("q1"),
        dir.path().join("q2"),
        dir.path().join("empty"),
    );
    for d in [&q1, &q2, &empty] {
        std::fs::create_dir(d).expect("mkdir");
    }
    write_json(&q1, "report.json", &sample_report(1.0));
    write_json(&q2, "report.json", &sample_report(1.5));
    let (code, md) = compare_md(&q1, &q2);
    assert_eq!(code, Some(0), "{md}");
    let base_file = q1.join("report.json");
    assert!(
        md.contains(&format!("**Base:** {}", base_file.display())),
        "{md}"
    );
    assert!(md.contains("### gateway-c16"), "{md}");

    let out = servebench()
        .args(["report", "--format", "md"])
        .arg(&q1)
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("gateway-c16"), "{stdout}");

    // A directory without a report: exit 2, naming the file looked for.
    let looked_for = format!("(looked for {})", empty.join("report.json").display());
    let out = servebench()
        .arg("compare")
        .args([&q1, &empty])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&looked_for), "{stderr}");
    assert!(!stderr.contains("Is a directory"), "{stderr}");
    let out = servebench()
        .arg("report")
        .arg(&empty)
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&looked_for), "{stderr}");
}

#[test]
fn a_changed_plan_shows_its_hash_and_the_keys_that_differ() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = sample_report(1.0);
    let mut new = sample_report(1.0);
    new.plan_source.sha256 = "f".repeat(64);
    new.plan.seed = Some(base.plan.seed.unwrap_or(0) + 1);
    new.plan.description = Some("slower decode".into());
    let base_seed = base.plan.seed.map_or("–".to_string(), |s| s.to_string());
    let base_sha = base.plan_source.sha256[..12].to_string();
    let base = write_json(dir.path(), "base.json", &base);
    let new_path = write_json(dir.path(), "new.json", &new);
    let (code, md) = compare_md(&base, &new_path);
    assert_eq!(code, Some(0), "{md}");
    assert!(md.contains("## What differs between the runs"), "{md}");
    assert!(
        md.contains(&format!("| plan sha256 | {base_sha} | ffffffffffff |")),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "| seed | {base_seed} | {} |",
            new.plan.seed.expect("seed")
        )),
        "{md}"
    );
    assert!(md.contains("| description |"), "{md}");
    // The same plan on both sides: no plan rows.
    let (_, same) = compare_md(&base, &base);
    assert!(!same.contains("plan sha256"), "{same}");
    assert!(!same.contains("Expanded-plan keys"), "{same}");
}

#[test]
fn latencies_read_in_milliseconds_in_every_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = write_json(dir.path(), "base.json", &sample_report(1.0));
    let slow = write_json(dir.path(), "slow.json", &sample_report(1.5));
    let (_, md) = compare_md(&base, &slow);
    // e2e runs to seconds, ttft to tenths of one: one unit all the same.
    for metric in ["ttft.p50", "ttft.p99", "e2e.p50", "e2e.p99"] {
        let row = row(&md, "gateway-c16", metric);
        let cells: Vec<&str> = row.split(" | ").collect();
        for cell in &cells[1..4] {
            assert!(cell.ends_with(" ms"), "{metric}: {cell} in {row}");
        }
    }
    // The rechecks table of the report too.
    let report = servebench()
        .args(["report", "--format", "md"])
        .arg(&base)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&report.stdout);
    let rechecks: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("→ recheck") && (l.contains("| ttft.") || l.contains("| e2e.")))
        .collect();
    assert!(!rechecks.is_empty(), "{text}");
    for l in rechecks {
        assert!(!l.contains(" s |"), "{l}");
    }
}
