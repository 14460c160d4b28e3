//! The `expand` pass: variables, `--set`, `{{ }}` templates, `matrix` sweeps, defaults and
//! recheck entries, turning a raw document into a concrete one.
//!
//! In order: `vars` resolves and renders the variables; the top-level keys and `defaults`
//! are rendered; `phases` turns each raw phase into one phase per `matrix` combination
//! with defaults filled in; `rechecks` gives each recheck its original's settings.

mod matrix;
mod phases;
mod rechecks;
pub mod repeat;
mod template;
mod vars;

use std::collections::{HashMap, HashSet};

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::diag::Diagnostic;
use super::schema::{Issue, allowed_keys};
use super::source::{SourceMap, escape};
use phases::PhasePass;
use template::Templater;

pub use rechecks::RECHECK_SETTINGS;
pub use template::{DEFAULT_TEMPLATE_FUEL, MAX_TEMPLATE_OUTPUT, TEMPLATE_RECURSION_LIMIT};

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
    /// The `--set` arguments, to say where a variable's value came from.
    pub set: Vec<String>,
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

    /// A note naming the variables a template at `location` used, with their values and
    /// where each was set: a bad value given with `--set` is reported at the plan's template
    /// that used it, so the note names the command line.
    pub fn template_note(&self, pointer: &str, location: &super::diag::Location) -> Option<String> {
        // A phase's matrix values shadow the variables; its own note names them.
        let matrix = self
            .origin(pointer)
            .map(|o| o.matrix.as_slice())
            .unwrap_or_default();
        let line = location.source_line.as_deref()?;
        let text: String = line
            .chars()
            .skip(location.col.saturating_sub(1))
            .take(location.len)
            .collect();
        let mut names: Vec<&str> = Vec::new();
        for (start, _) in text.match_indices("{{") {
            let rest = &text[start + 2..];
            let expression = rest.split("}}").next().unwrap_or_default().trim_start();
            let name_len = expression
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(expression.len());
            let name = &expression[..name_len];
            let shadowed = matrix.iter().any(|(key, _)| key == name);
            if self.vars.contains_key(name) && !shadowed && !names.contains(&name) {
                names.push(name);
            }
        }
        let said: Vec<String> = names
            .iter()
            .map(|name| {
                let origin = self
                    .set
                    .iter()
                    .rev()
                    .find(|arg| arg.split_once('=').is_some_and(|(k, _)| k.trim() == *name))
                    .map_or("the plan's `vars`".to_string(), |arg| {
                        format!("`--set {arg}`")
                    });
                format!("`{name}` is {} (from {origin})", self.vars[*name])
            })
            .collect();
        (!said.is_empty()).then(|| said.join("; "))
    }

    /// The origin of the expanded phase `pointer` lies in, if it lies in one.
    fn origin(&self, pointer: &str) -> Option<&PhaseOrigin> {
        let segs = super::source::segments(pointer);
        match segs.as_slice() {
            [first, index, ..] if first == "phases" => {
                self.origins.get(index.parse::<usize>().ok()?)
            }
            _ => None,
        }
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
    /// Template instructions allowed per value (0 means the default).
    pub template_fuel: u64,
}

/// Expand a raw document (already schema-checked, templates aside).
pub fn expand(
    raw: &Value,
    map: &SourceMap,
    input: &ExpandInput<'_>,
) -> Result<Expanded, Vec<Diagnostic>> {
    let mut arg_errors = Vec::new();
    let vars = vars::resolve_vars(raw, input, &mut arg_errors);
    if !arg_errors.is_empty() {
        return Err(arg_errors);
    }
    let templater = Templater::new(input.template_fuel);
    let mut issues: Vec<Issue> = Vec::new();
    let (vars, ctx) = vars::render_vars(vars, &templater, &mut issues);
    let Some(root) = raw.as_object() else {
        return Err(vec![map.error(
            raw,
            "",
            false,
            "a plan must be a mapping".into(),
        )]);
    };

    let mut out = render_top_level(root, &ctx, &templater, &mut issues);
    let defaults = root
        .get("defaults")
        .map(|d| templater.render(d, &ctx, "/defaults", &mut issues))
        .unwrap_or(Value::Object(Map::new()));
    let defaults = defaults.as_object().cloned().unwrap_or_default();
    let pass = PhasePass {
        templater: &templater,
        ctx: &ctx,
        defaults: &defaults,
        phase_fields: allowed_keys("Phase"),
        max_phases: if input.max_phases == 0 {
            super::DEFAULT_MAX_PHASES
        } else {
            input.max_phases
        },
    };
    let raw_phases = root.get("phases").and_then(Value::as_array);
    let (mut phases, mut origins) = pass.expand(raw_phases.map_or(&[], Vec::as_slice), &mut issues);
    rechecks::fill_rechecks(&mut phases, &mut origins, &mut issues);

    out.insert("phases".into(), Value::Array(phases));
    let doc = Value::Object(out);
    if issues.is_empty() {
        Ok(Expanded {
            doc,
            vars,
            origins,
            set: input.set.to_vec(),
        })
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

/// Every top-level key but `phases` and `defaults`, rendered; `vars` as resolved.
fn render_top_level(
    root: &Map<String, Value>,
    ctx: &Map<String, Value>,
    templater: &Templater,
    issues: &mut Vec<Issue>,
) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in root {
        match key.as_str() {
            "vars" => {
                out.insert(key.clone(), Value::Object(ctx.clone()));
            }
            "phases" | "defaults" => {}
            _ => {
                let v = templater.render(value, ctx, &format!("/{}", escape(key)), issues);
                out.insert(key.clone(), v);
            }
        }
    }
    out
}

/// Drop repeated issues (same pointer and message) added since `from`.
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
