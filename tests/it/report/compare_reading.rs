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
