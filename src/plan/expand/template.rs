//! `{{ }}` templates: rendering a value with a variable context, and the names a value uses.

use std::collections::HashSet;
use std::io::Write;

use minijinja::{Environment, ErrorKind, UndefinedBehavior};
use serde_json::{Map, Value};

use crate::plan::diag::did_you_mean;
use crate::plan::schema::Issue;
use crate::plan::source::escape;

/// Template instructions one value may execute unless `--template-fuel` says otherwise; a
/// plan's templates use hundreds, so only a runaway loop reaches it.
pub const DEFAULT_TEMPLATE_FUEL: u64 = 1_000_000;
/// The largest text one templated value may render to.
pub const MAX_TEMPLATE_OUTPUT: usize = 1 << 20;
/// How deeply templates may nest (loops, calls, macros).
pub const TEMPLATE_RECURSION_LIMIT: usize = 64;

/// Renders plan templates strictly: an undefined name is an error, never an empty string.
/// Work is bounded: fuel per value, output size per value, recursion depth.
pub(super) struct Templater {
    env: Environment<'static>,
    fuel: u64,
}

impl Templater {
    /// `fuel` is the instruction budget per value; 0 means [`DEFAULT_TEMPLATE_FUEL`].
    pub(super) fn new(fuel: u64) -> Templater {
        let fuel = if fuel == 0 {
            DEFAULT_TEMPLATE_FUEL
        } else {
            fuel
        };
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_recursion_limit(TEMPLATE_RECURSION_LIMIT);
        env.set_fuel(Some(fuel));
        Templater { env, fuel }
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
                    e.eval(&context).map(|v| Ok(to_json(&v))).and_then(|v| {
                        // An expression builds its value in memory; check its size after.
                        match &v {
                            Ok(json) if json_size(json) > MAX_TEMPLATE_OUTPUT => {
                                Err(minijinja::Error::new(ErrorKind::WriteFailure, OUTPUT_LIMIT))
                            }
                            _ => Ok(v),
                        }
                    })
                } else {
                    Ok(Err(missing))
                }
            }),
            None => self.env.template_from_str(s).and_then(|t| {
                let missing = missing_names(t.undeclared_variables(false), ctx);
                if missing.is_empty() {
                    let mut out = Capped::default();
                    t.render_captured_to(&context, &mut out).map(|_| {
                        Ok(Value::String(
                            String::from_utf8_lossy(&out.buf).into_owned(),
                        ))
                    })
                } else {
                    Ok(Err(missing))
                }
            }),
        };
        match result {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(missing)) => Err(undefined_issue(&missing, ctx, s)),
            Err(e) => Err(self.error_issue(&e, s)),
        }
    }

    /// A render error in plain words: fuel, output size, recursion, or the engine's own.
    fn error_issue(&self, e: &minijinja::Error, s: &str) -> Issue {
        if e.kind() == ErrorKind::OutOfFuel {
            return Issue::new(
                "",
                format!(
                    "template {} ran past the limit of {} template instructions per value",
                    excerpt(s),
                    self.fuel
                ),
            )
            .hint(Some(
                "make the loops smaller, or raise the limit with --template-fuel N".to_string(),
            ));
        }
        if is_output_limit(e) {
            return Issue::new(
                "",
                format!(
                    "template {} renders to more than {} bytes, the limit per value",
                    excerpt(s),
                    MAX_TEMPLATE_OUTPUT
                ),
            );
        }
        if e.detail().is_some_and(|d| d.contains("recursion limit")) {
            return Issue::new(
                "",
                format!(
                    "template {} nests deeper than {TEMPLATE_RECURSION_LIMIT} levels, the recursion limit",
                    excerpt(s)
                ),
            );
        }
        let detail = e.detail().map(|d| format!(": {d}")).unwrap_or_default();
        Issue::new("", format!("template error in {s:?}: {}{detail}", e.kind()))
    }
}

/// Variables a template uses and nothing defines.
fn undefined_issue(missing: &[String], ctx: &Map<String, Value>, s: &str) -> Issue {
    let known: Vec<&str> = ctx.keys().map(String::as_str).collect();
    let name = &missing[0];
    let hint = did_you_mean(name, known.iter().copied()).unwrap_or_else(|| {
        "declare it under `vars:` (or bind it with `matrix:`), or pass --set NAME=VALUE".to_string()
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
    Issue::new("", format!("undefined {noun} {names} in template {s:?}")).hint(Some(hint))
}

fn missing_names(names: HashSet<String>, ctx: &Map<String, Value>) -> Vec<String> {
    let mut missing: Vec<String> = names.into_iter().filter(|n| !ctx.contains_key(n)).collect();
    missing.sort();
    missing
}

fn to_json(v: &minijinja::Value) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

const OUTPUT_LIMIT: &str = "template output limit reached";

/// A render target that refuses to grow past [`MAX_TEMPLATE_OUTPUT`].
#[derive(Default)]
struct Capped {
    buf: Vec<u8>,
}

impl Write for Capped {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + data.len() > MAX_TEMPLATE_OUTPUT {
            return Err(std::io::Error::other(OUTPUT_LIMIT));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn is_output_limit(e: &minijinja::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err.to_string().contains(OUTPUT_LIMIT) {
            return true;
        }
        source = err.source();
    }
    e.kind() == ErrorKind::WriteFailure
}

/// Rough serialized size of a value, to cap what an expression may build.
fn json_size(v: &Value) -> usize {
    serde_json::to_string(v)
        .map(|s| s.len())
        .unwrap_or(usize::MAX)
}

/// The template text for a message, shortened when long.
fn excerpt(s: &str) -> String {
    const MAX: usize = 80;
    if s.chars().count() <= MAX {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(MAX).collect();
        format!("{head:?}…")
    }
}
