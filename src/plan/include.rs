//! The `include` pass: shared plan files merged into a plan before validation.
//!
//! `include: [a.yaml, b.toml]` pulls `vars`, `targets`, `workloads` and `defaults` from other
//! files (paths relative to the including file; YAML, TOML or JSON). Entries merge key by
//! key: a later file overrides an earlier one, the plan overrides them all. A phase entry
//! `{include: file}` is replaced by the phases that file lists (a list, or a mapping with
//! `phases`). Included files may include others; a cycle or a missing file is an error that
//! names the chain. The source map records where each merged value was written, so every
//! later diagnostic points at that file and line.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::diag::{Diagnostic, PlanErrors};
use super::source::{Format, SourceMap, escape, load_text};

/// The sections an included file may hold, merged by key.
pub const SECTIONS: [&str; 4] = ["vars", "targets", "workloads", "defaults"];

/// A file on the include chain: its path as the user would write it, and as resolved.
#[derive(Debug, Clone)]
struct Link {
    label: String,
    canonical: PathBuf,
}

/// Merge the files `doc` includes into it. A document without `include` is returned as is.
pub fn resolve(doc: Value, map: SourceMap, path: &Path) -> Result<(Value, SourceMap), PlanErrors> {
    let chain = vec![Link {
        label: map.label.clone(),
        canonical: path.canonicalize().unwrap_or_else(|_| path.to_path_buf()),
    }];
    resolve_in(doc, map, path, &chain)
}

fn chain_text(chain: &[Link], last: &str) -> String {
    let mut names: Vec<&str> = chain.iter().map(|l| l.label.as_str()).collect();
    names.push(last);
    names.join(" → ")
}

fn error_at(map: &SourceMap, doc: &Value, pointer: &str, message: String) -> Diagnostic {
    map.error(doc, pointer, false, message)
}

/// The paths an `include` value names, each with its pointer.
fn include_list(
    doc: &Value,
    map: &SourceMap,
    value: &Value,
    at: &str,
) -> Result<Vec<(String, String)>, PlanErrors> {
    let expected = || {
        PlanErrors::one(
            error_at(
                map,
                doc,
                at,
                "`include` expects a file path or a list of file paths".into(),
            )
            .with_hint("include: [common/targets.yaml, common/workloads.yaml]"),
        )
    };
    match value {
        Value::String(s) => Ok(vec![(s.clone(), at.to_string())]),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => Ok((s.clone(), format!("{at}/{i}"))),
                _ => Err(expected()),
            })
            .collect(),
        _ => Err(expected()),
    }
}

/// Load one included file (and what it includes), refusing cycles.
fn load_included(
    including: &Path,
    doc: &Value,
    map: &SourceMap,
    pointer: &str,
    relative: &str,
    chain: &[Link],
) -> Result<(Value, SourceMap, PathBuf), PlanErrors> {
    let path = including
        .parent()
        .unwrap_or_else(|| Path::new(""))
        .join(relative);
    let label = path.display().to_string();
    let canonical = path.canonicalize().map_err(|e| {
        PlanErrors::one(
            error_at(map, doc, pointer, format!("cannot read `{relative}`: {e}"))
                .with_note(format!("include chain: {}", chain_text(chain, &label))),
        )
    })?;
    if chain.iter().any(|l| l.canonical == canonical) {
        return Err(PlanErrors::one(
            error_at(map, doc, pointer, format!("`{relative}` includes itself"))
                .with_note(format!("include cycle: {}", chain_text(chain, &label))),
        ));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| {
        PlanErrors::one(
            error_at(map, doc, pointer, format!("cannot read `{relative}`: {e}"))
                .with_note(format!("include chain: {}", chain_text(chain, &label))),
        )
    })?;
    let (idoc, imap) = load_text(&text, Format::from_path(&path), &label)?;
    let mut next = chain.to_vec();
    next.push(Link { label, canonical });
    let (idoc, imap) = resolve_in(idoc, imap, &path, &next)?;
    Ok((idoc, imap, path))
}

fn resolve_in(
    mut doc: Value,
    mut map: SourceMap,
    path: &Path,
    chain: &[Link],
) -> Result<(Value, SourceMap), PlanErrors> {
    let Some(obj) = doc.as_object() else {
        return Ok((doc, map));
    };
    let includes = match obj.get("include") {
        Some(v) => include_list(&doc, &map, v, "/include")?,
        None => Vec::new(),
    };
    let own = map.clone();
    let mut merged: Map<String, Value> = Map::new();
    for (relative, pointer) in &includes {
        let (idoc, imap, _) = load_included(path, &doc, &map, pointer, relative, chain)?;
        merge_sections(&idoc, &imap, &mut merged, &mut map)?;
    }
    let Some(obj) = doc.as_object_mut() else {
        return Ok((doc, map));
    };
    obj.remove("include");
    // The plan's own entries override included ones, key by key.
    for (key, mut section) in merged {
        if let Some(Value::Object(mine)) = obj.get(&key) {
            for (name, v) in mine {
                map.clear_overlay(&format!("/{}/{}", escape(&key), escape(name)));
                if let Some(m) = section.as_object_mut() {
                    m.insert(name.clone(), v.clone());
                }
            }
        }
        obj.insert(key, section);
    }
    splice_phases(&mut doc, &mut map, &own, path, chain)?;
    Ok((doc, map))
}

