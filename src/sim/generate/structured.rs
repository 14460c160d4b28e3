//! Structured-output replies: JSON made from a request's `response_format` schema (objects,
//! required properties, strings, numbers, integers, booleans, arrays, enums), a seeded share
//! of them broken on purpose (`invalid_share`), cut into token-sized pieces.

use serde_json::{Map, Value};

use super::vocab::next_word;
use crate::sim::rng::SimRng;

/// Bytes of reply text per simulated token.
const BYTES_PER_TOKEN: usize = 4;
/// Deepest nesting the generator follows.
const MAX_DEPTH: usize = 6;

/// The schema a `response_format` (chat, completions) or `text.format` (Responses) names;
/// `None` for `json_object`.
pub(crate) fn schema_of(format: &Value) -> Option<&Value> {
    format
        .get("json_schema")
        .and_then(|j| j.get("schema"))
        .or_else(|| format.get("schema"))
}

/// The reply's text: JSON satisfying `schema` (an object of one string for none), or, when
/// `broken`, JSON that does not (a required property left out) or text that is not JSON.
pub(crate) fn reply_text(schema: Option<&Value>, rng: &mut SimRng, broken: bool) -> String {
    let fallback = serde_json::json!({
        "type": "object",
        "required": ["answer"],
        "properties": {"answer": {"type": "string"}}
    });
    let schema = schema.unwrap_or(&fallback);
    let mut value = value_for(schema, rng, 0);
    if !broken {
        return value.to_string();
    }
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .and_then(|r| r.first())
        .and_then(Value::as_str);
    match (rng.next_u64() % 2, value.as_object_mut(), required) {
        (0, Some(object), Some(key)) => {
            object.remove(key);
            value.to_string()
        }
        _ => {
            let mut text = value.to_string();
            text.pop();
            text
        }
    }
}

/// A value satisfying `schema`, as far as the keywords above go.
fn value_for(schema: &Value, rng: &mut SimRng, depth: usize) -> Value {
    if let Some(choices) = schema.get("enum").and_then(Value::as_array)
        && !choices.is_empty()
    {
        return choices[(rng.next_u64() % choices.len() as u64) as usize].clone();
    }
    if let Some(value) = schema.get("const") {
        return value.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return value_for(first, rng, depth);
        }
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match kind {
        "object" if depth < MAX_DEPTH => object_for(schema, rng, depth),
        "array" if depth < MAX_DEPTH => array_for(schema, rng, depth),
        "integer" => Value::from(integer_for(schema, rng)),
        "number" => {
            let n = integer_for(schema, rng) as f64 + 0.5;
            let max = schema.get("maximum").and_then(Value::as_f64);
            Value::from(max.map_or(n, |m| n.min(m)))
        }
        "boolean" => Value::Bool(rng.next_u64().is_multiple_of(2)),
        "null" => Value::Null,
        "object" => Value::Object(Map::new()),
        "array" => Value::Array(Vec::new()),
        _ => Value::String(string_for(schema, rng)),
    }
}

fn object_for(schema: &Value, rng: &mut SimRng, depth: usize) -> Value {
    let mut object = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (key, property) in properties {
            object.insert(key.clone(), value_for(property, rng, depth + 1));
        }
    }
    Value::Object(object)
}

fn array_for(schema: &Value, rng: &mut SimRng, depth: usize) -> Value {
    let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(1);
    let max = schema
        .get("maxItems")
        .and_then(Value::as_u64)
        .unwrap_or(3)
        .max(min);
    let n = rng.range_inclusive(min, max.min(min + 2));
    let items = schema.get("items").cloned().unwrap_or(Value::Bool(true));
    let items = if items.is_object() {
        items
    } else {
        serde_json::json!({"type": "string"})
    };
    Value::Array((0..n).map(|_| value_for(&items, rng, depth + 1)).collect())
}

fn integer_for(schema: &Value, rng: &mut SimRng) -> i64 {
    let lo = schema.get("minimum").and_then(Value::as_i64).unwrap_or(0);
    let hi = schema
        .get("maximum")
        .and_then(Value::as_i64)
        .unwrap_or(lo.saturating_add(100))
        .max(lo);
    lo + (rng.next_u64() % (hi.abs_diff(lo) + 1)) as i64
}

fn string_for(schema: &Value, rng: &mut SimRng) -> String {
    let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    let max = schema
        .get("maxLength")
        .and_then(Value::as_u64)
        .map(|m| m as usize);
    let words = rng.range_inclusive(2, 6);
    let mut text: Vec<&str> = (0..words).map(|_| next_word(rng)).collect();
    let mut out = text.join(" ");
    while out.chars().count() < min {
        text.push(next_word(rng));
        out = text.join(" ");
    }
    if let Some(max) = max {
        out = out.chars().take(max).collect();
    }
    out
}

/// The text cut into pieces of about one token's bytes, each on a character boundary.
pub(crate) fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut piece = String::new();
    for c in text.chars() {
        piece.push(c);
        if piece.len() >= BYTES_PER_TOKEN {
            out.push(std::mem::take(&mut piece));
        }
    }
    if !piece.is_empty() {
        out.push(piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_satisfy_their_schema_unless_broken() {
        let schema = serde_json::json!({
            "type": "object",
            "required": ["name", "age", "tags", "kind"],
            "properties": {
                "name": {"type": "string", "minLength": 3, "maxLength": 20},
                "age": {"type": "integer", "minimum": 0, "maximum": 120},
                "score": {"type": "number"},
                "ok": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "kind": {"enum": ["a", "b"]},
                "inner": {"type": "object", "properties": {"x": {"type": ["integer", "null"]}}}
            }
        });
        let validator = jsonschema::validator_for(&schema).unwrap();
        for seq in 0..50 {
            let mut rng = SimRng::new(7, seq, 9);
            let text = reply_text(Some(&schema), &mut rng, false);
            let value: Value = serde_json::from_str(&text).unwrap();
            assert!(validator.is_valid(&value), "{text}");
            assert_eq!(pieces(&text).concat(), text);
            let broken = reply_text(Some(&schema), &mut rng, true);
            let fails =
                serde_json::from_str::<Value>(&broken).map_or(true, |v| !validator.is_valid(&v));
            assert!(fails, "{broken}");
        }
    }
}
