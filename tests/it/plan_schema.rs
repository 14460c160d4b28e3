//! The committed plan schemas under a second JSON-Schema implementation (boon): every plan we
//! ship validates under the authoring schema, its expansion under the expanded schema, and
//! the invalid fixtures that are schema mistakes fail.

use std::path::{Path, PathBuf};

use serde_json::Value;
use servebench::plan::source::{Format, load_text};
use servebench::plan::{self, ExpandOptions};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A compiled committed schema.
struct Checker {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl Checker {
    fn committed(file: &str) -> Checker {
        Checker::from_value(file, read_json(&root().join("schemas").join(file)))
    }

    fn from_value(name: &str, schema: Value) -> Checker {
        let url = format!("file:///schemas/{name}");
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource(&url, schema)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut schemas = boon::Schemas::new();
        let index = compiler
            .compile(&url, &mut schemas)
            .unwrap_or_else(|e| panic!("{name} does not compile: {e:#}"));
        Checker { schemas, index }
    }

    /// Every violation, one line each; empty when valid.
    fn errors(&self, doc: &Value) -> String {
        match self.schemas.validate(doc, self.index) {
            Ok(()) => String::new(),
            Err(e) => format!("{e:#}"),
        }
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let label = path.display().to_string();
    match load_text(&text, Format::from_path(path), &label) {
        Ok((doc, _)) => doc,
        Err(e) => panic!("{label} does not parse:\n{e}"),
    }
}

/// Plan files under `dir`, recursively: YAML/TOML/JSON files that name the plan schema in
/// their first line (other YAML, such as Kubernetes manifests, is not a plan).
fn plans_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            plans_under(&p, out);
        } else if std::fs::read_to_string(&p).is_ok_and(|t| {
            t.lines()
                .next()
                .is_some_and(|l| l.contains("plan.schema.json"))
        }) {
            out.push(p);
        }
    }
}

fn shipped_plans() -> Vec<PathBuf> {
    let mut out = Vec::new();
    plans_under(&root().join("plans"), &mut out);
    plans_under(&root().join("examples"), &mut out);
    out
}

