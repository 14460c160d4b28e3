//! Plans: loading with source positions, schema validation, template expansion, semantic checks.
//!
//! Passes, in order: `load` (YAML/TOML/JSON → raw document with a position for every key path,
//! [`source`]) → `include` (shared files merged in, positions kept per file, [`include`]) →
//! `rename` (old key names read as the new ones, with a warning, [`renamed`]) → `validate`
//! (against the generated plan schema, template strings aside,
//! [`schema`]) → `expand` (vars ← `--vars` ← `--set`, matrix, `{{ }}`, defaults, rechecks,
//! [`expand`]) → `validate` again on the concrete document, with each hook's one action
//! ([`hooks`]) → typed [`Plan`] → `check`
//! (references, order, ranges, [`check`]). Each pass collects all of its errors; a pass runs
//! only when the ones before it succeeded, so no error is reported twice.

pub mod cancel;
pub mod check;
pub mod cost;
pub mod count;
pub mod decidable;
pub mod diag;
pub mod expand;
pub mod fraction;
pub mod hooks;
pub mod images;
pub mod include;
pub mod limits;
pub mod metrics_interval;
pub mod model;
pub mod model_mix;
pub mod power;
pub mod renamed;
pub mod repeat;
pub mod response_format;
pub mod schema;
pub mod score;
pub mod search;
pub mod slo;
pub mod source;
pub mod starter;
pub mod target_down;
pub mod tokenizer_spec;
pub mod tolerance;
pub mod until;
pub mod untrusted;

// Durations are shared with the simulator's settings, which plans embed.
pub use crate::duration;

pub use cancel::{Cancel, CancelAfter};
pub use cost::TargetCost;
pub use count::{ChoiceLength, LogNormalLength, NormalLength, TokenCount, UniformLength};
pub use diag::{Diagnostic, Location, PlanErrors, Warning, WarningKind};
pub use duration::HumanDuration;
pub use expand::DEFAULT_TEMPLATE_FUEL;
pub use fraction::Fraction;
pub use hooks::{
    Hook, HookAction, HookWhen, HttpHook, MARK_FAULT_OFF, MARK_FAULT_ON, OnFailure, WaitHealthy,
};
pub use images::{ImageFormat, Images};
pub use metrics_interval::{DEFAULT_METRICS_INTERVAL, MetricsInterval};
pub use model::*;
pub use model_mix::{ArchetypeMix, ModelMix};
pub use power::TargetPower;
pub use response_format::{ResponseFormat, ResponseFormatKind};
pub use score::{GeneratedSet, NumberScore, Score};
pub use search::{GoodputObjective, Probe, Search, SearchLoad};
pub use slo::{Limits, Objective, Slo};
pub use target_down::{DownAction, DownPolicy, OnTargetDown};
pub use tolerance::Tolerance;
pub use until::{StableMetric, Until};

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use expand::{ExpandInput, Expanded};
use schema::Issue;
use source::{Format, SourceMap, display_path, escape};

/// The default limit on the number of phases after expansion.
pub const DEFAULT_MAX_PHASES: usize = 1000;

/// Where overrides of the plan's `vars` come from, lowest precedence first, and other
/// command-line changes to a plan.
#[derive(Debug, Clone)]
pub struct ExpandOptions {
    /// `--vars FILE`, applied in order.
    pub vars_files: Vec<PathBuf>,
    /// `--set key=value`, values typed as YAML, applied in order after the files.
    pub set: Vec<String>,
    /// Refuse an expansion with more phases than this (0 means the default, 1000).
    pub max_phases: usize,
    /// `--target NAME=URL`: point target NAME at a server (`base_url: URL`) instead of its
    /// `simulator` or previous `base_url`.
    pub target_overrides: Vec<String>,
    /// `--template-fuel N`: template instructions allowed per value (0 means the default).
    pub template_fuel: u64,
    /// `--allow-exec`: the plan may run local programs (`exec` hooks).
    pub allow_exec: bool,
}

impl Default for ExpandOptions {
    fn default() -> Self {
        ExpandOptions {
            vars_files: Vec::new(),
            set: Vec::new(),
            max_phases: DEFAULT_MAX_PHASES,
            target_overrides: Vec::new(),
            template_fuel: expand::DEFAULT_TEMPLATE_FUEL,
            allow_exec: false,
        }
    }
}

