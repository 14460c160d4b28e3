//! The `expand` pass: variables, `--set`, `{{ }}` templates, `matrix` sweeps, defaults and
//! recheck entries, turning a raw document into a concrete one.

use std::collections::{HashMap, HashSet};

use indexmap::IndexMap;
use minijinja::{Environment, UndefinedBehavior};
use serde_json::{Map, Value};

use super::diag::{Diagnostic, Location, did_you_mean};
use super::schema::{Issue, allowed_keys, describe_value};
use super::source::{Format, SourceMap, escape, load_text};

/// Phase fields a recheck copies from its original and must not contradict.
pub const RECHECK_SETTINGS: [&str; 10] = [
    "target",
    "route",
    "workload",
    "concurrency",
    "rate",
    "duration",
    "requests",
    "warmup",
    "cooldown",
    "drain_timeout",
];

/// Where an expanded phase came from, so later errors point at the raw source.
#[derive(Debug, Clone, Default)]
pub struct PhaseOrigin {
    /// Index of the raw phase it was expanded from.
    pub raw_index: usize,
    /// The matrix values of this combination, in matrix order.
    pub matrix: Vec<(String, Value)>,
    /// For fields not written in the phase itself: the raw pointer they came from.
    pub sources: HashMap<String, String>,
}

/// The concrete document and how it relates to the raw one.
#[derive(Debug, Clone)]
pub struct Expanded {
    pub doc: Value,
    pub vars: IndexMap<String, Value>,
    pub origins: Vec<PhaseOrigin>,
}

impl Expanded {
    /// The raw pointer an expanded pointer came from.
    pub fn raw_pointer(&self, pointer: &str) -> String {
        let segs = super::source::segments(pointer);
        let [first, index, rest @ ..] = segs.as_slice() else {
            return pointer.to_string();
        };
        let Some(origin) = (first == "phases")
            .then(|| index.parse::<usize>().ok())
            .flatten()
            .and_then(|i| self.origins.get(i))
        else {
            return pointer.to_string();
        };
        let Some((field, tail)) = rest.split_first() else {
            return format!("/phases/{}", origin.raw_index);
        };
        let base = origin
            .sources
            .get(field)
            .cloned()
            .unwrap_or_else(|| format!("/phases/{}/{}", origin.raw_index, escape(field)));
        tail.iter()
            .fold(base, |acc, seg| format!("{acc}/{}", escape(seg)))
    }

    /// A note naming the matrix combination an expanded phase came from, if any.
    pub fn note(&self, pointer: &str) -> Option<String> {
        let segs = super::source::segments(pointer);
        let index = match segs.as_slice() {
            [first, index, ..] if first == "phases" => index.parse::<usize>().ok()?,
            _ => return None,
        };
        let origin = self.origins.get(index)?;
        if origin.matrix.is_empty() {
            return None;
        }
        let name = self.doc["phases"][index]["name"].as_str().unwrap_or("?");
        let combo = origin
            .matrix
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        Some(format!(
            "in phase `{name}`, expanded from the matrix of phases[{}] with {combo}",
            origin.raw_index
        ))
    }
}

/// Inputs of the expansion besides the document.
pub struct ExpandInput<'a> {
    pub vars_files: &'a [std::path::PathBuf],
    pub set: &'a [String],
    pub max_phases: usize,
}

struct Templater {
    env: Environment<'static>,
}

impl Templater {
    fn new() -> Templater {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_recursion_limit(64);
        Templater { env }
    }

