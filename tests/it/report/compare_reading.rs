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
    assert!(md.contains("Bold marks a significant change for the worse."), "{md}");

    // A 50% slower TTFT, significant, is still bold.
    let slow = write_json(dir.path(), "slow.json", &sample_report(1.5));
    let (_, md) = compare_md(&base_path, &slow);
    let ttft = row(&md, "gateway-c16", "ttft.p50");
    assert!(ttft.contains("| **+50.0%** |"), "{ttft}");
    assert!(ttft.contains("| yes |"), "{ttft}");
}
