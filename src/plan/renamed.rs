//! The `rename` pass: old key names a plan may still use, each read as its new name with a
//! deprecation warning at the key.
//!
//! It runs on the raw document before the schema sees it (so the schemas know only the new
//! names), and again on the expanded document for targets a template wrote whole. A report's
//! embedded plan reads old names through serde aliases on the same fields.

use serde_json::{Map, Value};

use super::diag::{Diagnostic, Warning, WarningKind};
use super::schema::Issue;
use super::source::{SourceMap, display_path, escape};

/// A key of every target that has a new name.
struct NewName {
    old: &'static str,
    new: &'static str,
}

/// Target keys renamed so a plan and its report say the same thing, one key per setting.
const TARGET_KEYS: [NewName; 2] = [
    // The report's connection facts say `unix_socket`.
    NewName {
        old: "socket",
        new: "unix_socket",
    },
    // One key for metrics: a URL, or a list of endpoints.
    NewName {
        old: "metrics_url",
        new: "metrics",
    },
];

/// Each renamed target key, old name first.
pub fn target_renames() -> impl Iterator<Item = (&'static str, &'static str)> {
    TARGET_KEYS.iter().map(|k| (k.old, k.new))
}

/// One old key found: where it was written, where it is read now, and the names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rename {
    pub written: String,
    pub renamed: String,
    pub old: &'static str,
    pub new: &'static str,
}

/// A target that sets a setting under both names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    /// The old key's pointer.
    pub written: String,
    pub old: &'static str,
    pub new: &'static str,
}

/// Rename every old target key of `doc` in place; a target holding both names keeps both
/// (and is a clash).
pub fn rename_target_keys(doc: &mut Value) -> (Vec<Rename>, Vec<Clash>) {
    let (mut renames, mut clashes) = (Vec::new(), Vec::new());
    let Some(targets) = doc.get_mut("targets").and_then(Value::as_object_mut) else {
        return (renames, clashes);
    };
    for (name, target) in targets.iter_mut() {
        let Some(target) = target.as_object_mut() else {
            continue;
        };
        let at = format!("/targets/{}", escape(name));
        for key in &TARGET_KEYS {
            if !target.contains_key(key.old) {
                continue;
            }
            let written = format!("{at}/{}", key.old);
            if target.contains_key(key.new) {
                clashes.push(Clash {
                    written,
                    old: key.old,
                    new: key.new,
                });
                continue;
            }
            rename_key(target, key.old, key.new);
            renames.push(Rename {
                written,
                renamed: format!("{at}/{}", key.new),
                old: key.old,
                new: key.new,
            });
        }
    }
    (renames, clashes)
}

/// `old` renamed to `new` where it stands, so the mapping keeps the order it was written in.
fn rename_key(map: &mut Map<String, Value>, old: &str, new: &str) {
    let entries = std::mem::take(map);
    *map = entries
        .into_iter()
        .map(|(k, v)| {
            if k == old {
                (new.to_string(), v)
            } else {
                (k, v)
            }
        })
        .collect();
}

impl Rename {
    /// The deprecation warning, placed by `locate` (given the pointer as written).
    pub fn warning(&self, doc: &Value, location: super::diag::Location) -> Warning {
        Warning {
            kind: WarningKind::Deprecated,
            diagnostic: Diagnostic {
                path: display_path(doc, &self.written),
                message: format!(
                    "`{}` is deprecated; write `{}` (the old name still works)",
                    self.old, self.new
                ),
                location,
                hint: None,
                note: None,
            },
        }
    }
}

/// Every clash as an error at its old key.
pub fn clash_issues(clashes: Vec<Clash>) -> Vec<Issue> {
    clashes
        .into_iter()
        .map(|c| {
            let message = format!(
                "`{}` is the old name of `{}`, and this target sets both",
                c.old, c.new
            );
            Issue::new(c.written, message)
                .at_key()
                .hint(Some(format!("keep `{}` only", c.new)))
        })
        .collect()
}

/// A raw document with its old key names renamed.
#[derive(Debug)]
pub struct Renamed {
    pub doc: Value,
    /// Still places every renamed key where it was written.
    pub map: SourceMap,
    pub warnings: Vec<Warning>,
}

/// The raw pass: `None` when the plan uses no old name.
pub fn rename_raw(doc: &Value, map: &SourceMap) -> Result<Option<Renamed>, Vec<Issue>> {
    let mut renamed = doc.clone();
    let (renames, clashes) = rename_target_keys(&mut renamed);
    if !clashes.is_empty() {
        return Err(clash_issues(clashes));
    }
    if renames.is_empty() {
        return Ok(None);
    }
    let mut map = map.clone();
    let warnings = renames
        .iter()
        .map(|r| r.warning(doc, map.locate(&r.written, true)))
        .collect();
    for r in renames {
        map.rename(r.written, r.renamed);
    }
    Ok(Some(Renamed {
        doc: renamed,
        map,
        warnings,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::source::{Format, load_text};

    const PLAN: &str = "\
targets:
  a:
    base_url: http://localhost/v1
    socket: engine.sock
    metrics_url: http://localhost/metrics
    model: m
";

    #[test]
    fn old_keys_are_renamed_in_place_and_warned_about_where_written() {
        let (doc, map) = load_text(PLAN, Format::Yaml, "p.yaml").unwrap();
        let Renamed {
            doc: renamed,
            map,
            warnings,
        } = rename_raw(&doc, &map).unwrap().expect("renamed");
        let keys: Vec<&String> = renamed["targets"]["a"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, ["base_url", "unix_socket", "metrics", "model"]);
        let places: Vec<(usize, usize)> = warnings
            .iter()
            .map(|w| (w.diagnostic.location.line, w.diagnostic.location.col))
            .collect();
        assert_eq!(places, [(4, 5), (5, 5)]);
        assert_eq!(warnings[0].diagnostic.path, "targets.a.socket");
        assert!(
            warnings[0]
                .diagnostic
                .message
                .contains("write `unix_socket`"),
            "{}",
            warnings[0]
        );
        // An error about the renamed key points at the line it was written on.
        assert_eq!(map.locate("/targets/a/unix_socket", false).line, 4);
        assert_eq!(map.locate("/targets/a/metrics", false).line, 5);
    }

    #[test]
    fn both_names_in_one_target_are_refused() {
        let text = "targets:\n  a:\n    metrics: http://h/metrics\n    metrics_url: http://h/m\n";
        let (doc, map) = load_text(text, Format::Yaml, "p.yaml").unwrap();
        let issues = rename_raw(&doc, &map).unwrap_err();
        assert_eq!(issues[0].pointer, "/targets/a/metrics_url");
        assert!(issues[0].at_key);
        assert!(issues[0].message.contains("sets both"), "{:?}", issues[0]);
    }

    #[test]
    fn a_plan_with_new_names_only_is_left_alone() {
        let text = "targets:\n  a:\n    unix_socket: s\n    metrics: http://h/metrics\n";
        let (doc, map) = load_text(text, Format::Yaml, "p.yaml").unwrap();
        assert!(rename_raw(&doc, &map).unwrap().is_none());
    }
}
