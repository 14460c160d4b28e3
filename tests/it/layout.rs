//! The crate's layout, read from its sources: each module imports only those before it in
//! the flow that `src/lib.rs` declares; each role folder of the report imports only the
//! folders before it, and no file inside a folder imports one that imports it back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each folder and the folders it may import.
const ALLOWED: [(&str, &[&str]); 5] = [
    ("model", &[]),
    ("assemble", &["model"]),
    ("render", &["model"]),
    ("formats", &["model", "assemble", "render"]),
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

/// The flow `src/lib.rs` declares in its doc comment: its steps in order, each step's modules.
fn declared_flow() -> Vec<Vec<String>> {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let doc: Vec<&str> = lib
        .lines()
        .map_while(|l| l.strip_prefix("//!"))
        .map(str::trim)
        .collect();
    // The paragraph of arrows.
    let flow = doc
        .split(|l| l.is_empty())
        .find(|p| p.iter().any(|l| l.contains('→')))
        .expect("src/lib.rs states its flow with arrows")
        .join(" ");
    flow.split('→')
        .map(|step| {
            names_after(step, "[`")
                .into_iter()
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// The crate's modules, as `src/lib.rs` declares them.
fn declared_modules() -> BTreeSet<String> {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect()
}

/// The other top modules each top module's code (before its tests) names as `crate::…`.
fn top_imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap();
            let top = rel.iter().next().unwrap().to_string_lossy();
            let top = top.trim_end_matches(".rs").to_string();
            if path.extension().is_none_or(|e| e != "rs") || top == "lib" || top == "main" {
                continue;
            }
            let text = code(&path);
            let used = imports.entry(top.clone()).or_default();
            used.extend(
                names_after(&text, "crate::")
                    .into_iter()
                    .filter(|m| *m != top && !m.is_empty())
                    .map(str::to_string),
            );
        }
    }
    imports
}

/// Every import of a module from its own step or a later one, or of a module the flow lacks.
fn against_the_flow(
    flow: &[Vec<String>],
    imports: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let step = |m: &str| flow.iter().position(|s| s.iter().any(|n| n == m));
    let mut wrong = Vec::new();
    for (module, used) in imports {
        let Some(at) = step(module) else {
            wrong.push(format!("{module} is in no step of the flow"));
            continue;
        };
        for other in used {
            match step(other) {
                Some(theirs) if theirs < at => {}
                Some(_) => wrong.push(format!(
                    "{module} imports crate::{other}, which is not before it in the flow"
                )),
                None => wrong.push(format!("{module} imports crate::{other}, in no step")),
            }
        }
    }
    wrong
}

#[test]
fn every_module_imports_only_the_modules_before_it_in_the_flow_lib_rs_declares() {
    let flow = declared_flow();
    let in_flow: BTreeSet<String> = flow.iter().flatten().cloned().collect();
    assert_eq!(
        in_flow,
        declared_modules(),
        "the flow names every module of src/lib.rs once"
    );
    assert_eq!(flow.iter().flatten().count(), in_flow.len(), "each once");
    let wrong = against_the_flow(&flow, &top_imports());
    assert!(
        wrong.is_empty(),
        "imports against src/lib.rs's flow:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_flow_check_refuses_an_import_from_a_later_step_or_the_same_one() {
    let flow = declared_flow();
    let mut imports = top_imports();
    let (first, last) = (&flow[0][0], &flow[flow.len() - 1][0]);
    imports.get_mut(first).unwrap().insert(last.clone());
    let peers = flow.iter().find(|s| s.len() > 1).expect("a step of peers");
    imports.get_mut(&peers[0]).unwrap().insert(peers[1].clone());
    let wrong = against_the_flow(&flow, &imports);
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(
        wrong[0].contains(&format!("crate::{last}"))
            || wrong[1].contains(&format!("crate::{last}"))
    );
    assert!(
        wrong
            .iter()
            .any(|w| w.contains(&format!("{} imports crate::{}", peers[0], peers[1])))
    );
}

/// The results history reads the report model, not the run's machinery: besides the flow of
/// `src/lib.rs` (which keeps it from the runner, the shards and the command line, and every
/// module before it from the history), nothing under it reaches the modules that send
/// requests, even though they come before it.
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
            for forbidden in ["scheduler", "schedule", "client", "sim"] {
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
                    "compare",
                    "read_report",
                    "Report",
                    "write_atomic"
                ]
                .contains(p)),
                "{} reads report::{report_parts:?}; the history reads the report model (its chart and page parts, and compare for the baseline gate)",
                path.display()
            );
        }
    }
}
