//! The `load` pass: plan text (YAML, TOML or JSON) → JSON document plus a map from every key
//! path to its place in the source.

use std::collections::HashMap;

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};
use serde_json::{Map, Value};

use super::diag::{Diagnostic, Location, PlanErrors};

/// The plan file formats, chosen by file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Yaml,
    Toml,
    Json,
}

impl Format {
    /// `.toml` and `.json` by extension; everything else is read as YAML.
    pub fn from_path(path: &std::path::Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("toml") => Format::Toml,
            Some(e) if e.eq_ignore_ascii_case("json") => Format::Json,
            _ => Format::Yaml,
        }
    }
}

/// A place in the source: 1-based line, 0-based column and length in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub line: usize,
    pub col: usize,
    pub len: usize,
}

#[derive(Debug, Clone, Copy)]
struct NodePos {
    key: Option<Span>,
    value: Span,
    /// The value is a mapping or sequence (its span is not worth underlining).
    collection: bool,
}

/// The source text of a plan and the position of every node, keyed by JSON pointer.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    pub label: String,
    lines: Vec<String>,
    positions: HashMap<String, NodePos>,
    /// Subtrees written in another file (`include:`): located in that file's map.
    overlays: Vec<Overlay>,
    /// Keys read under a new name: (pointer as renamed, pointer as written).
    renamed: Vec<(String, String)>,
}

/// A subtree of a document that came from another source.
#[derive(Debug, Clone)]
struct Overlay {
    /// Pointer of the subtree in this document.
    prefix: String,
    /// Pointer of the same subtree in `map`'s document.
    target: String,
    map: SourceMap,
}

/// Escape one JSON-pointer segment.
pub fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Split a JSON pointer into unescaped segments.
pub fn segments(pointer: &str) -> Vec<String> {
    if pointer.is_empty() {
        return Vec::new();
    }
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// `phases[3].concurrency` for `/phases/3/concurrency`, using `doc` to tell indices from keys.
pub fn display_path(doc: &Value, pointer: &str) -> String {
    let mut out = String::new();
    let mut cur = Some(doc);
    for seg in segments(pointer) {
        match cur {
            Some(Value::Array(items)) => {
                out.push_str(&format!("[{seg}]"));
                cur = seg.parse::<usize>().ok().and_then(|i| items.get(i));
            }
            other => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&seg);
                cur = match other {
                    Some(Value::Object(m)) => m.get(&seg),
                    _ => None,
                };
            }
        }
    }
    out
}

impl SourceMap {
    /// Record where the node at `pointer` stands.
    fn place(&mut self, pointer: &str, key: Option<Span>, value: Span, collection: bool) {
        let position = NodePos {
            key,
            value,
            collection,
        };
        self.positions.insert(pointer.to_string(), position);
    }

    /// A map with no positions (for documents that did not come from text).
    pub fn without_source(label: &str) -> SourceMap {
        SourceMap {
            label: label.to_string(),
            ..SourceMap::default()
        }
    }

    fn new(label: &str, text: &str) -> SourceMap {
        SourceMap {
            label: label.to_string(),
            lines: text.lines().map(str::to_string).collect(),
            positions: HashMap::new(),
            overlays: Vec::new(),
            renamed: Vec::new(),
        }
    }

    /// Record that the subtree at `prefix` was written in `map` at `target`; later records
    /// for the same prefix replace earlier ones.
    pub fn overlay(&mut self, prefix: String, target: String, map: SourceMap) {
        self.overlays.retain(|o| o.prefix != prefix);
        self.overlays.push(Overlay {
            prefix,
            target,
            map,
        });
    }

    /// Forget where the subtree at `prefix` came from (the plan itself now sets it).
    pub fn clear_overlay(&mut self, prefix: &str) {
        self.overlays.retain(|o| o.prefix != prefix);
    }

    /// Record that the key written at `written` is now read at `renamed` (an old key name):
    /// places under `renamed` are looked up where they were written.
    pub fn rename(&mut self, written: String, renamed: String) {
        self.renamed.push((renamed, written));
    }

