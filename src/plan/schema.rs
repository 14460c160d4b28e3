//! The `validate` pass: JSON schemas generated from the types, and schema errors in plain words.

use std::sync::OnceLock;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{JsonType, ValidationError, Validator};
use serde_json::Value;

use super::diag::did_you_mean;
use super::duration::DURATION_PATTERN;
use super::model::Plan;
use super::source::{escape, segments};

/// A problem at a JSON pointer of a document, before it is given a source location.
#[derive(Debug, Clone, PartialEq)]
pub struct Issue {
    pub pointer: String,
    /// Point at the key rather than its value.
    pub at_key: bool,
    pub message: String,
    pub hint: Option<String>,
}

impl Issue {
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Issue {
        Issue {
            pointer: pointer.into(),
            at_key: false,
            message: message.into(),
            hint: None,
        }
    }

    pub fn at_key(mut self) -> Issue {
        self.at_key = true;
        self
    }

    pub fn hint(mut self, hint: Option<String>) -> Issue {
        self.hint = hint;
        self
    }
}

/// The expanded plan schema (draft 2020-12), `schemas/plan.expanded.schema.json`: strict,
/// every value concrete. It describes the plan a report embeds, and `validate` checks plans
/// against it (templates aside before expansion, everything after).
pub fn expanded_schema() -> Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<Plan>();
    let mut value = serde_json::to_value(schema).unwrap_or(Value::Null);
    tighten(&mut value);
    if let Some(obj) = value.as_object_mut() {
        obj.insert("title".into(), Value::from("Expanded plan"));
        obj.insert(
            "description".into(),
            Value::from(
                "A concrete benchmark plan, as `servebench expand` prints it and a report \
                 embeds it: no `vars`, `matrix`, `defaults` or `{{ }}` templates left.",
            ),
        );
    }
    value
}

/// The authoring plan schema, `schemas/plan.schema.json`, the one plan files name in their
/// first line: the expanded schema where every typed value may also be a `{{ … }}` template.
pub fn plan_schema() -> Value {
    let mut value = expanded_schema();
    if let Some(obj) = value.as_object_mut() {
        obj.insert("title".into(), Value::from("Plan"));
        obj.insert(
            "description".into(),
            Value::from(
                "A benchmark plan: targets, workloads and an ordered list of phases. Any typed \
                 value may be a `{{ … }}` template, expanded before the plan runs.",
            ),
        );
    }
    inherit_descriptions(&mut value);
    accept_templates(&mut value);
    // After the templates pass: groups are expanded before templates, so their settings are
    // literal.
    if let Some(defs) = value.get_mut("$defs").and_then(Value::as_object_mut) {
        defs.insert(
            "PhaseRepeat".into(),
            super::expand::repeat::schema_definition(),
        );
    }
    add_includes(&mut value);
    if let Some(defs) = value.get_mut("$defs").and_then(Value::as_object_mut) {
        defs.insert(
            TEMPLATE_DEF.into(),
            serde_json::json!({
                "description": "A `{{ … }}` template, replaced by its value when the plan is \
                    expanded (vars, `--vars`, `--set`, matrix bindings).",
                "type": "string",
                "pattern": TEMPLATE_PATTERN,
                "examples": ["{{ duration }}", "{{ sweep }}"],
            }),
        );
    }
    value
}