    /// Render every template string inside `value`; issues carry raw pointers.
    fn render(
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
    fn names_used(&self, value: &Value) -> HashSet<String> {
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

/// Resolve variables: `vars` defaults ← `--vars` files ← `--set`.
fn resolve_vars(
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
    let unknown_hint = |name: &str| {
        did_you_mean(name, declared.iter().map(String::as_str)).or_else(|| {
            Some("only variables declared under the plan's `vars:` can be set".to_string())
        })
    };
    for file in input.vars_files {
        let label = file.display().to_string();
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                errors.push(Diagnostic {
                    path: String::new(),
                    message: format!("cannot read vars file: {e}"),
                    location: Location {
                        file: label,
                        line: 1,
                        col: 1,
                        len: 1,
                        source_line: None,
                    },
                    hint: None,
                    note: None,
                });
                continue;
            }
        };
        let (doc, map) = match load_text(&text, Format::from_path(file), &label) {
            Ok(x) => x,
            Err(e) => {
                errors.extend(e.diagnostics);
                continue;
            }
        };
        let Some(obj) = doc.as_object() else {
            errors.push(map.error(
                &doc,
                "",
                false,
                "a vars file must be a mapping of NAME: VALUE".into(),
            ));
            continue;
        };
        for (k, v) in obj {
            if vars.contains_key(k) {
                vars.insert(k.clone(), v.clone());
            } else {
                let pointer = format!("/{}", escape(k));
                let mut d = map.error(&doc, &pointer, true, format!("unknown variable `{k}`"));
                d.hint = unknown_hint(k);
                errors.push(d);
            }
        }
    }
    for arg in input.set {
        let Some((name, text)) = arg.split_once('=') else {
            errors.push(arg_error(
                arg,
                0,
                arg.chars().count(),
                "expected NAME=VALUE".into(),
                Some("for example --set concurrency=8".into()),
            ));
            continue;
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
            continue;
        }
        if !vars.contains_key(name) {
            errors.push(arg_error(
                arg,
                0,
                name.chars().count(),
                format!("unknown variable `{name}`"),
                unknown_hint(name),
            ));
            continue;
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
                    continue;
                }
            }
        };
        vars.insert(name.to_string(), value);
    }
    vars
}