/// A plan that loaded, validated, expanded and passed every check.
#[derive(Debug, Clone)]
pub struct LoadedPlan {
    /// The concrete plan the scheduler runs.
    pub plan: Plan,
    pub source_path: PathBuf,
    /// sha256 of the source file's bytes, hex.
    pub source_sha256: String,
    /// The variables as resolved (defaults ← files ← `--set`).
    pub vars: indexmap::IndexMap<String, Value>,
    /// What the plan should change although it loads (old key names), in source order.
    pub warnings: Vec<Warning>,
}

/// Identifies a report file, whose `plan` field holds an expanded plan.
const REPORT_SCHEMA: &str = "servebench.report/v1";

fn file_error(label: &str, message: String) -> PlanErrors {
    PlanErrors::one(Diagnostic::whole_file(label, message))
}

/// Load, validate, expand and check the plan at `path`. A report file
/// (`"schema": "servebench.report/v1"`) is read as the expanded plan it embeds.
pub fn prepare(path: &Path, options: &ExpandOptions) -> Result<LoadedPlan, PlanErrors> {
    let label = path.display().to_string();
    let bytes = std::fs::read(path)
        .map_err(|e| file_error(&label, format!("cannot read the plan: {e}")))?;
    let source_sha256 = hex::encode(Sha256::digest(&bytes));
    let text = String::from_utf8(bytes)
        .map_err(|_| file_error(&label, "the plan is not UTF-8 text".to_string()))?;
    let (doc, map) = source::load_text(&text, Format::from_path(path), &label)?;
    let (doc, map) = match report_plan(doc, &label)? {
        (plan, true) => (plan, map.rebase("/plan")),
        (doc, false) => include::resolve(doc, map, path)?,
    };
    loaded(&doc, &map, options, path.to_path_buf(), source_sha256)
}

/// [`prepare_document`], with where the plan came from.
fn loaded(
    doc: &Value,
    map: &SourceMap,
    options: &ExpandOptions,
    source_path: impl Into<PathBuf>,
    source_sha256: String,
) -> Result<LoadedPlan, PlanErrors> {
    let Prepared {
        plan,
        vars,
        warnings,
    } = prepare_document(doc, map, options)?;
    Ok(LoadedPlan {
        plan,
        source_path: source_path.into(),
        source_sha256,
        vars,
        warnings,
    })
}

/// Validate, expand and check an already-parsed document (a plan, or a report embedding
/// one). Errors name `source_label` and key paths; there is no source text to quote.
pub fn prepare_from_value(
    value: Value,
    source_label: &str,
    options: &ExpandOptions,
) -> Result<LoadedPlan, PlanErrors> {
    let source_sha256 = hex::encode(Sha256::digest(
        serde_json::to_vec(&value).unwrap_or_default(),
    ));
    let (doc, _) = report_plan(value, source_label)?;
    let map = SourceMap::without_source(source_label);
    loaded(&doc, &map, options, source_label, source_sha256)
}

/// Load and check a plan given as text (tests and embedding).
pub fn prepare_from_str(
    text: &str,
    format: Format,
    source_label: &str,
    options: &ExpandOptions,
) -> Result<LoadedPlan, PlanErrors> {
    let source_sha256 = hex::encode(Sha256::digest(text.as_bytes()));
    let (doc, map) = source::load_text(text, format, source_label)?;
    loaded(&doc, &map, options, source_label, source_sha256)
}

/// True when `doc` is a servebench report rather than a plan.
pub fn is_report(doc: &Value) -> bool {
    doc.get("schema").and_then(Value::as_str) == Some(REPORT_SCHEMA)
}

/// A report's embedded plan, or the document itself; the flag tells which.
fn report_plan(doc: Value, label: &str) -> Result<(Value, bool), PlanErrors> {
    if !is_report(&doc) {
        return Ok((doc, false));
    }
    match doc {
        Value::Object(mut m) => match m.remove("plan") {
            Some(plan) => Ok((plan, true)),
            None => Err(file_error(
                label,
                "this report has no `plan` to run".to_string(),
            )),
        },
        other => Ok((other, false)),
    }
}