/// `include:` exists only in authored plans (it is merged away before validation): the
/// plan's list of shared files, and a phase entry that stands for a file of phases.
fn add_includes(schema: &mut Value) {
    let include = serde_json::json!({
        "description": "Shared plan files (paths relative to this file; YAML, TOML or JSON) \
            whose `vars`, `targets`, `workloads` and `defaults` this plan starts from. Later \
            files and the plan itself override earlier ones key by key.",
        "anyOf": [
            {"type": "string"},
            {"type": "array", "items": {"type": "string"}},
        ],
        "examples": [["common/targets.yaml"]],
    });
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        let mut with = serde_json::Map::new();
        // First, where editors list it: includes are read before everything else.
        for (k, v) in std::mem::take(props) {
            if k == "vars" {
                with.insert("include".into(), include.clone());
            }
            with.insert(k, v);
        }
        *props = with;
    }
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        defs.insert(
            "PhaseInclude".into(),
            serde_json::json!({
                "description": "Stands for the phases listed in another file (a list, or \
                    `phases: [...]`), in their order.",
                "type": "object",
                "properties": {
                    "include": {
                        "description": "Path of the phases file, relative to this file.",
                        "type": "string",
                        "examples": ["common/sweep-phases.yaml"],
                    }
                },
                "required": ["include"],
                "additionalProperties": false,
            }),
        );
    }
    // A plan that includes files may take its targets and workloads from them.
    if let Some(Value::Object(root)) = Some(&mut *schema)
        && let Some(Value::Array(required)) = root.remove("required")
    {
        let own: Vec<Value> = required
            .iter()
            .filter(|k| !["targets", "workloads"].contains(&k.as_str().unwrap_or_default()))
            .cloned()
            .collect();
        root.insert("if".into(), serde_json::json!({"required": ["include"]}));
        root.insert("then".into(), serde_json::json!({"required": own}));
        root.insert("else".into(), serde_json::json!({"required": required}));
    }
    if let Some(items) = schema.pointer_mut("/properties/phases/anyOf/0/items") {
        let phase = std::mem::take(items);
        *items = serde_json::json!({
            "anyOf": [phase, {"$ref": "#/$defs/PhaseInclude"}, {"$ref": "#/$defs/PhaseRepeat"}],
        });
    }
}

/// Name of the authoring schema's definition of a template string.
const TEMPLATE_DEF: &str = "Template";

/// A string holding a template (unanchored, as JSON Schema patterns are); the same test as
/// [`is_template`].
const TEMPLATE_PATTERN: &str = r"\{\{|\{%";

/// Keys that describe a value rather than constrain it; they stay on the outside of the
/// `anyOf` so editors show them on hover.
const ANNOTATIONS: [&str; 4] = ["title", "description", "default", "examples"];

/// Let every value slot (properties, map values, list items) also hold a template string;
/// keys, `additionalProperties: false`, enums and patterns stay as they are for literals.
fn accept_templates(schema: &mut Value) {
    let Value::Object(obj) = schema else {
        return;
    };
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        props.values_mut().for_each(template_slot);
    }
    for key in ["additionalProperties", "items"] {
        if let Some(slot) = obj.get_mut(key).filter(|v| v.is_object()) {
            template_slot(slot);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = obj.get_mut(key) {
            branches.iter_mut().for_each(accept_templates);
        }
    }
    if let Some(Value::Object(defs)) = obj.get_mut("$defs") {
        defs.values_mut().for_each(accept_templates);
    }
}

/// A field that names a definition and says nothing of its own shows the definition's
/// description on hover.
fn inherit_descriptions(schema: &mut Value) {
    let described: std::collections::HashMap<String, Value> = schema
        .get("$defs")
        .and_then(Value::as_object)
        .map(|defs| {
            defs.iter()
                .filter_map(|(k, v)| Some((format!("#/$defs/{k}"), v.get("description")?.clone())))
                .collect()
        })
        .unwrap_or_default();
    fn walk(v: &mut Value, described: &std::collections::HashMap<String, Value>) {
        match v {
            Value::Object(obj) => {
                if let Some(Value::Object(props)) = obj.get_mut("properties") {
                    for field in props.values_mut().filter_map(Value::as_object_mut) {
                        let inherited = field
                            .get("$ref")
                            .and_then(Value::as_str)
                            .and_then(|r| described.get(r));
                        if let Some(d) = inherited.filter(|_| !field.contains_key("description")) {
                            field.insert("description".into(), d.clone());
                        }
                    }
                }
                obj.values_mut().for_each(|v| walk(v, described));
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, described)),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
        }
    }
    walk(schema, &described);
}

