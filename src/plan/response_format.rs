//! A workload's structured output: `response_format: {type: json_object}` or
//! `{type: json_schema, schema: {…} | schema_file: PATH, name, strict}`, sent as each API takes
//! it, and every reply checked against it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::schema::Issue;

/// What each reply must be: any JSON object, or JSON satisfying a schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResponseFormat {
    /// `json_object` or `json_schema`.
    #[serde(rename = "type")]
    pub kind: ResponseFormatKind,
    /// `json_schema`: the JSON Schema, inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// `json_schema`: a JSON file holding the schema, relative to the plan file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_file: Option<String>,
    /// `json_schema`: the schema's name as the API takes it (default `reply`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `json_schema`: ask the server to hold to the schema strictly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormatKind {
    JsonObject,
    JsonSchema,
}

/// The name a schema goes by when the plan gives none.
pub const DEFAULT_SCHEMA_NAME: &str = "reply";

impl ResponseFormat {
    /// The `response_format` field of chat and completions, the schema resolved.
    pub fn chat_field(&self, schema: Option<&Value>) -> Value {
        match (self.kind, schema) {
            (ResponseFormatKind::JsonSchema, Some(schema)) => {
                let mut inner = serde_json::Map::new();
                inner.insert("name".into(), Value::String(self.schema_name().into()));
                inner.insert("schema".into(), schema.clone());
                if let Some(strict) = self.strict {
                    inner.insert("strict".into(), Value::Bool(strict));
                }
                serde_json::json!({"type": "json_schema", "json_schema": inner})
            }
            _ => serde_json::json!({"type": "json_object"}),
        }
    }

    /// The Responses API's `text.format`: the schema's fields beside its type.
    pub fn responses_format(&self, schema: Option<&Value>) -> Value {
        match (self.kind, schema) {
            (ResponseFormatKind::JsonSchema, Some(schema)) => {
                let mut format = serde_json::Map::new();
                format.insert("type".into(), Value::String("json_schema".into()));
                format.insert("name".into(), Value::String(self.schema_name().into()));
                format.insert("schema".into(), schema.clone());
                if let Some(strict) = self.strict {
                    format.insert("strict".into(), Value::Bool(strict));
                }
                Value::Object(format)
            }
            _ => serde_json::json!({"type": "json_object"}),
        }
    }

    pub fn schema_name(&self) -> &str {
        self.name.as_deref().unwrap_or(DEFAULT_SCHEMA_NAME)
    }
}

/// `json_schema` names exactly one schema, which compiles; `json_object` names none.
pub(super) fn check_response_format(p: &str, f: &ResponseFormat, issues: &mut Vec<Issue>) {
    match f.kind {
        ResponseFormatKind::JsonObject => {
            for (key, set) in [
                ("schema", f.schema.is_some()),
                ("schema_file", f.schema_file.is_some()),
                ("name", f.name.is_some()),
                ("strict", f.strict.is_some()),
            ] {
                if set {
                    issues.push(
                        Issue::new(
                            format!("{p}/{key}"),
                            format!("`{key}` belongs to `type: json_schema`"),
                        )
                        .at_key(),
                    );
                }
            }
        }
        ResponseFormatKind::JsonSchema => match (&f.schema, &f.schema_file) {
            (None, None) => issues.push(
                Issue::new(
                    format!("{p}/type"),
                    "`json_schema` needs the schema: `schema: {…}` or `schema_file: PATH`",
                )
                .at_key(),
            ),
            (Some(_), Some(_)) => issues.push(
                Issue::new(
                    format!("{p}/schema_file"),
                    "give the schema once: `schema` or `schema_file`, not both",
                )
                .at_key(),
            ),
            (Some(schema), None) => {
                if let Err(e) = compile(schema) {
                    issues.push(Issue::new(format!("{p}/schema"), e));
                }
            }
            (None, Some(path)) if path.trim().is_empty() => {
                issues.push(Issue::new(format!("{p}/schema_file"), "the path is empty"));
            }
            (None, Some(_)) => {}
        },
    }
}

/// The schema compiled for validation, or why it does not compile.
pub fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(schema).map_err(|e| format!("not a valid JSON Schema: {e}"))
}
