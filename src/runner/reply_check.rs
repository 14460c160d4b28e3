//! A workload's `response_format` made ready for a phase: the schema read (inline or from
//! its file), the body fields each API takes it in, and the check every reply goes through.

use std::path::Path;

use serde_json::{Map, Value};

use crate::api::Api;
use crate::metrics::reply_check::ReplyCheck;
use crate::plan::{ResponseFormat, ResponseFormatKind, Workload};

/// The workload's schema: inline, or read from `schema_file` (relative to `plan_dir`);
/// `None` for `json_object`.
pub(super) fn schema(format: &ResponseFormat, plan_dir: &Path) -> Result<Option<Value>, String> {
    if format.kind == ResponseFormatKind::JsonObject {
        return Ok(None);
    }
    if let Some(schema) = &format.schema {
        return Ok(Some(schema.clone()));
    }
    let Some(file) = &format.schema_file else {
        return Ok(None);
    };
    let path = plan_dir.join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "response_format.schema_file: cannot read {}: {e}",
            path.display()
        )
    })?;
    let schema: Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "response_format.schema_file: {} is not JSON: {e}",
            path.display()
        )
    })?;
    crate::plan::response_format::compile(&schema)
        .map_err(|e| format!("response_format.schema_file: {}: {e}", path.display()))?;
    Ok(Some(schema))
}

/// The `response_format` as `api` takes it, merged into the request body's fixed fields:
/// `response_format` for chat and completions, `text.format` for Responses.
pub(super) fn add_to_body(
    api: Api,
    format: &ResponseFormat,
    schema: Option<&Value>,
    body: &mut Map<String, Value>,
) {
    let mut over = Map::new();
    match api {
        Api::Responses => {
            over.insert(
                "text".into(),
                serde_json::json!({"format": format.responses_format(schema)}),
            );
        }
        _ => {
            over.insert("response_format".into(), format.chat_field(schema));
        }
    }
    crate::client::merge_body(body, &over);
}

/// The check a phase's replies go through, when its workload has one.
pub(super) fn check_for(
    workload: &Workload,
    plan_dir: &Path,
) -> Result<Option<ReplyCheck>, String> {
    let Some(format) = &workload.response_format else {
        return Ok(None);
    };
    let schema = schema(format, plan_dir)?;
    ReplyCheck::new(schema.as_ref()).map(Some)
}
