//! JSON schemas generated from the plan types: the strict expanded schema, and the authoring
//! schema that also accepts `{{ }}` templates and `include:`.

use serde_json::Value;

use crate::plan::model::Plan;

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
            crate::plan::expand::repeat::schema_definition(),
        );
    }
    add_includes(&mut value);
    add_old_names(&mut value);
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

/// Old key names still read (see [`crate::plan::renamed`]): listed as `deprecated`, so an
/// editor marks them instead of refusing them.
fn add_old_names(schema: &mut Value) {
    let Some(Value::Object(props)) = schema.pointer_mut("/$defs/Target/properties") else {
        return;
    };
    for (old, new) in crate::plan::renamed::target_renames() {
        let Some(Value::Object(current)) = props.get(new).cloned() else {
            continue;
        };
        let mut deprecated: serde_json::Map<String, Value> = current
            .into_iter()
            .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()))
            .collect();
        deprecated.insert(
            "description".into(),
            Value::from(format!(
                "Deprecated: the old name of `{new}`; write `{new}`."
            )),
        );
        deprecated.insert("deprecated".into(), Value::Bool(true));
        props.insert(old.to_string(), Value::Object(deprecated));
    }
}

/// Name of the authoring schema's definition of a template string.
const TEMPLATE_DEF: &str = "Template";

/// A string holding a template (unanchored, as JSON Schema patterns are); the same test as
/// [`super::is_template`].
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
