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

/// The results history sits above `report::model` and below `commands`: nothing under it
/// reaches the runner, the scheduler or the command line, and nothing below it (the run's
/// own modules) reaches into it.
#[test]
fn the_history_is_called_from_commands_and_reads_only_what_is_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let history = src.join("history");
    for path in &files {
        let text = code(path);
        let used = names_after(&text, "crate::");
        if path.starts_with(&history) {
            for forbidden in [
                "commands",
                "runner",
                "scheduler",
                "schedule",
                "shard",
                "client",
                "sim",
            ] {
                assert!(
                    !used.contains(forbidden),
                    "{} imports crate::{forbidden}",
                    path.display()
                );
            }
            let report_parts = names_after(&text, "crate::report::");
            assert!(
                report_parts.iter().all(|p| [
                    "model",
                    "render",
                    "formats",
                    "Report",
                    "write_atomic"
                ]
                .contains(p)),
                "{} reads report::{report_parts:?}; the history reads the report model (and its chart and page parts)",
                path.display()
            );
        } else if !path.starts_with(src.join("commands")) && !path.ends_with("lib.rs") {
            assert!(
                !used.contains("history"),
                "{} imports crate::history",
                path.display()
            );
        }
    }
}
