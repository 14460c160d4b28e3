//! Schema errors in plain words: each `jsonschema` error becomes an [`Issue`] with a hint.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{JsonType, ValidationError};
use serde_json::Value;

use super::{Issue, is_template};
use crate::duration::DURATION_PATTERN;
use crate::plan::diag::{did_you_mean, did_you_mean_text};
use crate::plan::source::{escape, segments};

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

pub(super) fn property_names(schema: &Value) -> Vec<&str> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// Translate one validation error (and, for `anyOf`, the errors of its likeliest branch).
pub(super) fn translate(
    error: &ValidationError<'_>,
    root: &Value,
    skip_templates: bool,
    out: &mut Vec<Issue>,
) {
    let instance = error.instance();
    if skip_templates && is_template(instance) {
        return;
    }
    let pointer = error.instance_path().as_str();
    match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            unknown_keys(error, root, unexpected, out);
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            out.push(
                Issue::new(
                    format!("{pointer}/{}", escape(name)),
                    required_key_missing(name),
                )
                .at_key(),
            );
        }
        ValidationErrorKind::Type { kind } => out.push(type_issue(error, root, kind)),
        ValidationErrorKind::Enum { options } => {
            let values = options.as_array().cloned().unwrap_or_default();
            out.push(enum_issue(pointer, instance, &values));
        }
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            any_of(error, context, root, skip_templates, out);
        }
        kind => out.push(plain_issue(error, kind)),
    }
}

fn required_key_missing(name: &str) -> String {
    format!("required key `{name}` is missing")
}

/// A misspelt required key reads as one mistake, not two: the "missing" issue goes where an
/// unknown key beside it is already hinted as that key.
pub(super) fn drop_missing_keys_hinted_as_typos(issues: &mut Vec<Issue>) {
    let hinted: Vec<(String, String)> = issues
        .iter()
        .filter_map(|issue| {
            let (parent, _) = issue.pointer.rsplit_once('/')?;
            let hint = issue.hint.as_deref()?;
            Some((parent.to_string(), hint.to_string()))
        })
        .collect();
    issues.retain(|issue| {
        let Some((parent, key)) = issue.pointer.rsplit_once('/') else {
            return true;
        };
        let key = key.replace("~1", "/").replace("~0", "~");
        let is_missing = issue.message == required_key_missing(&key);
        let suggested = did_you_mean_text(&key);
        !(is_missing && hinted.iter().any(|(p, h)| p == parent && *h == suggested))
    });
}

/// The schema holding the keyword that failed, `$ref` resolved.
fn parent_schema<'a>(error: &ValidationError<'_>, root: &'a Value) -> Option<&'a Value> {
    let sp = error.schema_path().as_str();
    let parent = sp.rsplit_once('/').map_or("", |(p, _)| p);
    schema_at(root, parent).map(|s| resolve(root, s))
}

/// One issue per unknown key, at the key, with the closest allowed key as the hint.
fn unknown_keys(
    error: &ValidationError<'_>,
    root: &Value,
    unexpected: &[String],
    out: &mut Vec<Issue>,
) {
    let pointer = error.instance_path().as_str();
    let allowed = parent_schema(error, root)
        .map(property_names)
        .unwrap_or_default();
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

/// A value of the wrong type; durations get their own wording.
fn type_issue(error: &ValidationError<'_>, root: &Value, kind: &TypeKind) -> Issue {
    let instance = error.instance();
    let issue = |message: String| Issue::new(error.instance_path().as_str(), message);
    let found = describe_value(instance);
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
    let is_duration = parent_schema(error, root)
        .and_then(|s| s.get("pattern"))
        .and_then(Value::as_str)
        == Some(DURATION_PATTERN);
    if is_duration {
        let hint = match instance.as_ref() {
            Value::Number(n) => format!("add a unit: \"{n}s\" or \"{n}ms\""),
            _ => "write a number and a unit: \"250ms\", \"60s\", \"10m\"".to_string(),
        };
        return issue(format!("expected a duration, found {found}")).hint(Some(hint));
    }
    issue(format!("expected {}, found {found}", expected.join(" or "))).hint(hint)
}

/// Every other kind of error: one message about the value itself.
fn plain_issue(error: &ValidationError<'_>, kind: &ValidationErrorKind) -> Issue {
    let found = describe_value(error.instance());
    let issue = |message: String| Issue::new(error.instance_path().as_str(), message);
    match kind {
        ValidationErrorKind::Constant { expected_value } => {
            issue(format!("expected {expected_value}, found {found}"))
        }
        ValidationErrorKind::Minimum { limit } => {
            issue(format!("must be at least {limit}, found {found}"))
        }
        ValidationErrorKind::Maximum { limit } => {
            issue(format!("must be at most {limit}, found {found}"))
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            issue(format!("must be greater than {limit}, found {found}"))
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            issue(format!("must be less than {limit}, found {found}"))
        }
        ValidationErrorKind::Pattern { pattern } if pattern == DURATION_PATTERN => {
            issue(format!("expected a duration, found {found}")).hint(Some(
                "write a number and a unit: \"250ms\", \"60s\", \"10m\", \"1h 30m\"".into(),
            ))
        }
        ValidationErrorKind::Pattern { pattern } => {
            issue(format!("{found} does not match the pattern `{pattern}`"))
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            issue(format!("{found} matches more than one allowed form"))
        }
        ValidationErrorKind::MinItems { limit } => issue(format!("needs at least {limit} item(s)")),
        ValidationErrorKind::MaxItems { limit } => issue(format!("allows at most {limit} item(s)")),
        ValidationErrorKind::MinLength { limit } => {
            issue(format!("must be at least {limit} character(s) long"))
        }
        ValidationErrorKind::MaxLength { limit } => {
            issue(format!("must be at most {limit} character(s) long"))
        }
        ValidationErrorKind::MinProperties { limit } => {
            issue(format!("needs at least {limit} entr(y/ies)"))
        }
        ValidationErrorKind::MaxProperties { limit } => {
            issue(format!("allows at most {limit} entr(y/ies)"))
        }
        ValidationErrorKind::UniqueItems => issue("items must be unique".into()),
        ValidationErrorKind::FalseSchema => issue("this key is not allowed here".into()),
        ValidationErrorKind::Format { format } => issue(format!("{found} is not a valid {format}")),
        ValidationErrorKind::MultipleOf { .. } => {
            issue(format!("{found} is not an allowed multiple"))
        }
        // Kinds `translate` words itself never get here; the rest keep the library's words.
        ValidationErrorKind::AdditionalProperties { .. }
        | ValidationErrorKind::UnevaluatedProperties { .. }
        | ValidationErrorKind::Required { .. }
        | ValidationErrorKind::Type { .. }
        | ValidationErrorKind::Enum { .. }
        | ValidationErrorKind::AnyOf { .. }
        | ValidationErrorKind::OneOfNotValid { .. }
        | ValidationErrorKind::AdditionalItems { .. }
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
        | ValidationErrorKind::Referencing(_) => issue(error.to_string()),
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
