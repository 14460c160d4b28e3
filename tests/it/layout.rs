//! The report module's layout, read from its sources: each role folder imports only the
//! folders before it, and no file inside a folder imports one that imports it back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each folder and the folders it may import.
const ALLOWED: [(&str, &[&str]); 5] = [
    ("model", &[]),
    ("build", &["model"]),
    ("render", &["model"]),
    ("formats", &["model", "build", "render"]),
    ("compare", &["model", "render"]),
];

/// A file's code before its test module, comments left out.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let lines = code.lines().filter(|l| !l.trim_start().starts_with("//"));
    lines.collect::<Vec<_>>().join("\n")
}

/// The identifiers that follow `prefix` in `text`.
fn names_after<'a>(text: &'a str, prefix: &str) -> BTreeSet<&'a str> {
    text.match_indices(prefix)
        .map(|(at, _)| {
            let rest = &text[at + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

#[test]
fn report_folders_import_only_the_roles_before_them_and_have_no_loops() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/report");
    for (folder, allowed) in ALLOWED {
        let dir = root.join(folder);
        let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = code(&path);
            for used in names_after(&text, "crate::report::") {
                let role = ALLOWED.iter().any(|(f, _)| *f == used);
                assert!(
                    !role || used == folder || allowed.contains(&used),
                    "{} imports report::{used}; {folder} may import only {allowed:?}",
                    path.display()
                );
            }
            let file = path.file_stem().unwrap().to_string_lossy().into_owned();
            let siblings = names_after(&text, "super::")
                .into_iter()
                .filter(|s| dir.join(format!("{s}.rs")).exists() && *s != file)
                .map(str::to_string)
                .collect();
            imports.insert(file, siblings);
        }
        assert!(imports.len() > 1, "{folder} has its files");
        // A loop shows as a file reachable from itself.
        for start in imports.keys() {
            let mut seen = BTreeSet::new();
            let mut todo: Vec<&String> = imports[start].iter().collect();
            while let Some(next) = todo.pop() {
                assert_ne!(next, start, "an import loop through {folder}/{start}.rs");
                if seen.insert(next) {
                    todo.extend(imports.get(next).into_iter().flatten());
                }
            }
        }
    }
}

/// Every `.rs` file under `dir`, subfolders included.
fn sources(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// What the history may use: the report's model (and the name of the per-request file the
/// store references), and the pure `figure` and `metrics` modules.
const HISTORY_USES: [&str; 3] = ["history", "figure", "metrics"];

#[test]
fn the_history_reads_the_report_model_and_only_commands_call_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let history = sources(&src.join("history"));
    assert!(history.len() > 5, "the history has its files");
    for path in &history {
        let text = code(path);
        for used in names_after(&text, "crate::") {
            if used == "report" {
                continue;
            }
            assert!(
                HISTORY_USES.contains(&used),
                "{} uses crate::{used}; the history may use only report::model, {HISTORY_USES:?}",
                path.display()
            );
        }
        for (at, _) in text.match_indices("crate::report::") {
            let rest = &text[at + "crate::report::".len()..];
            assert!(
                rest.starts_with("model") || rest.starts_with("formats::records::REQUESTS_FILE"),
                "{} reaches report::{}; the history reads only report::model",
                path.display(),
                rest.split([';', '\n'])
                    .next()
                    .unwrap_or_default()
            );
        }
    }
    // Above it only the commands: no runner, no report, nothing below calls the history.
    for path in sources(&src) {
        let relative = path.strip_prefix(&src).unwrap();
        let top = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        if ["history", "commands", "lib.rs"].contains(&top.as_ref()) {
            continue;
        }
        let text = code(&path);
        assert!(
            !text.contains("crate::history") && !text.contains("servebench::history"),
            "{} calls the history; only commands may",
            path.display()
        );
    }
}
