//! Starter plans for `servebench init`: what was found at a target, written as a commented plan.

/// What probing a target found, and why each choice was made.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovery {
    /// The target's name in the plan.
    pub target_name: String,
    /// `None` writes a plan for the embedded simulator.
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// Where the model name came from (a comment in the plan).
    pub model_note: String,
    /// `server`, `builtin` or `simulator`.
    pub tokenizer: &'static str,
    pub tokenizer_note: String,
    /// The server's Prometheus endpoint, written as the target's `metrics:`.
    pub metrics_url: Option<String>,
    pub metrics_note: String,
}

impl Discovery {
    /// The embedded simulator, which needs no probing.
    pub fn simulator(target_name: &str) -> Discovery {
        Discovery {
            target_name: target_name.to_string(),
            base_url: None,
            model: None,
            model_note:
                "the simulator serves model `sim`, or the name `model:` gives here; like a \
                         real server it answers 404 to any other"
                    .into(),
            tokenizer: "simulator",
            tokenizer_note: "the simulator's documented tokenizer counts exactly what it serves"
                .into(),
            metrics_url: None,
            metrics_note: "a simulator target is scraped at its own /metrics".into(),
        }
    }
}

fn comment_lines(indent: &str, text: &str) -> String {
    text.lines().map(|l| format!("{indent}# {l}\n")).collect()
}

/// Quote a string for YAML when it is not a plain scalar.
fn yaml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

/// A name as a YAML key or value: plain when YAML reads it back as that string, else quoted.
fn yaml_name(name: &str) -> String {
    let plain = name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        && !matches!(
            name.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
        );
    if plain {
        name.to_string()
    } else {
        yaml_str(name)
    }
}

/// The plan's name for a file: its stem, or for the default `plan.yaml` the server's model
/// (else `starter`); kept to letters, digits, `.`, `_` and `-` (a run directory starts with it).
pub fn plan_name(file: &str, model: Option<&str>) -> String {
    let stem = std::path::Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base = match (stem.as_str(), model) {
        ("plan" | "", Some(model)) => model.rsplit('/').next().unwrap_or(model).to_string(),
        ("plan" | "", None) => "starter".to_string(),
        (stem, _) => stem.to_string(),
    };
    let name: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches(|c| c == '-' || c == '.').to_string();
    if name.is_empty() {
        "starter".to_string()
    } else {
        name
    }
}

/// A starter plan written to `file`: a warmup, a short closed-loop concurrency sweep and a
/// recheck of its first point, with comments saying why each setting is there.
pub fn starter_plan(d: &Discovery, file: &str) -> String {
    let simulated = d.base_url.is_none();
    let (duration, concurrencies) = if simulated {
        ("3s", "[1, 4, 8]")
    } else {
        ("30s", "[1, 4, 16]")
    };
    let target = target_section(d);
    let name = yaml_name(&d.target_name);
    let plan_name = plan_name(file, d.model.as_deref());
    let about = match &d.base_url {
        Some(url) => format!("against {url}"),
        None => "against the embedded simulator".into(),
    };
    format!(
        "\
# A starter plan written by `servebench init`. Check it, then run it:
#   servebench validate {file}
#   servebench run {file} --set duration=5s     # a quick first pass
# For hover help and checking in an editor, save the schema next to it
# (servebench schema plan > plan.schema.json) and add this line at the top:
#   # yaml-language-server: $schema=plan.schema.json
version: 1
name: {plan_name}
description: A warmup, a short closed-loop concurrency sweep and a recheck {about}.

vars:
  # Measured time per phase; `--set duration=…` changes it for one run.
  duration: {duration}
  # One phase per value, in this order.
  concurrencies: {concurrencies}

seed: 1

targets:
  {name}:
{target}
workloads:
  chat:
    # Prompt tokens as the server counts them (chat template included) and max_tokens.
    input_tokens: 512
    output_tokens: 128
    temperature: 0
    # Every request generates output_tokens, so phases are comparable.
    ignore_eos: true

defaults:
  target: {name}
  workload: chat
  duration: \"{{{{ duration }}}}\"
  warmup: {{requests: 2}}

phases:
  # Not for comparison: first requests pay for JIT compilation, graph capture and cold caches.
  - name: warmup
    concurrency: 4
  # The sweep: closed loop, one phase per concurrency.
  - name: \"c{{{{ concurrency }}}}\"
    matrix:
      concurrency: \"{{{{ concurrencies }}}}\"
  # The first point again: a large drift means the server was still warming up.
  - name: c1-recheck
    recheck: c1
    tolerance: {{default: 0.25}}
"
    )
}

/// The `server` target's settings, each with the note on how it was found.
fn target_section(d: &Discovery) -> String {
    let simulated = d.base_url.is_none();
    let mut target = String::new();
    match &d.base_url {
        Some(url) => target.push_str(&format!("    base_url: {}\n", yaml_str(url))),
        None => target.push_str("    simulator: {seed: 1}\n"),
    }
    target.push_str(&comment_lines("    ", &d.model_note));
    match &d.model {
        Some(model) => target.push_str(&format!("    model: {}\n", yaml_str(model))),
        None if !simulated => target.push_str("    # model: NAME\n"),
        None => {}
    }
    target.push_str(&comment_lines("    ", &d.tokenizer_note));
    target.push_str(&format!("    tokenizer: {}\n", d.tokenizer));
    target.push_str(&comment_lines("    ", &d.metrics_note));
    if let Some(url) = &d.metrics_url {
        target.push_str(&format!("    metrics: {}\n", yaml_str(url)));
    }
    if !simulated {
        target.push_str("    # api_key_env: OPENAI_API_KEY   # the variable holding the key, if one is needed\n");
    }
    target
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ExpandOptions, prepare_from_str, source::Format};

    #[test]
    fn the_plan_is_named_from_its_file_or_the_model() {
        assert_eq!(plan_name("nightly.yaml", Some("m")), "nightly");
        assert_eq!(plan_name("plans/gpu box.yaml", None), "gpu-box");
        assert_eq!(plan_name("plan.yaml", Some("Qwen/Qwen3-8B")), "Qwen3-8B");
        assert_eq!(plan_name("plan.yaml", None), "starter");
    }

    #[test]
    fn starter_plans_load() {
        let remote = Discovery {
            target_name: "vllm".into(),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            model: Some("m".into()),
            model_note: "from /v1/models".into(),
            tokenizer: "builtin",
            tokenizer_note: "no /tokenize".into(),
            metrics_url: Some("http://127.0.0.1:9/metrics".into()),
            metrics_note: "found".into(),
        };
        for d in [Discovery::simulator("server"), remote] {
            let text = starter_plan(&d, "plan.yaml");
            let loaded =
                prepare_from_str(&text, Format::Yaml, "plan.yaml", &ExpandOptions::default())
                    .unwrap_or_else(|e| panic!("{e}\n{text}"));
            let names: Vec<_> = loaded
                .plan
                .phases
                .iter()
                .filter_map(|p| p.name.clone())
                .collect();
            assert_eq!(names.first().map(String::as_str), Some("warmup"));
            assert_eq!(names.last().map(String::as_str), Some("c1-recheck"));
            assert!(names.len() == 5, "{names:?}");
            assert!(loaded.plan.targets.contains_key(&d.target_name), "{text}");
        }
    }
}