/// The README's fenced YAML blocks, with the line each starts on.
fn doc_yaml_blocks() -> Vec<(String, String)> {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    let mut blocks = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(root()).unwrap().display().to_string();
        let mut current: Option<(usize, String)> = None;
        let mut vars_file = false;
        let mut baselines_file = false;
        for (i, line) in text.lines().enumerate() {
            let fence = line.trim_start();
            match current.as_mut() {
                // `yaml` with an info string after it (`yaml file=NAME`) is YAML too.
                None if fence == "```yaml" || fence.starts_with("```yaml ") => {
                    current = Some((i + 2, String::new()));
                    vars_file = fence.contains("vars");
                    baselines_file = fence.contains("baselines");
                }
                None => {}
                Some(_) if fence == "```" => {
                    // A `--vars` file is any mapping of names to values: nothing to check.
                    // A baselines file has its own parser, checked below.
                    let Some((l, body)) = current.take() else {
                        continue;
                    };
                    if baselines_file {
                        servebench::history::baseline::parse(&body, "baselines.yaml")
                            .unwrap_or_else(|e| panic!("{name}:{l}: {e}"));
                    } else if !vars_file {
                        blocks.push((format!("{name}:{l}"), body));
                    }
                }
                Some((_, body)) => {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    blocks
}

#[test]
fn every_shipped_plan_validates_under_the_authoring_schema() {
    let authoring = Checker::committed("plan.schema.json");
    let plans = shipped_plans();
    assert!(plans.len() >= 6, "{plans:?}");
    let mut failures = String::new();
    for p in &plans {
        let errors = authoring.errors(&load(p));
        if !errors.is_empty() {
            failures.push_str(&format!("{}:\n{errors}\n", p.display()));
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn every_expanded_plan_validates_under_the_expanded_schema() {
    let expanded = Checker::committed("plan.expanded.schema.json");
    let authoring = Checker::committed("plan.schema.json");
    for p in shipped_plans() {
        let loaded = plan::prepare(&p, &ExpandOptions::default())
            .unwrap_or_else(|e| panic!("{}:\n{e}", p.display()));
        let doc = plan::to_document(&loaded.plan);
        let errors = expanded.errors(&doc);
        assert!(errors.is_empty(), "{}:\n{errors}", p.display());
        // A concrete plan is also a valid authoring plan.
        assert!(authoring.errors(&doc).is_empty(), "{}", p.display());
    }
}

#[test]
fn templates_are_accepted_only_by_the_authoring_schema() {
    let authoring = Checker::committed("plan.schema.json");
    let expanded = Checker::committed("plan.expanded.schema.json");
    let doc = load(&root().join("plans/sweep.yaml"));
    assert!(authoring.errors(&doc).is_empty());
    let errors = expanded.errors(&doc);
    assert!(
        errors.contains("{{"),
        "a template is not concrete:\n{errors}"
    );
    // Strict stays strict: a misspelt key or a bad literal fails with templates around.
    let mut typo = doc.clone();
    typo["defaults"]["duraton"] = Value::from("60s");
    assert!(!authoring.errors(&typo).is_empty());
    let mut literal = doc;
    literal["defaults"]["duration"] = Value::from("sixty seconds");
    assert!(!authoring.errors(&literal).is_empty());
}

#[test]
fn readme_and_docs_yaml_blocks_validate() {
    let authoring = plan::schema::plan_schema();
    // Fragments are checked against the definition they belong to, with nothing required.
    let mut partial_plan = authoring.clone();
    for key in ["required", "if", "then", "else"] {
        partial_plan.as_object_mut().unwrap().remove(key);
    }
    let mut partial_sim = authoring.clone();
    let sim = authoring["$defs"]["SimConfig"].clone();
    let sim_keys: Vec<String> = sim["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let plan_keys: Vec<String> = authoring["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    for (k, v) in sim.as_object().unwrap() {
        if k != "required" {
            partial_sim[k] = v.clone();
        }
    }
    for key in ["required", "if", "then", "else"] {
        partial_sim.as_object_mut().unwrap().remove(key);
    }
    let full = Checker::from_value("plan.schema.json", authoring);
    let plan_fragment = Checker::from_value("plan-fragment.json", partial_plan);
    let sim_fragment = Checker::from_value("sim-fragment.json", partial_sim);

    let blocks = doc_yaml_blocks();
    assert!(!blocks.is_empty());
    let mut checked = 0;
    for (line, body) in blocks {
        let doc = load_text(&body, Format::Yaml, "README.md")
            .unwrap_or_else(|e| panic!("{line}:\n{e}"))
            .0;
        let keys: Vec<&String> = doc
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        let checker = if doc.get("phases").is_some() && doc.get("version").is_some() {
            &full
        } else if keys.iter().all(|k| plan_keys.contains(k)) {
            &plan_fragment
        } else if keys.iter().all(|k| sim_keys.contains(k)) {
            &sim_fragment
        } else {
            panic!("{line}: a YAML block that is neither a plan nor part of one")
        };
        let errors = checker.errors(&doc);
        assert!(errors.is_empty(), "{line}:\n{errors}");
        checked += 1;
    }
    assert!(checked >= 2);
}

/// Invalid fixtures whose mistake is one the schema itself can see (shape, type, enum,
/// range, unknown key). The others are caught by expansion or semantic checks.
const SCHEMA_MISTAKES: &[&str] = &[
    "bad-arrival.yaml",
    "bad-duration.yaml",
    "bad-enum-api.yaml",
    "duration-without-unit.yaml",
    "huge-number.yaml",
    "matrix-not-a-list.yaml",
    "missing-name.yaml",
    "negative-concurrency.yaml",
    "quoted-number.yaml",
    "root-is-a-list.yaml",
    "search-unknown-objective.yaml",
    "tolerance-unknown-key.yaml",
    "unknown-key-phase.yaml",
    "unknown-key-top.yaml",
    "unknown-key.json",
    "unknown-simulator-key.yaml",
    "wrong-type-concurrency.yaml",
    "wrong-type.toml",
    "zero-concurrency.yaml",
];

#[test]
fn invalid_fixtures_that_are_schema_mistakes_fail_the_authoring_schema() {
    let authoring = Checker::committed("plan.schema.json");
    let passing: Vec<&str> = SCHEMA_MISTAKES
        .iter()
        .copied()
        .filter(|name| {
            let path = root().join("tests/fixtures/invalid").join(name);
            authoring.errors(&load(&path)).is_empty()
        })
        .collect();
    assert!(
        passing.is_empty(),
        "these pass the authoring schema: {passing:?}"
    );
}

#[test]
fn every_field_of_the_authoring_schema_has_a_description() {
    fn walk(schema: &Value, at: &str, missing: &mut Vec<String>) {
        match schema {
            Value::Object(obj) => {
                if let Some(Value::Object(props)) = obj.get("properties") {
                    for (k, v) in props {
                        if v.get("description").is_none() {
                            missing.push(format!("{at}.{k}"));
                        }
                    }
                }
                for (k, v) in obj {
                    walk(v, &format!("{at}/{k}"), missing);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, at, missing)),
            _ => {}
        }
    }
    let mut missing = Vec::new();
    walk(&plan::schema::plan_schema(), "", &mut missing);
    assert!(
        missing.is_empty(),
        "fields without a description: {missing:#?}"
    );
}