/// Merge one included file's sections into `merged`, its positions into `map`.
fn merge_sections(
    idoc: &Value,
    imap: &SourceMap,
    merged: &mut Map<String, Value>,
    map: &mut SourceMap,
) -> Result<(), PlanErrors> {
    let Some(iobj) = idoc.as_object() else {
        return Err(PlanErrors::one(
            imap.error(idoc, "", false, "an included file must be a mapping".into())
                .with_hint(format!("it may hold {}", SECTIONS.join(", "))),
        ));
    };
    let mut problems = Vec::new();
    for (key, value) in iobj {
        let section_pointer = format!("/{}", escape(key));
        let Some(entries) = SECTIONS
            .contains(&key.as_str())
            .then(|| value.as_object())
            .flatten()
        else {
            let message = if SECTIONS.contains(&key.as_str()) {
                format!("`{key}` in an included file must be a mapping")
            } else {
                format!("an included file may not set `{key}`")
            };
            problems.push(
                imap.error(idoc, &section_pointer, true, message)
                    .with_hint(format!("it may hold {}", SECTIONS.join(", "))),
            );
            continue;
        };
        let section = merged
            .entry(key.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        for (name, v) in entries {
            let entry = format!("{section_pointer}/{}", escape(name));
            if let Some(m) = section.as_object_mut() {
                m.insert(name.clone(), v.clone());
            }
            map.overlay(entry.clone(), entry, imap.clone());
        }
    }
    if !problems.is_empty() {
        return Err(PlanErrors {
            diagnostics: problems,
        });
    }
    Ok(())
}

/// Replace each `{include: file}` entry of `phases` by the phases that file lists.
fn splice_phases(
    doc: &mut Value,
    map: &mut SourceMap,
    own: &SourceMap,
    path: &Path,
    chain: &[Link],
) -> Result<(), PlanErrors> {
    let Some(phases) = doc.get("phases").and_then(Value::as_array) else {
        return Ok(());
    };
    if !phases.iter().any(|p| p.get("include").is_some()) {
        return Ok(());
    }
    let mut out = Vec::new();
    for (i, phase) in phases.iter().enumerate() {
        let pointer = format!("/phases/{i}");
        let Some(include) = phase.get("include") else {
            if out.len() != i {
                map.overlay(format!("/phases/{}", out.len()), pointer, own.clone());
            }
            out.push(phase.clone());
            continue;
        };
        if phase.as_object().is_some_and(|m| m.len() > 1) {
            return Err(PlanErrors::one(
                error_at(
                    own,
                    doc,
                    &pointer,
                    "a phase entry with `include` holds nothing else".into(),
                )
                .with_hint("- include: common/phases.yaml"),
            ));
        }
        let Value::String(relative) = include else {
            return Err(PlanErrors::one(error_at(
                own,
                doc,
                &format!("{pointer}/include"),
                "`include` expects a file path".into(),
            )));
        };
        let (idoc, imap, _) = load_included(
            path,
            doc,
            own,
            &format!("{pointer}/include"),
            relative,
            chain,
        )?;
        let (list, base) = phases_of(&idoc, &imap)?;
        for (j, p) in list.into_iter().enumerate() {
            map.overlay(
                format!("/phases/{}", out.len()),
                format!("{base}/{j}"),
                imap.clone(),
            );
            out.push(p);
        }
    }
    if let Some(obj) = doc.as_object_mut() {
        obj.insert("phases".into(), Value::Array(out));
    }
    Ok(())
}

/// The phases an included phases file lists (a list, or `phases: [...]` alone), and the
/// pointer prefix they sit under in that file.
fn phases_of(idoc: &Value, imap: &SourceMap) -> Result<(Vec<Value>, String), PlanErrors> {
    let (list, base) = match idoc {
        Value::Array(items) => (items.clone(), String::new()),
        Value::Object(m) => match m.get("phases") {
            Some(Value::Array(items)) if m.len() == 1 => (items.clone(), "/phases".into()),
            _ => {
                return Err(PlanErrors::one(
                    imap.error(
                        idoc,
                        "",
                        false,
                        "a phases file holds a list of phases".into(),
                    )
                    .with_hint("write the phases as a list, or as `phases: [...]` alone"),
                ));
            }
        },
        _ => {
            return Err(PlanErrors::one(imap.error(
                idoc,
                "",
                false,
                "a phases file holds a list of phases".into(),
            )));
        }
    };
    Ok((list, base))
}