fn raw_diagnostics(doc: &Value, map: &SourceMap, issues: Vec<Issue>) -> PlanErrors {
    PlanErrors {
        diagnostics: issues
            .into_iter()
            .map(|i| {
                let mut d = map.error(doc, &i.pointer, i.at_key, i.message);
                d.hint = i.hint;
                d
            })
            .collect(),
    }
}

fn expanded_diagnostics(expanded: &Expanded, map: &SourceMap, issues: Vec<Issue>) -> PlanErrors {
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    // Where several expanded phases got one bad value from the same place (`defaults`, a
    // template), say it once and list the others.
    let mut repeats: Vec<Vec<String>> = Vec::new();
    for i in issues {
        let location = map.locate(&expanded.raw_pointer(&i.pointer), i.at_key);
        let note = [
            expanded.note(&i.pointer),
            expanded.template_note(&i.pointer, &location),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
        let d = Diagnostic {
            path: display_path(&expanded.doc, &i.pointer),
            location,
            message: i.message,
            hint: i.hint,
            note: (!note.is_empty()).then(|| note.join("; ")),
        };
        let same = diagnostics.iter().position(|seen| {
            (&seen.location, &seen.message, &seen.hint, &seen.note)
                == (&d.location, &d.message, &d.hint, &d.note)
        });
        match same {
            Some(k) => repeats[k].push(d.path),
            None => {
                diagnostics.push(d);
                repeats.push(Vec::new());
            }
        }
    }
    for (d, also) in diagnostics.iter_mut().zip(repeats) {
        if !also.is_empty() {
            let also = format!("the same in {}", also.join(", "));
            d.note = Some(match d.note.take() {
                Some(note) => format!("{note}; {also}"),
                None => also,
            });
        }
    }
    PlanErrors { diagnostics }
}

/// What [`prepare_document`] makes of a document.
struct Prepared {
    plan: Plan,
    vars: indexmap::IndexMap<String, Value>,
    warnings: Vec<Warning>,
}

fn prepare_document(
    raw: &Value,
    map: &SourceMap,
    options: &ExpandOptions,
) -> Result<Prepared, PlanErrors> {
    if raw.get("include").is_some() {
        return Err(PlanErrors::one(
            map.error(
                raw,
                "/include",
                true,
                "`include` is resolved only for a plan read from a file".into(),
            )
            .with_hint("run the plan file itself, or `servebench expand` it first"),
        ));
    }
    let renamed = renamed::rename_raw(raw, map).map_err(|i| raw_diagnostics(raw, map, i))?;
    let (raw, map, warnings) = match &renamed {
        Some(r) => (&r.doc, &r.map, r.warnings.clone()),
        None => (raw, map, Vec::new()),
    };
    let grouped = expand::repeat::flatten(raw, map).map_err(|i| raw_diagnostics(raw, map, i))?;
    let (raw, map) = grouped.as_ref().map_or((raw, map), |(doc, map)| (doc, map));
    let issues = schema::validate(raw, true);
    if !issues.is_empty() {
        return Err(with_semantic_problems(raw, map, options, issues));
    }
    prepare_valid(raw, map, options, warnings)
}

/// The schema's problems, and, when the plan is sound once the values they point at are left
/// out, the semantic problems of the rest too: one `validate` shows both.
fn with_semantic_problems(
    raw: &Value,
    map: &SourceMap,
    options: &ExpandOptions,
    issues: Vec<Issue>,
) -> PlanErrors {
    let pointers: Vec<String> = issues.iter().map(|i| i.pointer.clone()).collect();
    let mut errors = raw_diagnostics(raw, map, issues);
    let mut rest = raw.clone();
    if !pointers.iter().all(|p| leave_out(&mut rest, p))
        || !schema::validate(&rest, true).is_empty()
    {
        return errors;
    }
    let Err(semantic) = prepare_valid(&rest, map, options, Vec::new()) else {
        return errors;
    };
    // What the mapping holding a bad value is told (a missing bound, a missing key) may be
    // only that value's absence: left to the next try.
    let holders: Vec<(String, usize, usize)> = pointers
        .iter()
        .filter_map(|p| p.rsplit_once('/'))
        .flat_map(|(parent, _)| [map.locate(parent, true), map.locate(parent, false)])
        .map(|l| (l.file, l.line, l.col))
        .collect();
    for d in semantic.diagnostics {
        let at = (d.location.file.clone(), d.location.line, d.location.col);
        let seen = errors
            .diagnostics
            .iter()
            .any(|e| (&e.location, &e.message) == (&d.location, &d.message));
        if !seen && !holders.contains(&at) {
            errors.diagnostics.push(d);
        }
    }
    errors
}

/// Remove the mapping entry `pointer` names from `doc`; false where that cannot leave the
/// rest where the source map places it (the root, a list item) or a value would be missing.
fn leave_out(doc: &mut Value, pointer: &str) -> bool {
    let Some((parent, key)) = pointer.rsplit_once('/') else {
        return false;
    };
    match doc.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            let key = key.replace("~1", "/").replace("~0", "~");
            map.shift_remove(&key).is_some()
        }
        _ => false,
    }
}