/// Expand a raw document (already schema-checked, templates aside).
pub fn expand(
    raw: &Value,
    map: &SourceMap,
    input: &ExpandInput<'_>,
) -> Result<Expanded, Vec<Diagnostic>> {
    let mut arg_errors = Vec::new();
    let vars = resolve_vars(raw, input, &mut arg_errors);
    if !arg_errors.is_empty() {
        return Err(arg_errors);
    }
    let templater = Templater::new();
    let mut issues: Vec<Issue> = Vec::new();
    // A variable may be built from the ones declared before it.
    let mut ctx: Map<String, Value> = Map::new();
    let mut vars = vars;
    for (k, v) in vars.iter_mut() {
        *v = templater.render(v, &ctx, &format!("/vars/{}", escape(k)), &mut issues);
        ctx.insert(k.clone(), v.clone());
    }
    let Some(root) = raw.as_object() else {
        return Err(vec![map.error(
            raw,
            "",
            false,
            "a plan must be a mapping".into(),
        )]);
    };

    let mut out = Map::new();
    for (key, value) in root {
        match key.as_str() {
            "vars" => {
                out.insert(key.clone(), Value::Object(ctx.clone()));
            }
            "phases" | "defaults" => {}
            _ => {
                let v = templater.render(value, &ctx, &format!("/{}", escape(key)), &mut issues);
                out.insert(key.clone(), v);
            }
        }
    }
    let defaults = root
        .get("defaults")
        .map(|d| templater.render(d, &ctx, "/defaults", &mut issues))
        .unwrap_or(Value::Object(Map::new()));
    let defaults = defaults.as_object().cloned().unwrap_or_default();

    let phase_fields = allowed_keys("Phase");
    let empty = Vec::new();
    let raw_phases = root
        .get("phases")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let mut phases: Vec<Value> = Vec::new();
    let mut origins: Vec<PhaseOrigin> = Vec::new();
    let mut total: usize = 0;
    let max_phases = if input.max_phases == 0 {
        super::DEFAULT_MAX_PHASES
    } else {
        input.max_phases
    };

    for (i, raw_phase) in raw_phases.iter().enumerate() {
        let pointer = format!("/phases/{i}");
        let Some(obj) = raw_phase.as_object() else {
            continue;
        };
        let is_recheck = obj.contains_key("recheck");
        let mut body = obj.clone();
        let matrix_raw = body.remove("matrix");
        let combos = match &matrix_raw {
            None => vec![Vec::new()],
            Some(m) => {
                let m = templater.render(m, &ctx, &format!("{pointer}/matrix"), &mut issues);
                match matrix_combinations(&m, &pointer, is_recheck, &mut issues) {
                    Some(axes) => {
                        let count = axes
                            .iter()
                            .try_fold(1usize, |acc, (_, vals)| acc.checked_mul(vals.len()));
                        match count.and_then(|c| total.checked_add(c)) {
                            Some(t) if t <= max_phases => cartesian(&axes),
                            _ => {
                                let n = count.map_or("too many".to_string(), |c| c.to_string());
                                issues.push(
                                    Issue::new(
                                        format!("{pointer}/matrix"),
                                        format!(
                                            "this matrix expands to {n} phases, which takes the plan past the limit of {max_phases} phases"
                                        ),
                                    )
                                    .at_key()
                                    .hint(Some("shrink the matrix, or raise the limit with --max-phases".into())),
                                );
                                break;
                            }
                        }
                    }
                    None => continue,
                }
            }
        };
        if matrix_raw.is_none() && total + 1 > max_phases {
            issues.push(
                Issue::new(
                    pointer.clone(),
                    format!("the plan has more than {max_phases} phases"),
                )
                .hint(Some("raise the limit with --max-phases".into())),
            );
            break;
        }
        total += combos.len();
        // A matrix key that names a phase field sets it; the phase must not set it too.
        if let Some(first) = combos.first() {
            let used = templater.names_used(&Value::Object(body.clone()));
            for (k, _, _) in first {
                let is_field = phase_fields.iter().any(|f| f == k);
                if !is_field && !used.contains(k) {
                    // Most likely a misspelt phase field, which would otherwise vanish.
                    let hint = did_you_mean(k, phase_fields.iter().map(String::as_str)).or_else(|| {
                        Some("a matrix key sets the phase field of that name or feeds a `{{ }}` template".into())
                    });
                    issues.push(
                        Issue::new(
                            format!("{pointer}/matrix/{}", escape(k)),
                            format!("matrix key `{k}` is not a phase field and no template in the phase uses it"),
                        )
                        .at_key()
                        .hint(hint),
                    );
                }
                if body.contains_key(k) && is_field {
                    issues.push(
                        Issue::new(
                            format!("{pointer}/{}", escape(k)),
                            format!("`{k}` is set both here and by this phase's matrix"),
                        )
                        .at_key()
                        .hint(Some("remove one of them".into())),
                    );
                }
            }
        }
        let before = issues.len();
        for combo in combos {
            let mut local = ctx.clone();
            let mut origin = PhaseOrigin {
                raw_index: i,
                ..PhaseOrigin::default()
            };
            for (k, _, v) in &combo {
                local.insert(k.clone(), v.clone());
                origin.matrix.push((k.clone(), v.clone()));
            }
            let rendered =
                templater.render(&Value::Object(body.clone()), &local, &pointer, &mut issues);
            let mut phase = rendered.as_object().cloned().unwrap_or_default();
            for (k, idx, v) in &combo {
                if phase_fields.iter().any(|f| f == k) && !phase.contains_key(k) {
                    phase.insert(k.clone(), v.clone());
                    origin
                        .sources
                        .insert(k.clone(), format!("{pointer}/matrix/{}/{idx}", escape(k)));
                }
            }
            for (k, v) in &defaults {
                let applies = if k == "tolerance" {
                    is_recheck
                } else {
                    !is_recheck
                };
                if applies && !phase.contains_key(k) {
                    phase.insert(k.clone(), v.clone());
                    origin
                        .sources
                        .insert(k.clone(), format!("/defaults/{}", escape(k)));
                }
            }
            phases.push(Value::Object(phase));
            origins.push(origin);
        }
        dedup_from(&mut issues, before);
    }

    fill_rechecks(&mut phases, &mut origins, &mut issues);

    out.insert("phases".into(), Value::Array(phases));
    let doc = Value::Object(out);
    if issues.is_empty() {
        Ok(Expanded { doc, vars, origins })
    } else {
        Err(issues
            .into_iter()
            .map(|issue| {
                let mut d = map.error(raw, &issue.pointer, issue.at_key, issue.message);
                d.hint = issue.hint;
                d
            })
            .collect())
    }
}

