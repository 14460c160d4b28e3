//! The recheck pass: each recheck entry takes its original's settings, and may not contradict them.

use serde_json::Value;

use super::PhaseOrigin;
use crate::plan::schema::Issue;

/// Phase fields a recheck copies from its original and must not contradict.
pub const RECHECK_SETTINGS: [&str; 11] = [
    "target",
    "route",
    "workload",
    "concurrency",
    "rate",
    "duration",
    "requests",
    "warmup",
    "cooldown",
    "drain_timeout",
    "mix",
];

/// Give each recheck entry its original's settings; a setting it states must match.
pub(super) fn fill_rechecks(
    phases: &mut [Value],
    origins: &mut [PhaseOrigin],
    issues: &mut Vec<Issue>,
) {
    for i in 0..phases.len() {
        let Some(target) = phases[i]
            .get("recheck")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            continue;
        };
        let raw_pointer = format!("/phases/{}", origins[i].raw_index);
        if let Some(phase) = phases[i].as_object_mut()
            && !phase.contains_key("name")
        {
            phase.insert("name".into(), Value::String(format!("recheck-{target}")));
            origins[i]
                .sources
                .insert("name".into(), format!("{raw_pointer}/recheck"));
        }
        let found = phases[..i]
            .iter()
            .position(|p| p.get("name").and_then(Value::as_str) == Some(target.as_str()));
        let Some(j) = found else {
            // Dangling or forward references are reported by the check pass.
            continue;
        };
        let original = phases[j].clone();
        let original_origin = origins[j].clone();
        let Some(phase) = phases[i].as_object_mut() else {
            continue;
        };
        for field in RECHECK_SETTINGS {
            let theirs = original.get(field);
            match (phase.get(field), theirs) {
                (Some(mine), Some(theirs)) if mine == theirs => {}
                (Some(mine), theirs) => {
                    let theirs_text =
                        theirs.map_or_else(|| "not set".to_string(), |t| t.to_string());
                    issues.push(
                        Issue::new(
                            format!("{raw_pointer}/{field}"),
                            format!(
                                "`{field}` is {mine} here but {theirs_text} in `{target}`; a recheck repeats its original's settings exactly"
                            ),
                        )
                        .hint(Some(format!("remove `{field}` from the recheck, or make it a new phase"))),
                    );
                }
                (None, Some(theirs)) => {
                    phase.insert(field.to_string(), theirs.clone());
                    let source = original_origin
                        .sources
                        .get(field)
                        .cloned()
                        .unwrap_or_else(|| {
                            format!("/phases/{}/{field}", original_origin.raw_index)
                        });
                    origins[i].sources.insert(field.to_string(), source);
                }
                (None, None) => {}
            }
        }
    }
}
