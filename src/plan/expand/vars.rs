//! Plan variables: `vars` defaults, then `--vars` files, then `--set`, then their templates.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::ExpandInput;
use super::template::Templater;
use crate::plan::diag::{Diagnostic, Location, did_you_mean};
use crate::plan::schema::Issue;
use crate::plan::source::{Format, escape, load_text};

/// Resolve variables: `vars` defaults ← `--vars` files ← `--set`.
pub(super) fn resolve_vars(
    raw: &Value,
    input: &ExpandInput<'_>,
    errors: &mut Vec<Diagnostic>,
) -> IndexMap<String, Value> {
    let mut vars: IndexMap<String, Value> = raw
        .get("vars")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let declared: Vec<String> = vars.keys().cloned().collect();
    for file in input.vars_files {
        apply_vars_file(file, &declared, &mut vars, errors);
    }
    for arg in input.set {
        apply_set(arg, &declared, &mut vars, errors);
    }
    vars
}

/// Render each variable's templates in order: a variable may be built from the ones declared
/// before it. Returns the variables and the template context they make.
pub(super) fn render_vars(
    mut vars: IndexMap<String, Value>,
    templater: &Templater,
    issues: &mut Vec<Issue>,
) -> (IndexMap<String, Value>, Map<String, Value>) {
    let mut ctx: Map<String, Value> = Map::new();
    for (k, v) in vars.iter_mut() {
        *v = templater.render(v, &ctx, &format!("/vars/{}", escape(k)), issues);
        ctx.insert(k.clone(), v.clone());
    }
    (vars, ctx)
}

fn unknown_hint(name: &str, declared: &[String]) -> Option<String> {
    did_you_mean(name, declared.iter().map(String::as_str))
        .or_else(|| Some("only variables declared under the plan's `vars:` can be set".to_string()))
}

/// One `--vars` file: every key must be a declared variable.
fn apply_vars_file(
    file: &std::path::Path,
    declared: &[String],
    vars: &mut IndexMap<String, Value>,
    errors: &mut Vec<Diagnostic>,
) {
    let label = file.display().to_string();
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            errors.push(Diagnostic::whole_file(
                label,
                format!("cannot read vars file: {e}"),
            ));
            return;
        }
    };
    let (doc, map) = match load_text(&text, Format::from_path(file), &label) {
        Ok(x) => x,
        Err(e) => {
            errors.extend(e.diagnostics);
            return;
        }
    };
    let Some(obj) = doc.as_object() else {
        errors.push(map.error(
            &doc,
            "",
            false,
            "a vars file must be a mapping of NAME: VALUE".into(),
        ));
        return;
    };
    for (k, v) in obj {
        if vars.contains_key(k) {
            vars.insert(k.clone(), v.clone());
        } else {
            let pointer = format!("/{}", escape(k));
            let mut d = map.error(&doc, &pointer, true, format!("unknown variable `{k}`"));
            d.hint = unknown_hint(k, declared);
            errors.push(d);
        }
    }
}

/// One `--set NAME=VALUE`; the value is typed as YAML.
fn apply_set(
    arg: &str,
    declared: &[String],
    vars: &mut IndexMap<String, Value>,
    errors: &mut Vec<Diagnostic>,
) {
    let Some((name, text)) = arg.split_once('=') else {
        errors.push(arg_error(
            arg,
            0,
            arg.chars().count(),
            "expected NAME=VALUE".into(),
            Some("for example --set concurrency=8".into()),
        ));
        return;
    };
    let name = name.trim();
    if name.is_empty() {
        errors.push(arg_error(
            arg,
            0,
            1,
            "missing variable name before `=`".into(),
            None,
        ));
        return;
    }
    if !vars.contains_key(name) {
        errors.push(arg_error(
            arg,
            0,
            name.chars().count(),
            format!("unknown variable `{name}`"),
            unknown_hint(name, declared),
        ));
        return;
    }
    let value = if text.trim().is_empty() {
        Value::String(String::new())
    } else {
        match load_text(text, Format::Yaml, "--set") {
            Ok((v, _)) => v,
            Err(e) => {
                let msg = e
                    .diagnostics
                    .first()
                    .map_or_else(|| "invalid value".to_string(), |d| d.message.clone());
                let col = name.chars().count() + 1;
                errors.push(arg_error(arg, col, text.chars().count(), msg, None));
                return;
            }
        }
    };
    vars.insert(name.to_string(), value);
}

/// Location of part of a `--set` argument, shown as the command line.
fn arg_location(arg: &str, col: usize, len: usize) -> Location {
    Location {
        file: "command line".into(),
        line: 1,
        col: "--set ".len() + col + 1,
        len,
        source_line: Some(format!("--set {arg}")),
    }
}

fn arg_error(
    arg: &str,
    col: usize,
    len: usize,
    message: String,
    hint: Option<String>,
) -> Diagnostic {
    Diagnostic {
        path: String::new(),
        message,
        location: arg_location(arg, col, len),
        hint,
        note: None,
    }
}