    /// `pointer` as it was written, before any key on its way was renamed.
    fn as_written<'p>(&self, pointer: &'p str) -> std::borrow::Cow<'p, str> {
        let written = self.renamed.iter().find_map(|(renamed, written)| {
            let rest = pointer.strip_prefix(renamed.as_str())?;
            (rest.is_empty() || rest.starts_with('/')).then(|| format!("{written}{rest}"))
        });
        written.map_or(std::borrow::Cow::Borrowed(pointer), std::borrow::Cow::Owned)
    }

    /// True when `pointer` names a node of the source.
    pub fn contains(&self, pointer: &str) -> bool {
        self.positions
            .contains_key(self.as_written(pointer).as_ref())
    }

    /// The source location of `pointer`, or of its nearest ancestor that exists. `at_key`
    /// points at the key rather than the value (for unknown or misplaced keys).
    pub fn locate(&self, pointer: &str, at_key: bool) -> Location {
        let written = self.as_written(pointer);
        let pointer = written.as_ref();
        let overlay = self
            .overlays
            .iter()
            .filter(|o| {
                pointer == o.prefix
                    || pointer
                        .strip_prefix(o.prefix.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
            .max_by_key(|o| o.prefix.len());
        if let Some(o) = overlay {
            let rest = &pointer[o.prefix.len()..];
            return o.map.locate(&format!("{}{rest}", o.target), at_key);
        }
        let mut p = pointer.to_string();
        loop {
            if let Some(pos) = self.positions.get(&p) {
                let exact = p == pointer;
                let span = match pos.key {
                    Some(k) if at_key || pos.collection || !exact => k,
                    _ => pos.value,
                };
                return self.location(span);
            }
            match p.rfind('/') {
                Some(i) => p.truncate(i),
                None if !p.is_empty() => p.clear(),
                None => break,
            }
        }
        self.location(Span {
            line: 1,
            col: 0,
            len: 1,
        })
    }

    /// The location of a span of this source.
    pub fn location(&self, span: Span) -> Location {
        let source_line = self.lines.get(span.line.saturating_sub(1)).cloned();
        Location {
            file: self.label.clone(),
            line: span.line.max(1),
            col: span.col + 1,
            len: span.len.max(1),
            source_line,
        }
    }

    /// A diagnostic at `pointer` of the document `doc`.
    pub fn error(&self, doc: &Value, pointer: &str, at_key: bool, message: String) -> Diagnostic {
        Diagnostic {
            path: display_path(doc, pointer),
            message,
            location: self.locate(pointer, at_key),
            hint: None,
            note: None,
        }
    }

    /// The positions under `prefix`, re-rooted (for the `plan` inside a report).
    pub fn rebase(&self, prefix: &str) -> SourceMap {
        let mut positions = HashMap::new();
        for (k, v) in &self.positions {
            if k == prefix {
                positions.insert(String::new(), *v);
            } else if let Some(rest) = k.strip_prefix(prefix).filter(|r| r.starts_with('/')) {
                positions.insert(rest.to_string(), *v);
            }
        }
        SourceMap {
            label: self.label.clone(),
            lines: self.lines.clone(),
            positions,
            overlays: Vec::new(),
            renamed: Vec::new(),
        }
    }

    fn span_from_bytes(&self, text: &str, range: std::ops::Range<usize>) -> Span {
        let start = range.start.min(text.len());
        let before = text.get(..start).unwrap_or("");
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = text.get(line_start..start).map_or(0, |s| s.chars().count());
        let end = range.end.clamp(start, text.len());
        let piece = text.get(start..end).unwrap_or("");
        let len = piece.split('\n').next().unwrap_or("").chars().count();
        Span { line, col, len }
    }
}

/// Parse plan text into a JSON document and its source map.
pub fn load_text(
    text: &str,
    format: Format,
    label: &str,
) -> Result<(Value, SourceMap), PlanErrors> {
    let mut map = SourceMap::new(label, text);
    let at = |map: &SourceMap, line: usize, col: usize, message: String| {
        PlanErrors::one(Diagnostic {
            path: String::new(),
            message,
            location: map.location(Span { line, col, len: 1 }),
            hint: None,
            note: None,
        })
    };
    if text.trim().is_empty() {
        return Err(at(&map, 1, 0, "the plan file is empty".into()).with_hint(
            "a plan needs at least `version`, `name`, `targets`, `workloads` and `phases`",
        ));
    }
    match format {
        Format::Yaml => load_yaml(text, map),
        Format::Json => {
            let value: Value = serde_json::from_str(text).map_err(|e| {
                at(
                    &map,
                    e.line(),
                    e.column().saturating_sub(1),
                    format!("invalid JSON: {}", strip_position(&e.to_string())),
                )
            })?;
            // JSON is YAML 1.2, so the YAML reader supplies positions; without them the
            // errors still name the key path.
            if let Ok((_, yaml_map)) = load_yaml(text, SourceMap::new(label, text)) {
                map = yaml_map;
            }
            Ok((value, map))
        }
        Format::Toml => {
            let value: Value = toml::from_str(text).map_err(|e| {
                let span = e.span().map(|r| map.span_from_bytes(text, r));
                let (line, col) = span.map_or((1, 0), |s| (s.line, s.col));
                at(&map, line, col, format!("invalid TOML: {}", e.message()))
            })?;
            if let Ok(table) = toml::de::DeTable::parse(text) {
                let root = map.span_from_bytes(text, table.span());
                map.place("", None, root, true);
                toml_positions(text, table.get_ref(), "", &mut map);
            }
            Ok((value, map))
        }
    }
}

fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

impl PlanErrors {
    fn with_hint(mut self, hint: &str) -> Self {
        if let Some(d) = self.diagnostics.last_mut() {
            d.hint = Some(hint.to_string());
        }
        self
    }
}

fn toml_positions(text: &str, table: &toml::de::DeTable<'_>, prefix: &str, map: &mut SourceMap) {
    for (key, value) in table {
        let pointer = format!("{prefix}/{}", escape(key.get_ref()));
        let key_span = map.span_from_bytes(text, key.span());
        toml_value_positions(text, value, pointer, Some(key_span), map);
    }
}

fn toml_value_positions(
    text: &str,
    value: &toml::Spanned<toml::de::DeValue<'_>>,
    pointer: String,
    key: Option<Span>,
    map: &mut SourceMap,
) {
    use toml::de::DeValue;
    let span = map.span_from_bytes(text, value.span());
    let collection = matches!(value.get_ref(), DeValue::Table(_) | DeValue::Array(_));
    map.place(&pointer, key, span, collection);
    match value.get_ref() {
        DeValue::Table(t) => toml_positions(text, t, &pointer, map),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                toml_value_positions(text, item, format!("{pointer}/{i}"), None, map);
            }
        }
        DeValue::String(_)
        | DeValue::Integer(_)
        | DeValue::Float(_)
        | DeValue::Boolean(_)
        | DeValue::Datetime(_) => {}
    }
}

