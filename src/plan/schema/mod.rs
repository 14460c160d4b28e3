//! The `validate` pass: JSON schemas generated from the types, and schema errors in plain words.

mod generate;
mod translate;

use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::Value;

pub use generate::{expanded_schema, plan_schema, to_pretty};
pub use translate::describe_value;
use translate::{drop_missing_keys_hinted_as_typos, property_names, translate};

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
    drop_missing_keys_hinted_as_typos(&mut issues);
    issues
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