/// A document the schema accepts: expanded, overridden, read into a [`Plan`] and checked.
fn prepare_valid(
    raw: &Value,
    map: &SourceMap,
    options: &ExpandOptions,
    mut warnings: Vec<Warning>,
) -> Result<Prepared, PlanErrors> {
    let input = ExpandInput {
        vars_files: &options.vars_files,
        set: &options.set,
        max_phases: options.max_phases,
        template_fuel: options.template_fuel,
    };
    let mut expanded =
        expand::expand(raw, map, &input).map_err(|diagnostics| PlanErrors { diagnostics })?;
    rename_expanded(&mut expanded, map, &mut warnings)?;
    apply_target_overrides(&mut expanded.doc, &options.target_overrides)?;
    let plan = read_plan(&expanded, map)?;
    let mut errors = expanded_diagnostics(&expanded, map, check::check(&plan));
    if !options.allow_exec {
        errors
            .diagnostics
            .extend(exec_refusals(&expanded, map, &plan));
    }
    if !errors.diagnostics.is_empty() {
        return Err(errors);
    }
    let mut plan = plan;
    // Defaults now live in every phase; the concrete plan does not repeat them.
    plan.defaults = PhaseDefaults::default();
    // Found after expansion (a template may write the old spelling), once per place written.
    let old = expanded_diagnostics(&expanded, map, slo::old_spellings(&expanded.doc));
    let mut seen = std::collections::HashSet::new();
    warnings.extend(
        old.diagnostics
            .into_iter()
            .filter(|d| d.location.line == 0 || seen.insert(d.location.clone()))
            .map(|diagnostic| Warning {
                kind: WarningKind::Deprecated,
                diagnostic,
            }),
    );
    Ok(Prepared {
        plan,
        vars: expanded.vars,
        warnings,
    })
}

/// The expanded document as a typed [`Plan`], once the schema (and the one-action rule for
/// hooks) accepts it.
fn read_plan(expanded: &Expanded, map: &SourceMap) -> Result<Plan, PlanErrors> {
    let mut issues = schema::validate(&expanded.doc, false);
    if issues.is_empty() {
        // Before the typed read, where a hook holds exactly one action.
        issues = hooks::action_issues(&expanded.doc);
    }
    if !issues.is_empty() {
        return Err(expanded_diagnostics(expanded, map, issues));
    }
    serde_path_to_error::deserialize(&expanded.doc).map_err(|e| {
        let pointer = e.path().iter().fold(String::new(), |acc, seg| match seg {
            serde_path_to_error::Segment::Seq { index } => format!("{acc}/{index}"),
            serde_path_to_error::Segment::Map { key } => format!("{acc}/{}", escape(key)),
            serde_path_to_error::Segment::Enum { .. } | serde_path_to_error::Segment::Unknown => {
                acc
            }
        });
        let message = e.into_inner().to_string();
        expanded_diagnostics(expanded, map, vec![Issue::new(pointer, message)])
    })
}

/// Without `--allow-exec`, one refusal per `exec` action as written: a `defaults` hook is in
/// every phase.
fn exec_refusals(expanded: &Expanded, map: &SourceMap, plan: &Plan) -> Vec<Diagnostic> {
    let refusals = expanded_diagnostics(expanded, map, hooks::exec_refusals(plan));
    let mut seen = std::collections::HashSet::new();
    refusals
        .diagnostics
        .into_iter()
        .filter(|d| {
            let at = &d.location;
            // Without source positions, the path is all that tells two actions apart.
            let path = if at.line == 0 {
                d.path.clone()
            } else {
                String::new()
            };
            seen.insert((at.file.clone(), at.line, at.col, path))
        })
        .collect()
}