fn load_yaml(text: &str, mut map: SourceMap) -> Result<(Value, SourceMap), PlanErrors> {
    let docs = MarkedYaml::load_from_str(text).map_err(|e| {
        let m = e.marker();
        let info = e.info();
        let mut d = Diagnostic {
            path: String::new(),
            message: format!("invalid YAML: {info}"),
            location: map.location(Span {
                line: m.line(),
                col: m.col(),
                len: 1,
            }),
            hint: None,
            note: None,
        };
        if info.contains("tab") {
            d.hint = Some("indent with spaces; YAML does not allow tabs for indentation".into());
        } else if info.contains("duplicate") {
            d.hint = Some("each key may appear once in a mapping".into());
        }
        PlanErrors::one(d)
    })?;
    let doc = match docs.as_slice() {
        [] => {
            return Err(PlanErrors::one(Diagnostic {
                path: String::new(),
                message: "the plan file holds no YAML document".into(),
                location: map.location(Span {
                    line: 1,
                    col: 0,
                    len: 1,
                }),
                hint: None,
                note: None,
            }));
        }
        [doc] => doc,
        [_, second, ..] => {
            let span = to_span(second, &map);
            return Err(PlanErrors::one(Diagnostic {
                path: String::new(),
                message: format!(
                    "the plan file holds {} YAML documents; a plan is one document",
                    docs.len()
                ),
                location: map.location(span),
                hint: Some("remove the `---` separator or split the file".into()),
                note: None,
            }));
        }
    };
    let mut errors = Vec::new();
    let value = yaml_to_json(doc, String::new(), None, &mut map, &mut errors);
    if errors.is_empty() {
        Ok((value, map))
    } else {
        Err(PlanErrors {
            diagnostics: errors,
        })
    }
}

fn to_span(node: &MarkedYaml<'_>, map: &SourceMap) -> Span {
    let start = node.span.start;
    let end = node.span.end;
    let len = if end.line() == start.line() && end.col() > start.col() {
        end.col() - start.col()
    } else {
        // Multi-line nodes: underline to the end of the first line.
        map.lines
            .get(start.line().saturating_sub(1))
            .map_or(1, |l| l.chars().count().saturating_sub(start.col()))
    };
    Span {
        line: start.line(),
        col: start.col(),
        len: len.max(1),
    }
}

