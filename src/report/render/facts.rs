//! The facts atop a report: plan, targets, the plan's metadata, run, timing and client. The
//! markdown and HTML heads print them as a two-column table.

use serde_json::Value;

use super::numfmt::sig3;
use crate::report::model::Report;
use crate::report::model::provenance::differing_shard_salts;

/// A fact's value: a line of text, or a list (the items of a metadata list or map).
#[derive(Debug, Clone, PartialEq)]
pub enum FactValue {
    Text(String),
    List(Vec<String>),
}

/// `(label, value)` pairs describing the run, in the order the head shows them.
pub fn header_facts(report: &Report) -> Vec<(String, FactValue)> {
    let text = |label: &str, value: String| (label.to_string(), FactValue::Text(value));
    let plan = &report.plan;
    let mut facts = vec![text(
        "Plan",
        format!(
            "{} ({}{})",
            plan.name,
            report.plan_source.path,
            short_sha(&report.plan_source.sha256)
        ),
    )];
    if let Some(d) = &plan.description {
        facts.push(text("Description", d.clone()));
    }
    let targets: Vec<String> = plan
        .targets
        .iter()
        .map(|(name, t)| {
            let place = match (&t.base_url, &t.simulator) {
                (Some(url), _) => Some(url.clone()),
                (None, Some(_)) => Some("embedded simulator".to_string()),
                (None, None) => None,
            };
            match (place, &t.model) {
                (Some(p), Some(m)) => format!("{name}: {p}, model {m}"),
                (Some(p), None) => format!("{name}: {p}"),
                (None, Some(m)) => format!("{name} (model {m})"),
                (None, None) => name.clone(),
            }
        })
        .collect();
    facts.push(text("Targets", targets.join("; ")));
    for (key, value) in &report.metadata {
        facts.push((metadata_label(key), metadata_value(value)));
    }
    facts.push(text("Run", report.span.run_id.clone()));
    facts.push(text("Started", report.span.started_at.clone()));
    let finished = report.span.finished_at.clone();
    facts.push(text(
        "Finished",
        finished.unwrap_or_else(|| "not recorded (in progress, or not stated)".to_string()),
    ));
    facts.push(text(
        "Tool",
        format!("{} {}", report.tool.name, report.tool.version),
    ));
    facts.extend(provenance_facts(report));
    let status = match (report.span.partial, &report.span.stop_reason) {
        (true, Some(r)) => format!("PARTIAL: {r}"),
        (true, None) => "PARTIAL".to_string(),
        (false, _) => "complete".to_string(),
    };
    facts.push(text("Status", status));
    let outages: Vec<String> = report
        .phases
        .iter()
        .flat_map(|p| {
            p.outages
                .iter()
                .map(move |o| format!("phase `{}`: target {}", p.header.phase, o.describe()))
        })
        .collect();
    if !outages.is_empty() {
        facts.push(("Target outages".to_string(), FactValue::List(outages)));
    }
    if let Some(client) = client_fact(report) {
        facts.push(text("Client", client));
    }
    let percentiles = match report.timing_methodology.percentile_method {
        crate::plan::PercentileMethod::Linear => "linear interpolation",
        crate::plan::PercentileMethod::NearestRank => "nearest rank",
    };
    facts.push(text("Percentiles", percentiles.to_string()));
    facts
}

/// Words a metadata key often holds that read wrong with only a capital first letter.
const ACRONYMS: [&str; 7] = ["api", "cpu", "gpu", "id", "kv", "tpu", "url"];

/// A metadata key as a label in sentence case, like the others: `gpu_count` → `GPU count`.
fn metadata_label(key: &str) -> String {
    let words: Vec<String> = key
        .split('_')
        .enumerate()
        .map(|(i, word)| {
            if ACRONYMS.contains(&word) {
                word.to_uppercase()
            } else if i == 0 {
                let mut chars = word.chars();
                chars
                    .next()
                    .map(|first| first.to_uppercase().chain(chars).collect())
                    .unwrap_or_default()
            } else {
                word.to_string()
            }
        })
        .collect();
    words.join(" ")
}

/// A list or a map becomes one item per entry; any other value one line of text.
fn metadata_value(value: &Value) -> FactValue {
    match value {
        Value::Array(items) if !items.is_empty() => {
            FactValue::List(items.iter().map(inline_value).collect())
        }
        Value::Object(map) if !map.is_empty() => FactValue::List(
            map.iter()
                .map(|(k, v)| format!("{k}: {}", inline_value(v)))
                .collect(),
        ),
        other => FactValue::Text(inline_value(other)),
    }
}

/// A value on one line: a string as it is, a nested list or map joined by commas.
fn inline_value(value: &Value) -> String {
    let joined = |parts: Vec<String>| {
        if parts.is_empty() {
            "–".to_string()
        } else {
            parts.join(", ")
        }
    };
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "–".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) => joined(items.iter().map(inline_value).collect()),
        Value::Object(map) => joined(
            map.iter()
                .map(|(k, v)| format!("{k}: {}", inline_value(v)))
                .collect(),
        ),
    }
}

