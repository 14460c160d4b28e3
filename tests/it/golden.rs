//! Golden renders: every report fixture reads and renders byte for byte as committed.
//!
//! The snapshots live in tests/fixtures/rendered/: `<fixture>.md` and `.html` as `servebench
//! report X --format md|html` prints them, `<fixture>.json` the report re-serialized as
//! `report.json` is written, `<fixture>.error.txt` the message for a file that does not read
//! as a report.
//! After an intended change to the output, regenerate them with
//! `SERVEBENCH_BLESS=1 cargo test --test it golden::` and review the diff.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every report fixture, as a path relative to the repository root (the path is part of the
/// report's `source`, so it must not depend on where the checkout lives).
fn fixtures() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (dir, keep) in [
        (
            "tests/fixtures/reports",
            (|n: &str| n.ends_with(".json")) as fn(&str) -> bool,
        ),
        ("tests/fixtures/seeds", |_: &str| true),
        ("tests/fixtures/valid", |n: &str| {
            n.starts_with("report-") && n.ends_with(".json")
        }),
    ] {
        let mut names: Vec<String> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| keep(n))
            .collect();
        names.sort();
        out.extend(names.into_iter().map(|n| Path::new(dir).join(n)));
    }
    out
}

fn snapshot_name(fixture: &Path, ext: &str) -> PathBuf {
    let dir = fixture
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy();
    let stem = fixture.file_stem().unwrap().to_string_lossy();
    root().join(format!("tests/fixtures/rendered/{dir}-{stem}.{ext}"))
}

fn check(path: &Path, actual: &str, bless: bool, mismatches: &mut Vec<String>) {
    if bless {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, actual).unwrap();
        return;
    }
    match std::fs::read_to_string(path) {
        Ok(expected) if expected == actual => {}
        Ok(expected) => {
            let line = expected
                .lines()
                .zip(actual.lines())
                .position(|(e, a)| e != a)
                .map_or_else(|| "the length".to_string(), |i| format!("line {}", i + 1));
            mismatches.push(format!("{}: differs at {line}", path.display()));
        }
        Err(e) => mismatches.push(format!("{}: {e}", path.display())),
    }
}

#[test]
fn every_report_fixture_renders_as_committed() {
    let bless = std::env::var_os("SERVEBENCH_BLESS").is_some();
    let fixtures = fixtures();
    assert!(
        fixtures.len() >= 5,
        "expected the sample, three seeds and a valid report, found {fixtures:?}"
    );
    let mut mismatches = Vec::new();
    for fixture in &fixtures {
        let bytes = std::fs::read(root().join(fixture)).unwrap();
        // A fixture that is not a whole report (one only carries a plan) keeps its error.
        let report = match servebench::report::formats::read::read_report_bytes(&bytes, fixture) {
            Ok(report) => report,
            Err(e) => {
                let text = format!("{e}\n");
                check(
                    &snapshot_name(fixture, "error.txt"),
                    &text,
                    bless,
                    &mut mismatches,
                );
                continue;
            }
        };
        let md = servebench::report::formats::markdown::render(&report);
        let json = serde_json::to_string_pretty(&report).unwrap();
        check(&snapshot_name(fixture, "md"), &md, bless, &mut mismatches);
        check(
            &snapshot_name(fixture, "json"),
            &json,
            bless,
            &mut mismatches,
        );
        let html = servebench::report::formats::html::render(&report);
        check(
            &snapshot_name(fixture, "html"),
            &html,
            bless,
            &mut mismatches,
        );
    }
    assert!(
        mismatches.is_empty(),
        "rendered reports changed (regenerate with SERVEBENCH_BLESS=1 if intended):\n{}",
        mismatches.join("\n")
    );
}