fn yaml_to_json(
    node: &MarkedYaml<'_>,
    pointer: String,
    key: Option<Span>,
    map: &mut SourceMap,
    errors: &mut Vec<Diagnostic>,
) -> Value {
    let span = to_span(node, map);
    let collection = matches!(node.data, YamlData::Mapping(_) | YamlData::Sequence(_));
    map.place(&pointer, key, span, collection);
    let mut fail = |message: String, map: &SourceMap| {
        errors.push(Diagnostic {
            path: pointer_to_dotted(&pointer),
            message,
            location: map.location(span),
            hint: None,
            note: None,
        });
        Value::Null
    };
    match &node.data {
        YamlData::Value(scalar) => match scalar {
            Scalar::Null => Value::Null,
            Scalar::Boolean(b) => Value::Bool(*b),
            Scalar::Integer(i) => Value::from(*i),
            Scalar::FloatingPoint(f) => match serde_json::Number::from_f64(f.into_inner()) {
                Some(n) => Value::Number(n),
                None => fail(format!("`{}` is not a finite number", f.into_inner()), map),
            },
            Scalar::String(s) => Value::String(s.to_string()),
        },
        YamlData::Representation(text, _, _) => Value::String(text.to_string()),
        YamlData::Sequence(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| yaml_to_json(item, format!("{pointer}/{i}"), None, map, errors))
                .collect(),
        ),
        YamlData::Mapping(entries) => {
            let mut out = Map::new();
            for (k, v) in entries {
                let key_span = to_span(k, map);
                let Some(name) = key_name(k) else {
                    errors.push(Diagnostic {
                        path: pointer_to_dotted(&pointer),
                        message: "mapping keys must be plain names".into(),
                        location: map.location(key_span),
                        hint: None,
                        note: None,
                    });
                    continue;
                };
                let child = format!("{pointer}/{}", escape(&name));
                let value = yaml_to_json(v, child, Some(key_span), map, errors);
                out.insert(name, value);
            }
            Value::Object(out)
        }
        YamlData::Tagged(_, inner) => {
            // Tags add nothing to a plan; read the tagged value as if untagged.
            map.positions.remove(&pointer);
            yaml_to_json(inner, pointer, key, map, errors)
        }
        YamlData::Alias(_) => fail("unresolved YAML alias".into(), map),
        YamlData::BadValue => fail("this value cannot be read (bad tag or scalar)".into(), map),
    }
}

/// A mapping key as a name; `None` for keys that are not scalars.
fn key_name(key: &MarkedYaml<'_>) -> Option<String> {
    match &key.data {
        YamlData::Value(Scalar::String(s)) => Some(s.to_string()),
        YamlData::Value(Scalar::Integer(i)) => Some(i.to_string()),
        YamlData::Value(Scalar::Boolean(b)) => Some(b.to_string()),
        YamlData::Value(Scalar::FloatingPoint(f)) => Some(f.to_string()),
        YamlData::Value(Scalar::Null) => Some("null".to_string()),
        _ => None,
    }
}

/// Key path from a pointer alone (numbers become indices); used before the document exists.
fn pointer_to_dotted(pointer: &str) -> String {
    let mut out = String::new();
    for seg in segments(pointer) {
        if seg.parse::<usize>().is_ok() {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_positions_point_at_keys_and_values() {
        let text = "name: x\nphases:\n  - name: a\n    concurrency: sixteen\n";
        let (doc, map) = load_text(text, Format::Yaml, "p.yaml").unwrap();
        assert_eq!(doc["phases"][0]["concurrency"], "sixteen");
        let loc = map.locate("/phases/0/concurrency", false);
        assert_eq!((loc.line, loc.col, loc.len), (4, 18, 7));
        let key = map.locate("/phases/0/concurrency", true);
        assert_eq!((key.line, key.col, key.len), (4, 5, 11));
        assert_eq!(
            display_path(&doc, "/phases/0/concurrency"),
            "phases[0].concurrency"
        );
    }

    #[test]
    fn missing_keys_fall_back_to_the_parent() {
        let text = "a:\n  b: 1\n";
        let (_, map) = load_text(text, Format::Yaml, "p.yaml").unwrap();
        let loc = map.locate("/a/zzz", false);
        assert_eq!((loc.line, loc.col), (1, 1));
    }

    #[test]
    fn toml_and_json_have_positions() {
        let toml = "name = \"x\"\n[targets.sim]\nbase_url = 3\n";
        let (doc, map) = load_text(toml, Format::Toml, "p.toml").unwrap();
        assert_eq!(doc["targets"]["sim"]["base_url"], 3);
        let loc = map.locate("/targets/sim/base_url", false);
        assert_eq!((loc.line, loc.col), (3, 12));
        let json = "{\n  \"name\": 5\n}";
        let (_, map) = load_text(json, Format::Json, "p.json").unwrap();
        assert_eq!(map.locate("/name", false).line, 2);
    }

    #[test]
    fn syntax_errors_have_positions() {
        let err = load_text("a: [1, 2\n", Format::Yaml, "p.yaml").unwrap_err();
        assert_eq!(err.diagnostics[0].location.file, "p.yaml");
        let err = load_text("{\"a\": }", Format::Json, "p.json").unwrap_err();
        assert_eq!(err.diagnostics[0].location.line, 1);
    }
}
