//! The expanded plans of two runs, key by key: which settings differ (a target's simulator
//! speed, a phase's duration), as dotted paths such as `targets.sim.simulator.decode_ms_per_token`.

use serde::Serialize;
use serde_json::Value;

use crate::report::model::Report;

/// Plan keys listed at most; the rest are counted.
pub const PLAN_CHANGES_LISTED: usize = 20;

/// Longest value shown before it is cut.
const VALUE_CHARS: usize = 80;

/// One key of the expanded plan whose value differs; `None` where a side lacks the key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanChange {
    pub key: String,
    pub base: Option<String>,
    pub new: Option<String>,
}

/// How the two runs' plans differ: the plan file's hash, and the expanded plan's keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PlanDiff {
    /// The plan files' sha256 (base, new), when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<[String; 2]>,
    /// The first [`PLAN_CHANGES_LISTED`] keys that differ, in the plan's order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<PlanChange>,
    /// Keys that differ beyond those listed.
    #[serde(skip_serializing_if = "is_zero")]
    pub more: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl PlanDiff {
    pub fn is_empty(&self) -> bool {
        self.sha256.is_none() && self.changes.is_empty()
    }
}

/// The plan differences between two reports.
pub fn plan_diff(base: &Report, new: &Report) -> PlanDiff {
    let (b, n) = (&base.plan_source.sha256, &new.plan_source.sha256);
    let sha256 = (b != n).then(|| [b.clone(), n.clone()]);
    let mut changes = Vec::new();
    // A plan that fails to serialize has nothing to compare key by key.
    if let (Ok(b), Ok(n)) = (
        serde_json::to_value(&base.plan),
        serde_json::to_value(&new.plan),
    ) {
        diff(String::new(), Some(&b), Some(&n), &mut changes);
    }
    let more = changes.len().saturating_sub(PLAN_CHANGES_LISTED);
    changes.truncate(PLAN_CHANGES_LISTED);
    PlanDiff {
        sha256,
        changes,
        more,
    }
}

/// Every leaf under `key` that differs, depth first in the base's order, then the new side's
/// own keys.
fn diff(key: String, base: Option<&Value>, new: Option<&Value>, out: &mut Vec<PlanChange>) {
    if base == new {
        return;
    }
    match (base, new) {
        (Some(Value::Object(b)), Some(Value::Object(n))) => {
            for (k, bv) in b {
                diff(join(&key, k), Some(bv), n.get(k), out);
            }
            for (k, nv) in n.iter().filter(|(k, _)| !b.contains_key(*k)) {
                diff(join(&key, k), None, Some(nv), out);
            }
        }
        (Some(Value::Array(b)), Some(Value::Array(n))) => {
            for i in 0..b.len().max(n.len()) {
                let (bv, nv) = (b.get(i), n.get(i));
                // A named element (a phase) is keyed by its name when both sides agree on it.
                let label = match (bv.and_then(name), nv.and_then(name)) {
                    (Some(a), Some(b)) if a == b => a.to_string(),
                    _ => i.to_string(),
                };
                diff(join(&key, &label), bv, nv, out);
            }
        }
        _ => out.push(PlanChange {
            key,
            base: base.map(shown),
            new: new.map(shown),
        }),
    }
}

fn name(v: &Value) -> Option<&str> {
    v.get("name").and_then(Value::as_str)
}

fn join(key: &str, part: &str) -> String {
    if key.is_empty() {
        part.to_string()
    } else {
        format!("{key}.{part}")
    }
}

/// A value as one short line: a string bare, anything else as compact JSON, cut to
/// [`VALUE_CHARS`] characters.
fn shown(v: &Value) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        // A whole number that the plan holds as a float (`4.0`) reads as it was written.
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{f:.0}"),
            _ => n.to_string(),
        },
        other => other.to_string(),
    };
    if text.chars().count() > VALUE_CHARS {
        let cut: String = text.chars().take(VALUE_CHARS - 1).collect();
        format!("{cut}…")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differing_leaves_are_dotted_paths_and_phases_go_by_name() {
        let base = json!({
            "targets": {"sim": {"simulator": {"decode_ms_per_token": 4.0, "seed": 7}}},
            "phases": [{"name": "c1", "duration": "3s"}, {"name": "c8", "duration": "3s"}],
        });
        let new = json!({
            "targets": {"sim": {"simulator": {"decode_ms_per_token": 6.5, "seed": 7}}},
            "phases": [{"name": "c1", "duration": "1s"}, {"name": "c8", "duration": "3s"}, {"name": "c16"}],
        });
        let mut out = Vec::new();
        diff(String::new(), Some(&base), Some(&new), &mut out);
        let keys: Vec<(&str, Option<&str>, Option<&str>)> = out
            .iter()
            .map(|c| (c.key.as_str(), c.base.as_deref(), c.new.as_deref()))
            .collect();
        assert_eq!(
            keys,
            [
                (
                    "targets.sim.simulator.decode_ms_per_token",
                    Some("4"),
                    Some("6.5")
                ),
                ("phases.c1.duration", Some("3s"), Some("1s")),
                ("phases.2", None, Some(r#"{"name":"c16"}"#)),
            ]
        );
    }

    #[test]
    fn long_values_are_cut() {
        let long = "x".repeat(200);
        assert_eq!(shown(&Value::String(long)).chars().count(), VALUE_CHARS);
    }
}