fn dedup_from(issues: &mut Vec<Issue>, from: usize) {
    let mut seen = HashSet::new();
    let mut i = from;
    while i < issues.len() {
        let key = (issues[i].pointer.clone(), issues[i].message.clone());
        if seen.insert(key) {
            i += 1;
        } else {
            issues.remove(i);
        }
    }
}

type Axis = (String, Vec<Value>);

fn matrix_combinations(
    m: &Value,
    pointer: &str,
    is_recheck: bool,
    issues: &mut Vec<Issue>,
) -> Option<Vec<Axis>> {
    let mpointer = format!("{pointer}/matrix");
    if is_recheck {
        issues.push(
            Issue::new(mpointer, "a recheck entry cannot have a matrix")
                .at_key()
                .hint(Some("recheck each expanded phase by its name".into())),
        );
        return None;
    }
    let Some(obj) = m.as_object() else {
        issues.push(Issue::new(
            mpointer,
            format!(
                "expected a mapping of NAME: [values], found {}",
                describe_value(m)
            ),
        ));
        return None;
    };
    if obj.is_empty() {
        issues.push(
            Issue::new(mpointer, "the matrix is empty")
                .hint(Some("remove `matrix:` or give it a key".into())),
        );
        return None;
    }
    let mut axes = Vec::new();
    let mut ok = true;
    for (k, v) in obj {
        let kp = format!("{mpointer}/{}", escape(k));
        match v.as_array() {
            Some(vals) if !vals.is_empty() => axes.push((k.clone(), vals.clone())),
            Some(_) => {
                ok = false;
                issues.push(Issue::new(
                    kp,
                    format!("matrix key `{k}` has no values, so the phase would vanish"),
                ));
            }
            None => {
                ok = false;
                issues.push(Issue::new(
                    kp,
                    format!("expected a list of values, found {}", describe_value(v)),
                ));
            }
        }
    }
    ok.then_some(axes)
}

/// Every combination, first key outermost; each entry is (key, index in its list, value).
fn cartesian(axes: &[Axis]) -> Vec<Vec<(String, usize, Value)>> {
    let mut combos: Vec<Vec<(String, usize, Value)>> = vec![Vec::new()];
    for (key, values) in axes {
        let mut next = Vec::with_capacity(combos.len() * values.len());
        for combo in &combos {
            for (idx, v) in values.iter().enumerate() {
                let mut c = combo.clone();
                c.push((key.clone(), idx, v.clone()));
                next.push(c);
            }
        }
        combos = next;
    }
    combos
}

