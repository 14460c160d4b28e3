//! Replays the committed fuzz corpora (tests/fuzz/corpus/<target>/) through the fuzz entry
//! points, so `cargo test` catches regressions without cargo-fuzz.

#[path = "../fuzz/entries.rs"]
mod entries;

use std::path::Path;

fn replay(target: &str, entry: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .collect();
    files.sort();
    assert!(
        files.len() >= 5,
        "corpus {} has only {} files",
        dir.display(),
        files.len()
    );
    for file in files {
        let bytes = std::fs::read(&file).expect("read corpus file");
        // A panic names the file: catch it to say which input regressed.
        let outcome = std::panic::catch_unwind(|| entry(&bytes));
        assert!(outcome.is_ok(), "fuzz input {} panicked", file.display());
    }
}

#[test]
fn sse_corpus_replays() {
    replay("sse", entries::sse);
}

#[test]
fn plan_corpus_replays() {
    replay("plan", entries::plan);
}

#[test]
fn report_corpus_replays() {
    replay("report", entries::report);
}