/// Where the run came from, when the report says: each server as it stated itself, the
/// plan's commit, the prompts' salt and the phases that sent byte-identical prompts.
fn provenance_facts(report: &Report) -> Vec<(String, FactValue)> {
    let Some(p) = &report.provenance else {
        return Vec::new();
    };
    let mut facts = Vec::new();
    let servers: Vec<String> = p
        .servers
        .iter()
        .map(|s| {
            let mut parts = vec![s.target.clone()];
            let engine = [s.engine.as_deref(), s.engine_version.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
            if !engine.is_empty() {
                parts.push(engine);
            }
            if let Some(up) = s.uptime_s {
                parts.push(format!("up {} s", sig3(up)));
            }
            parts.join(", ")
        })
        .collect();
    if !servers.is_empty() {
        facts.push(("Servers".to_string(), FactValue::List(servers)));
    }
    if let Some(repo) = &p.repository {
        let dirty = if repo.dirty {
            " (uncommitted changes)"
        } else {
            ""
        };
        facts.push((
            "Plan commit".to_string(),
            FactValue::Text(format!(
                "{}{dirty}",
                repo.commit.get(..12).unwrap_or(&repo.commit)
            )),
        ));
    }
    let identical: Vec<&str> = report
        .phases
        .iter()
        .filter(|ph| ph.header.prompt_salt == Some(crate::report::model::SaltUsed::None))
        .map(|ph| ph.header.phase.as_str())
        .collect();
    let per_shard = differing_shard_salts(report);
    let salt = match (&p.salt, per_shard.is_empty()) {
        (Some(salt), _) => Some(format!("run salt {salt}")),
        (None, false) => Some(format!(
            "a salt per shard ({}): the shards ran without one shared --salt or --start-at",
            per_shard
                .iter()
                .map(|(index, salt)| format!("{index}: {}", salt.unwrap_or("none")))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        (None, true) => None,
    };
    if let Some(mut line) = salt {
        if !identical.is_empty() {
            line.push_str(&format!(
                "; byte-identical prompts on purpose (salt: none) in {}",
                identical.join(", ")
            ));
        }
        facts.push(("Prompts".to_string(), FactValue::Text(line)));
    }
    facts
}

/// The client's own limits, when the run measured them: ceiling, wake latency, wake hint.
fn client_fact(report: &Report) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(c) = &report.client_calibration {
        parts.push(format!(
            "ceiling {} req/s, {} events/s",
            sig3(c.requests_per_second),
            sig3(c.events_per_second)
        ));
        if let Some(w) = &c.wake_latency {
            let slow = if w.p99_ms > crate::wakeup::SLOW_WAKE_MS {
                " (slow: timings can be off by this much)"
            } else {
                ""
            };
            parts.push(format!("wakeup late by p99 {} ms{slow}", sig3(w.p99_ms)));
        }
    }
    if let Some(hint) = &report.host.cpu_latency_hint {
        parts.push(match hint.status {
            crate::wakeup::HintStatus::Held => "CPU wake-latency hint held".to_string(),
            crate::wakeup::HintStatus::Off => "CPU wake-latency hint off".to_string(),
            crate::wakeup::HintStatus::Unavailable => {
                "CPU wake-latency hint unavailable".to_string()
            }
        });
    }
    if report.client_busy_poll {
        parts.push("busy polling".to_string());
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn short_sha(sha: &str) -> String {
    if sha.is_empty() {
        String::new()
    } else {
        format!(", sha256 {}", sha.get(..12).unwrap_or(sha))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(s: &str) -> FactValue {
        FactValue::Text(s.to_string())
    }

    #[test]
    fn every_kind_of_metadata_value_reads_as_text_or_a_list() {
        let cases = [
            (json!("vllm 0.26"), text("vllm 0.26")),
            (json!(8), text("8")),
            (json!(0.5), text("0.5")),
            (json!(true), text("true")),
            (json!(null), text("–")),
            (json!([]), text("–")),
            (json!({}), text("–")),
            (
                json!(["simulated", 2, ["a", "b"]]),
                FactValue::List(vec!["simulated".into(), "2".into(), "a, b".into()]),
            ),
            (
                json!({"count": 8, "type": "H100", "links": {"nvlink": true}}),
                FactValue::List(vec![
                    "count: 8".into(),
                    "type: H100".into(),
                    "links: nvlink: true".into(),
                ]),
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(metadata_value(&value), expected, "{value}");
        }
    }

    #[test]
    fn metadata_keys_are_labels_in_sentence_case() {
        assert_eq!(metadata_label("engine"), "Engine");
        assert_eq!(metadata_label("gpu_count"), "GPU count");
        assert_eq!(metadata_label("max_context_tokens"), "Max context tokens");
        assert_eq!(metadata_label("engine_kv_cache"), "Engine KV cache");
        assert_eq!(metadata_label("GPU"), "GPU");
        assert_eq!(metadata_label("ñame"), "Ñame");
        assert_eq!(metadata_label(""), "");
    }

    #[test]
    fn the_metadata_sits_between_the_targets_and_the_run() {
        let mut report = crate::report::sample_report();
        report.metadata = [("notes".to_string(), json!(["one", "two"]))]
            .into_iter()
            .collect();
        let facts = header_facts(&report);
        let labels: Vec<&str> = facts.iter().map(|(l, _)| l.as_str()).collect();
        let at = labels.iter().position(|l| *l == "Notes").expect("notes");
        assert_eq!(labels[at - 1], "Targets");
        assert_eq!(labels[at + 1], "Run");
        assert_eq!(
            facts[at].1,
            FactValue::List(vec!["one".into(), "two".into()])
        );
    }
}