/// Give each recheck entry its original's settings; a setting it states must match.
fn fill_rechecks(phases: &mut [Value], origins: &mut [PhaseOrigin], issues: &mut Vec<Issue>) {
    for i in 0..phases.len() {
        let Some(target) = phases[i]
            .get("recheck")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            continue;
        };
        let raw_pointer = format!("/phases/{}", origins[i].raw_index);
        if let Some(phase) = phases[i].as_object_mut()
            && !phase.contains_key("name")
        {
            phase.insert("name".into(), Value::String(format!("recheck-{target}")));
            origins[i]
                .sources
                .insert("name".into(), format!("{raw_pointer}/recheck"));
        }
        let found = phases[..i]
            .iter()
            .position(|p| p.get("name").and_then(Value::as_str) == Some(target.as_str()));
        let Some(j) = found else {
            // Dangling or forward references are reported by the check pass.
            continue;
        };
        let original = phases[j].clone();
        let original_origin = origins[j].clone();
        let Some(phase) = phases[i].as_object_mut() else {
            continue;
        };
        for field in RECHECK_SETTINGS {
            let theirs = original.get(field);
            match (phase.get(field), theirs) {
                (Some(mine), Some(theirs)) if mine == theirs => {}
                (Some(mine), theirs) => {
                    let theirs_text =
                        theirs.map_or_else(|| "not set".to_string(), |t| t.to_string());
                    issues.push(
                        Issue::new(
                            format!("{raw_pointer}/{field}"),
                            format!(
                                "`{field}` is {mine} here but {theirs_text} in `{target}`; a recheck repeats its original's settings exactly"
                            ),
                        )
                        .hint(Some(format!("remove `{field}` from the recheck, or make it a new phase"))),
                    );
                }
                (None, Some(theirs)) => {
                    phase.insert(field.to_string(), theirs.clone());
                    let source = original_origin
                        .sources
                        .get(field)
                        .cloned()
                        .unwrap_or_else(|| {
                            format!("/phases/{}/{field}", original_origin.raw_index)
                        });
                    origins[i].sources.insert(field.to_string(), source);
                }
                (None, None) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::source::Format;
    use crate::plan::{ExpandOptions, LoadedPlan, PlanErrors, prepare_from_str};

    const HEAD: &str = "version: 1\nname: t\ntargets:\n  a: {simulator: {}}\n  b: {simulator: {}}\nworkloads:\n  w: {input_tokens: 64}\n";
    const DEFAULTS: &str = "defaults: {target: a, workload: w, duration: 1s}\n";

    fn load(body: &str, options: &ExpandOptions) -> Result<LoadedPlan, PlanErrors> {
        let defaults = if body.contains("defaults:") {
            ""
        } else {
            DEFAULTS
        };
        prepare_from_str(
            &format!("{HEAD}{defaults}{body}"),
            Format::Yaml,
            "t.yaml",
            options,
        )
    }

    fn names(plan: &LoadedPlan) -> Vec<String> {
        plan.plan
            .phases
            .iter()
            .map(|p| p.name.clone().unwrap_or_default())
            .collect()
    }

    #[test]
    fn a_whole_expression_keeps_its_type() {
        let body = "vars: {c: 4, r: 2.5, tag: x}\nphases:\n  - {name: \"p{{ c }}\", concurrency: \"{{ c * 2 }}\", tags: [\"{{ tag }}\"]}\n  - {name: open, rate: {rps: \"{{ r }}\"}, requests: \"{{ c }}\"}\n";
        let plan = load(body, &ExpandOptions::default()).unwrap();
        assert_eq!(plan.plan.phases[0].name.as_deref(), Some("p4"));
        assert_eq!(plan.plan.phases[0].concurrency, Some(8));
        assert_eq!(plan.plan.phases[0].tags, vec!["x".to_string()]);
        assert_eq!(plan.plan.phases[1].rate.as_ref().map(|r| r.rps), Some(2.5));
        assert_eq!(plan.plan.phases[1].requests, Some(4));
    }

    #[test]
    fn matrix_is_a_cartesian_product_in_order() {
        let body = "phases:\n  - name: \"{{ target }}-c{{ concurrency }}-{{ size }}\"\n    matrix: {target: [a, b], concurrency: [1, 2], size: [s]}\n";
        let plan = load(body, &ExpandOptions::default()).unwrap();
        assert_eq!(names(&plan), ["a-c1-s", "a-c2-s", "b-c1-s", "b-c2-s"]);
        assert_eq!(plan.plan.phases[2].target.as_deref(), Some("b"));
        assert_eq!(plan.plan.phases[3].concurrency, Some(2));
        // `size` is no phase field: it only binds a template variable.
        assert!(plan.plan.phases.iter().all(|p| p.matrix.is_none()));
    }

    #[test]
    fn set_beats_vars_files_beats_defaults() {
        let body = "vars: {c: 1, d: 1s}\nphases:\n  - {name: p, concurrency: \"{{ c }}\", duration: \"{{ d }}\"}\n";
        assert_eq!(
            load(body, &ExpandOptions::default()).unwrap().plan.phases[0].concurrency,
            Some(1)
        );

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("vars.yaml");
        std::fs::write(&file, "c: 2\nd: 3s\n").unwrap();
        let from_file = ExpandOptions {
            vars_files: vec![file.clone()],
            ..ExpandOptions::default()
        };
        let plan = load(body, &from_file).unwrap();
        assert_eq!(plan.plan.phases[0].concurrency, Some(2));
        assert_eq!(
            plan.plan.phases[0].duration.map(|d| d.as_secs_f64()),
            Some(3.0)
        );

        let with_set = ExpandOptions {
            vars_files: vec![file],
            set: vec!["c=3".into(), "c=5".into()],
            ..ExpandOptions::default()
        };
        let plan = load(body, &with_set).unwrap();
        assert_eq!(
            plan.plan.phases[0].concurrency,
            Some(5),
            "the last --set wins"
        );
        assert_eq!(
            plan.vars["c"],
            serde_json::json!(5),
            "--set values are typed as YAML"
        );
        assert_eq!(plan.vars["d"], serde_json::json!("3s"));
    }

    #[test]
    fn an_undefined_variable_is_named_with_its_location() {
        let body = "vars: {conc: 1}\nphases:\n  - name: p\n    concurrency: \"{{ con }}\"\n";
        let err = load(body, &ExpandOptions::default()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("phases[0].concurrency: undefined variable `con`"),
            "{text}"
        );
        assert!(text.contains("--> t.yaml:12:18"), "{text}");
        assert!(text.contains("did you mean `conc`?"), "{text}");
    }

    #[test]
    fn a_variable_may_use_earlier_ones() {
        let body = "vars: {c: 4, label: \"run-c{{ c }}\", twice: \"{{ c * 2 }}\"}\nphases:\n  - {name: \"{{ label }}\", concurrency: \"{{ twice }}\"}\n";
        let with_set = ExpandOptions {
            set: vec!["c=3".into()],
            ..ExpandOptions::default()
        };
        let plan = load(body, &with_set).unwrap();
        assert_eq!(names(&plan), ["run-c3"]);
        assert_eq!(plan.plan.phases[0].concurrency, Some(6));
        assert_eq!(plan.vars["twice"], serde_json::json!(6));
    }

    #[test]
    fn the_guard_refuses_large_expansions() {
        let body =
            "phases:\n  - name: \"c{{ concurrency }}\"\n    matrix: {concurrency: [1, 2, 3, 4]}\n";
        let small = ExpandOptions {
            max_phases: 3,
            ..ExpandOptions::default()
        };
        let text = load(body, &small).unwrap_err().to_string();
        assert!(text.contains("expands to 4 phases"), "{text}");
        assert!(text.contains("limit of 3 phases"), "{text}");
        let enough = ExpandOptions {
            max_phases: 4,
            ..ExpandOptions::default()
        };
        assert_eq!(load(body, &enough).unwrap().plan.phases.len(), 4);
    }

    #[test]
    fn a_recheck_is_filled_from_its_original() {
        let body = "defaults: {target: a, workload: w, duration: 1s, tolerance: {default: 0.3}}\nphases:\n  - {name: p, target: b, concurrency: 3, warmup: {requests: 2}}\n  - {recheck: p}\n";
        let plan = load(body, &ExpandOptions::default()).unwrap();
        let (p, r) = (&plan.plan.phases[0], &plan.plan.phases[1]);
        assert_eq!(r.name.as_deref(), Some("recheck-p"));
        assert_eq!(r.recheck.as_deref(), Some("p"));
        assert_eq!(
            (&r.target, r.concurrency, &r.warmup, r.duration),
            (&p.target, p.concurrency, &p.warmup, p.duration)
        );
        assert_eq!(r.tolerance.as_ref().and_then(|t| t.default), Some(0.3));
        assert!(
            p.tolerance.is_none(),
            "tolerance defaults apply to rechecks only"
        );
    }
}