fn template_slot(slot: &mut Value) {
    accept_templates(slot);
    let Value::Object(inner) = slot else {
        return;
    };
    // A plain string already holds any template; `true` holds anything.
    let plain_string = inner.get("type").and_then(Value::as_str) == Some("string")
        && ![
            "pattern",
            "enum",
            "const",
            "format",
            "minLength",
            "maxLength",
        ]
        .iter()
        .any(|k| inner.contains_key(*k));
    if plain_string || inner.is_empty() {
        return;
    }
    let mut outer = serde_json::Map::new();
    for key in ANNOTATIONS {
        if let Some(v) = inner.remove(key) {
            outer.insert(key.into(), v);
        }
    }
    let literal = Value::Object(std::mem::take(inner));
    outer.insert(
        "anyOf".into(),
        serde_json::json!([literal, {"$ref": format!("#/$defs/{TEMPLATE_DEF}")}]),
    );
    *slot = Value::Object(outer);
}

/// Pretty JSON with a final newline, the form the committed schema files use.
pub fn to_pretty(schema: &Value) -> String {
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}

/// Plans never need `null`: drop it from optional fields so errors come from the real type,
/// and give unsigned integers their upper bound so huge numbers fail validation.
fn tighten(value: &mut Value) {
    match value {
        Value::Object(obj) => {
            if let Some(Value::Array(types)) = obj.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    obj.insert("type".into(), only);
                }
            }
            let collapsed = match obj.get("anyOf") {
                Some(Value::Array(branches)) if branches.len() == 2 => {
                    let non_null: Vec<&Value> = branches
                        .iter()
                        .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
                        .collect();
                    match non_null.as_slice() {
                        [single] if branches.len() - non_null.len() == 1 => Some((*single).clone()),
                        _ => None,
                    }
                }
                _ => None,
            };
            if let Some(Value::Object(inner)) = collapsed {
                obj.remove("anyOf");
                for (k, v) in inner {
                    obj.entry(k).or_insert(v);
                }
            }
            let max = match obj.get("format").and_then(Value::as_str) {
                Some("uint8") => Some(u64::from(u8::MAX)),
                Some("uint16") => Some(u64::from(u16::MAX)),
                Some("uint32") => Some(u64::from(u32::MAX)),
                Some("uint64") | Some("uint") => Some(u64::MAX),
                _ => None,
            };
            if let Some(max) = max {
                obj.entry("maximum").or_insert(Value::from(max));
            }
            for v in obj.values_mut() {
                tighten(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tighten),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

struct Compiled {
    schema: Value,
    validator: Validator,
}

fn compiled() -> Result<&'static Compiled, String> {
    static COMPILED: OnceLock<Result<Compiled, String>> = OnceLock::new();
    COMPILED
        .get_or_init(|| {
            let schema = expanded_schema();
            jsonschema::draft202012::new(&schema)
                .map(|validator| Compiled { schema, validator })
                .map_err(|e| format!("the plan schema does not compile: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// True for a string that still holds a template (`{{ … }}` or `{% … %}`).
pub fn is_template(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| s.contains("{{") || s.contains("{%"))
}

/// Validate `doc` against the plan schema. With `skip_templates`, errors on template strings
/// are left for the second validation after expansion.
pub fn validate(doc: &Value, skip_templates: bool) -> Vec<Issue> {
    let compiled = match compiled() {
        Ok(c) => c,
        Err(e) => return vec![Issue::new("", e)],
    };
    let mut issues = Vec::new();
    for error in compiled.validator.iter_errors(doc) {
        translate(&error, &compiled.schema, skip_templates, &mut issues);
    }
    issues.sort_by(|a, b| a.pointer.cmp(&b.pointer));
    issues.dedup();
    issues
}

fn describe_type(t: JsonType) -> &'static str {
    match t {
        JsonType::Null => "null",
        JsonType::Boolean => "true or false",
        JsonType::Integer => "an integer",
        JsonType::Number => "a number",
        JsonType::String => "a string",
        JsonType::Array => "a list",
        JsonType::Object => "a mapping",
    }
}

/// A short description of a found value: the value itself when small.
pub fn describe_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.chars().count() <= 40 => format!("{s:?}"),
        Value::String(_) => "a long string".into(),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

/// The schema object at a canonical schema path, following `$ref`s to `$defs`.
fn schema_at<'a>(root: &'a Value, pointer: &str) -> Option<&'a Value> {
    let mut cur = root;
    for seg in segments(pointer) {
        cur = match cur {
            Value::Object(m) => m.get(&seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => r
            .strip_prefix('#')
            .and_then(|p| schema_at(root, p))
            .unwrap_or(schema),
        None => schema,
    }
}

fn property_names(schema: &Value) -> Vec<&str> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

fn translate(
    error: &ValidationError<'_>,
    root: &Value,
    skip_templates: bool,
    out: &mut Vec<Issue>,
) {
    let instance = error.instance();
    if skip_templates && is_template(instance) {
        return;
    }
    let pointer = error.instance_path().as_str().to_string();
    let found = describe_value(instance);
    let issue = |message: String| Issue::new(pointer.clone(), message);
    let parent_schema = || {
        let sp = error.schema_path().as_str();
        let parent = sp.rsplit_once('/').map_or("", |(p, _)| p);
        schema_at(root, parent).map(|s| resolve(root, s))
    };
    match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let allowed = parent_schema().map(property_names).unwrap_or_default();
            for key in unexpected {
                let hint = did_you_mean(key, allowed.iter().copied()).or_else(|| {
                    (!allowed.is_empty()).then(|| format!("allowed keys: {}", allowed.join(", ")))
                });
                out.push(
                    Issue::new(
                        format!("{pointer}/{}", escape(key)),
                        format!("unknown key `{key}`"),
                    )
                    .at_key()
                    .hint(hint),
                );
            }
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            out.push(
                Issue::new(
                    format!("{pointer}/{}", escape(name)),
                    format!("required key `{name}` is missing"),
                )
                .at_key(),
            );
        }
        ValidationErrorKind::Type { kind } => {
            let expected: Vec<&str> = match kind {
                TypeKind::Single(t) => vec![describe_type(*t)],
                TypeKind::Multiple(set) => set.iter().map(describe_type).collect(),
            };
            let hint = match (instance.as_ref(), expected.as_slice()) {
                (Value::String(s), ["an integer"] | ["a number"]) if s.parse::<f64>().is_ok() => {
                    Some("remove the quotes to write a number".to_string())
                }
                _ => None,
            };
            let is_duration = parent_schema()
                .and_then(|s| s.get("pattern"))
                .and_then(Value::as_str)
                == Some(DURATION_PATTERN);
            if is_duration {
                let hint = match instance.as_ref() {
                    Value::Number(n) => format!("add a unit: \"{n}s\" or \"{n}ms\""),
                    _ => "write a number and a unit: \"250ms\", \"60s\", \"10m\"".to_string(),
                };
                out.push(issue(format!("expected a duration, found {found}")).hint(Some(hint)));
                return;
            }
            out.push(
                issue(format!("expected {}, found {found}", expected.join(" or "))).hint(hint),
            );
        }
        ValidationErrorKind::Enum { options } => {
            let values = options.as_array().cloned().unwrap_or_default();
            out.push(enum_issue(&pointer, instance, &values));
        }
        ValidationErrorKind::Constant { expected_value } => {
            out.push(issue(format!("expected {expected_value}, found {found}")));
        }
        ValidationErrorKind::Minimum { limit } => {
            out.push(issue(format!("must be at least {limit}, found {found}")));
        }
        ValidationErrorKind::Maximum { limit } => {
            out.push(issue(format!("must be at most {limit}, found {found}")));
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            out.push(issue(format!(
                "must be greater than {limit}, found {found}"
            )));
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            out.push(issue(format!("must be less than {limit}, found {found}")));
        }
        ValidationErrorKind::Pattern { pattern } => {
            if pattern == DURATION_PATTERN {
                out.push(
                    issue(format!("expected a duration, found {found}")).hint(Some(
                        "write a number and a unit: \"250ms\", \"60s\", \"10m\", \"1h 30m\"".into(),
                    )),
                );
            } else {
                out.push(issue(format!(
                    "{found} does not match the pattern `{pattern}`"
                )));
            }
        }
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            any_of(error, context, root, skip_templates, out);
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            out.push(issue(format!("{found} matches more than one allowed form")));
        }
        ValidationErrorKind::MinItems { limit } => {
            out.push(issue(format!("needs at least {limit} item(s)")));
        }
        ValidationErrorKind::MaxItems { limit } => {
            out.push(issue(format!("allows at most {limit} item(s)")));
        }
        ValidationErrorKind::MinLength { limit } => {
            out.push(issue(format!("must be at least {limit} character(s) long")));
        }
        ValidationErrorKind::MaxLength { limit } => {
            out.push(issue(format!("must be at most {limit} character(s) long")));
        }
        ValidationErrorKind::MinProperties { limit } => {
            out.push(issue(format!("needs at least {limit} entr(y/ies)")));
        }
        ValidationErrorKind::MaxProperties { limit } => {
            out.push(issue(format!("allows at most {limit} entr(y/ies)")));
        }
        ValidationErrorKind::UniqueItems => out.push(issue("items must be unique".into())),
        ValidationErrorKind::FalseSchema => out.push(issue("this key is not allowed here".into())),
        ValidationErrorKind::Format { format } => {
            out.push(issue(format!("{found} is not a valid {format}")));
        }
        ValidationErrorKind::MultipleOf { .. } => {
            out.push(issue(format!("{found} is not an allowed multiple")));
        }
        ValidationErrorKind::AdditionalItems { .. }
        | ValidationErrorKind::UnevaluatedItems { .. }
        | ValidationErrorKind::Contains
        | ValidationErrorKind::ContentEncoding { .. }
        | ValidationErrorKind::ContentMediaType { .. }
        | ValidationErrorKind::Custom { .. }
        | ValidationErrorKind::FromUtf8 { .. }
        | ValidationErrorKind::Not { .. }
        | ValidationErrorKind::PropertyNames { .. }
        | ValidationErrorKind::BacktrackLimitExceeded { .. }
        | ValidationErrorKind::RegexEngineFailure { .. }
        | ValidationErrorKind::Referencing(_) => out.push(issue(error.to_string())),
    }
}

fn enum_issue(pointer: &str, instance: &Value, values: &[Value]) -> Issue {
    let names: Vec<String> = values
        .iter()
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        .collect();
    let list = names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let hint = instance
        .as_str()
        .and_then(|s| did_you_mean(s, names.iter().map(String::as_str)));
    Issue::new(
        pointer,
        format!("expected one of {list}, found {}", describe_value(instance)),
    )
    .hint(hint)
}

/// One of several forms failed: report the form the value was most likely meant as.
fn any_of(
    error: &ValidationError<'_>,
    context: &[Vec<ValidationError<'static>>],
    root: &Value,
    skip_templates: bool,
    out: &mut Vec<Issue>,
) {
    let instance = error.instance();
    let pointer = error.instance_path().as_str();
    let here_type_error = |e: &ValidationError<'_>| {
        e.instance_path().as_str() == pointer
            && matches!(e.kind(), ValidationErrorKind::Type { .. })
    };
    // An enum written as `oneOf` constants (variants with docs): list the allowed names.
    let constants: Option<Vec<Value>> = context
        .iter()
        .map(|branch| match branch.as_slice() {
            [e] if e.instance_path().as_str() == pointer => match e.kind() {
                ValidationErrorKind::Constant { expected_value } => {
                    Some(vec![(**expected_value).clone()])
                }
                ValidationErrorKind::Enum { options } => options.as_array().cloned(),
                _ => None,
            },
            _ => None,
        })
        .collect::<Option<Vec<Vec<Value>>>>()
        .map(|v| v.into_iter().flatten().collect());
    if let Some(values) = constants.filter(|v| !v.is_empty()) {
        out.push(enum_issue(pointer, instance, &values));
        return;
    }
    // Branches whose type fits the value; among them, the one with the fewest problems.
    let best = context
        .iter()
        .filter(|branch| !branch.iter().any(here_type_error))
        .min_by_key(|branch| branch.len());
    match best {
        Some(branch) if instance.is_object() || instance.is_array() || branch.len() == 1 => {
            for e in branch {
                translate(e, root, skip_templates, out);
            }
        }
        _ => {
            let mut forms: Vec<String> = Vec::new();
            for branch in context {
                for e in branch.iter().filter(|e| here_type_error(e)) {
                    if let ValidationErrorKind::Type { kind } = e.kind() {
                        let names: Vec<&str> = match kind {
                            TypeKind::Single(t) => vec![describe_type(*t)],
                            TypeKind::Multiple(set) => set.iter().map(describe_type).collect(),
                        };
                        for n in names {
                            if !forms.iter().any(|f| f == n) {
                                forms.push(n.to_string());
                            }
                        }
                    }
                }
            }
            let found = describe_value(instance);
            let message = if forms.is_empty() {
                format!("{found} is not an allowed value here")
            } else {
                format!("expected {}, found {found}", forms.join(" or "))
            };
            out.push(Issue::new(pointer, message).hint(forms_hint(error, root)));
        }
    }
}

/// For a value of the wrong shape, the accepted forms: the `examples` of the schema whose
/// `anyOf`/`oneOf` failed, written as they would be in YAML.
fn forms_hint(error: &ValidationError<'_>, root: &Value) -> Option<String> {
    let path = error.schema_path().as_str();
    let parent = path.rsplit_once('/').map_or("", |(p, _)| p);
    let mut cur = root;
    for seg in segments(parent) {
        cur = match (seg.as_str(), cur) {
            ("$ref", _) => resolve(root, cur),
            (_, Value::Object(m)) => m.get(&seg)?,
            (_, Value::Array(a)) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    let examples = resolve(root, cur).get("examples")?.as_array()?;
    let forms: Vec<String> = examples
        .iter()
        .map(|e| format!("`{}`", flow_yaml(e)))
        .collect();
    (!forms.is_empty()).then(|| format!("write one of the forms {}", forms.join(", ")))
}

/// A value as YAML flow text: `{source: file, path: tokenizer.json}`.
fn flow_yaml(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(flow_yaml).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(m) => {
            let entries: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}: {}", flow_yaml(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => value.to_string(),
    }
}

/// The keys a mapping at `pointer` of a plan may hold (for hints outside schema errors).
pub fn allowed_keys(definition: &str) -> Vec<String> {
    let Ok(compiled) = compiled() else {
        return Vec::new();
    };
    compiled
        .schema
        .get("$defs")
        .and_then(|d| d.get(definition))
        .map(|s| property_names(s).into_iter().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Validate any JSON document against any schema (used by tests on the committed files).
pub fn validate_with(schema: &Value, doc: &Value) -> Result<Vec<String>, String> {
    let validator = jsonschema::draft202012::new(schema).map_err(|e| e.to_string())?;
    Ok(validator.iter_errors(doc).map(|e| e.to_string()).collect())
}