/// Old key names in targets a template wrote whole, which the raw pass could not see.
fn rename_expanded(
    expanded: &mut Expanded,
    map: &SourceMap,
    warnings: &mut Vec<Warning>,
) -> Result<(), PlanErrors> {
    let before = expanded.doc.clone();
    let (renames, clashes) = renamed::rename_target_keys(&mut expanded.doc);
    if !clashes.is_empty() {
        let issues = renamed::clash_issues(clashes);
        return Err(expanded_diagnostics(expanded, map, issues));
    }
    warnings.extend(renames.iter().map(|r| {
        let location = map.locate(&expanded.raw_pointer(&r.written), true);
        r.warning(&before, location)
    }));
    Ok(())
}

/// Apply `--target NAME=URL` overrides to an expanded document. Their problems point at the
/// command line, never at the plan's target they would replace.
fn apply_target_overrides(doc: &mut Value, overrides: &[String]) -> Result<(), PlanErrors> {
    let mut diagnostics = Vec::new();
    for arg in overrides {
        let diag = |message: String, hint: String, col: usize, len: usize| Diagnostic {
            path: String::new(),
            message,
            location: Location {
                file: "command line".into(),
                line: 1,
                col: "--target ".len() + col + 1,
                len: len.max(1),
                source_line: Some(format!("--target {arg}")),
            },
            hint: Some(hint),
            note: None,
        };
        let Some((name, url)) = arg.split_once('=') else {
            diagnostics.push(diag(
                "expected NAME=URL".into(),
                "for example --target direct=http://127.0.0.1:8000/v1".into(),
                0,
                arg.chars().count(),
            ));
            continue;
        };
        let url_ok = is_http_url(url);
        if !url_ok {
            let example = if url.contains("://") {
                "127.0.0.1:8000/v1"
            } else {
                url
            };
            diagnostics.push(diag(
                format!("--target {arg}: expected an http:// or https:// URL after `=`"),
                format!("for example --target {name}=http://{example}"),
                name.chars().count() + 1,
                url.chars().count(),
            ));
        }
        let Some(targets) = doc.get_mut("targets").and_then(Value::as_object_mut) else {
            continue;
        };
        let known: Vec<String> = targets.keys().cloned().collect();
        match targets.get_mut(name).and_then(Value::as_object_mut) {
            Some(target) if url_ok => override_target(target, url),
            Some(_) => {}
            None => {
                let hint = diag::did_you_mean(name, known.iter().map(String::as_str))
                    .unwrap_or_else(|| format!("targets are `{}`", known.join("`, `")));
                let message = format!("no target named `{name}`");
                diagnostics.push(diag(message, hint, 0, name.chars().count()));
            }
        }
    }
    if diagnostics.is_empty() {
        Ok(())
    } else {
        Err(PlanErrors { diagnostics })
    }
}

/// Point a plan target at the server at `url` instead of its simulator.
fn override_target(target: &mut serde_json::Map<String, Value>, url: &str) {
    // A simulator's metrics are always scraped; scrape the server's the same way
    // (`{root}/metrics`, what vLLM, SGLang and llama.cpp serve) unless set.
    if target.remove("simulator").is_some() && !target.contains_key("metrics") {
        target.insert("metrics".into(), Value::String(metrics_url_for(url)));
    }
    target.insert("base_url".into(), Value::String(url.to_string()));
}

/// `http://…` or `https://…` with something after the scheme.
fn is_http_url(url: &str) -> bool {
    ["http://", "https://"].iter().any(|scheme| {
        url.strip_prefix(scheme)
            .is_some_and(|rest| !rest.is_empty())
    })
}

/// `http://host:port/metrics` for a base URL `http://host:port/v1`.
fn metrics_url_for(base_url: &str) -> String {
    let root = base_url.trim_end_matches('/');
    let root = root.strip_suffix("/v1").unwrap_or(root);
    format!("{root}/metrics")
}

/// The concrete plan as a JSON document (what `expand` prints and a report embeds).
pub fn to_document(plan: &Plan) -> Value {
    serde_json::to_value(plan).unwrap_or(Value::Null)
}
