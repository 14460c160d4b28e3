//! The JSON schema of a report, generated from the report types.

use serde_json::Value;

use super::Report;

/// The JSON schema of a report (draft 2020-12), as committed in `schemas/report.schema.json`.
pub fn report_schema() -> Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<Report>();
    serde_json::to_value(schema).unwrap_or(Value::Null)
}
