//! `{{ }}` templates: rendering a value with a variable context, and the names a value uses.

use std::collections::HashSet;

use minijinja::{Environment, UndefinedBehavior};
use serde_json::{Map, Value};

use crate::plan::diag::did_you_mean;
use crate::plan::schema::Issue;
use crate::plan::source::escape;

/// Renders plan templates strictly: an undefined name is an error, never an empty string.
pub(super) struct Templater {
    env: Environment<'static>,
}

impl Templater {
    pub(super) fn new() -> Templater {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_recursion_limit(64);
        Templater { env }
    }

    /// Render every template string inside `value`; issues carry raw pointers.
    pub(super) fn render(
        &self,
        value: &Value,
        ctx: &Map<String, Value>,
        pointer: &str,
        issues: &mut Vec<Issue>,
    ) -> Value {
        match value {
            Value::String(s) if s.contains("{{") || s.contains("{%") => {
                match self.render_str(s, ctx) {
                    Ok(v) => v,
                    Err(issue) => {
                        issues.push(Issue {
                            pointer: pointer.to_string(),
                            ..issue
                        });
                        value.clone()
                    }
                }
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| self.render(v, ctx, &format!("{pointer}/{i}"), issues))
                    .collect(),
            ),
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            self.render(v, ctx, &format!("{pointer}/{}", escape(k)), issues),
                        )
                    })
                    .collect(),
            ),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => value.clone(),
        }
    }

    /// The variable names the templates inside `value` refer to.
    pub(super) fn names_used(&self, value: &Value) -> HashSet<String> {
        let mut names = HashSet::new();
        let mut stack = vec![value];
        while let Some(v) = stack.pop() {
            match v {
                Value::String(s) if s.contains("{{") || s.contains("{%") => {
                    if let Ok(t) = self.env.template_from_str(s) {
                        names.extend(t.undeclared_variables(false));
                    }
                }
                Value::Array(items) => stack.extend(items),
                Value::Object(m) => stack.extend(m.values()),
                Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
            }
        }
        names
    }

    fn render_str(&self, s: &str, ctx: &Map<String, Value>) -> Result<Value, Issue> {
        let trimmed = s.trim();
        let whole = trimmed
            .strip_prefix("{{")
            .and_then(|t| t.strip_suffix("}}"))
            .filter(|inner| {
                !inner.contains("{{") && !inner.contains("}}") && !inner.contains("{%")
            });
        let context = minijinja::Value::from_serialize(ctx);
        let result = match whole {
            Some(expr) => self.env.compile_expression(expr).and_then(|e| {
                let missing = missing_names(e.undeclared_variables(false), ctx);
                if missing.is_empty() {
                    e.eval(&context).map(|v| Ok(to_json(&v)))
                } else {
                    Ok(Err(missing))
                }
            }),
            None => self.env.template_from_str(s).and_then(|t| {
                let missing = missing_names(t.undeclared_variables(false), ctx);
                if missing.is_empty() {
                    t.render(&context).map(|r| Ok(Value::String(r)))
                } else {
                    Ok(Err(missing))
                }
            }),
        };
        match result {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(missing)) => {
                let known: Vec<&str> = ctx.keys().map(String::as_str).collect();
                let name = &missing[0];
                let hint = did_you_mean(name, known.iter().copied()).unwrap_or_else(|| {
                    "declare it under `vars:` (or bind it with `matrix:`), or pass --set NAME=VALUE"
                        .to_string()
                });
                let names = missing
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let noun = if missing.len() == 1 {
                    "variable"
                } else {
                    "variables"
                };
                Err(
                    Issue::new("", format!("undefined {noun} {names} in template {s:?}"))
                        .hint(Some(hint)),
                )
            }
            Err(e) => {
                let detail = e.detail().map(|d| format!(": {d}")).unwrap_or_default();
                Err(Issue::new(
                    "",
                    format!("template error in {s:?}: {}{detail}", e.kind()),
                ))
            }
        }
    }
}

fn missing_names(names: HashSet<String>, ctx: &Map<String, Value>) -> Vec<String> {
    let mut missing: Vec<String> = names.into_iter().filter(|n| !ctx.contains_key(n)).collect();
    missing.sort();
    missing
}

fn to_json(v: &minijinja::Value) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}
