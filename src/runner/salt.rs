//! The run's salt and what each phase asked for: one salt per run keeps a rerun's prompts out
//! of the previous run's prefix cache, and a phase's work hash leaves the salt (and the
//! phase's name) out, so two runs of one plan asked for the same work.

use serde_json::{Value, json};

use crate::plan::{Plan, SaltMode};
use crate::report::SaltUsed;
use crate::schedule::PhaseSettings;

use super::options::RunOptions;

/// The run's salt as one phase carries it.
#[derive(Debug, Clone, Copy)]
pub(super) struct PhaseSalt<'a> {
    pub value: &'a str,
    pub used: SaltUsed,
}

impl PhaseSalt<'_> {
    /// The salt the prompts' text carries (`salt: text`).
    pub fn text(&self) -> Option<String> {
        (self.used == SaltUsed::Text).then(|| self.value.to_string())
    }

    /// Adds `cache_salt` to a request body (`salt: cache_salt`).
    pub fn add_to_body(&self, body: &mut serde_json::Map<String, Value>) {
        if self.used == SaltUsed::CacheSalt {
            body.insert("cache_salt".into(), Value::String(self.value.to_string()));
        }
    }
}

/// The run's salt: `--salt`, else (sharded runs with `--start-at`) one every shard derives
/// from the plan and the start time, else a fresh random one.
pub(super) fn run_salt(options: &RunOptions, plan: &Plan) -> String {
    if let Some(salt) = &options.salt {
        return salt.clone();
    }
    match (options.shard, options.start_at) {
        (Some(_), Some(start_at)) => {
            let shared = json!({
                "plan": crate::schedule::plan_sha256(plan),
                "start_at": start_at.to_rfc3339(),
            });
            crate::schedule::canonical_sha256(&shared)[..16].to_string()
        }
        _ => format!("{:016x}", rand::random::<u64>()),
    }
}

/// How a phase's prompts carry the salt: `auto` is `cache_salt` where the target's engine
/// takes one (`takes_cache_salt`), else the text.
pub(super) fn salt_used(mode: Option<SaltMode>, takes_cache_salt: bool) -> SaltUsed {
    match mode.unwrap_or_default() {
        SaltMode::Auto if takes_cache_salt => SaltUsed::CacheSalt,
        SaltMode::Auto | SaltMode::Text => SaltUsed::Text,
        SaltMode::CacheSalt => SaltUsed::CacheSalt,
        SaltMode::None => SaltUsed::None,
    }
}

/// Whether an engine, as its server names itself, takes a `cache_salt` request field.
pub(super) fn engine_takes_cache_salt(engine: Option<&str>) -> bool {
    matches!(engine, Some("vllm" | "servebench-sim"))
}

/// sha256 of the work `phase` asked for: its expanded settings without its name, its
/// workload, and its target's API and model. No URL and no salt, so every run of one plan,
/// wherever its target lives, hashes alike.
pub(super) fn work_sha256(plan: &Plan, phase: &PhaseSettings<'_>, model: &str) -> Option<String> {
    let expanded = plan
        .phases
        .iter()
        .find(|p| p.name.as_deref() == Some(phase.name))?;
    let mut settings = serde_json::to_value(expanded).ok()?;
    if let Value::Object(map) = &mut settings {
        map.remove("name");
    }
    // A mix's work is every archetype's workload.
    let workload = if phase.archetypes.is_empty() {
        serde_json::to_value(phase.workload).ok()?
    } else {
        let each = phase.archetypes.iter().map(|a| (a.name, a.workload));
        serde_json::to_value(each.collect::<indexmap::IndexMap<_, _>>()).ok()?
    };
    let work = json!({
        "phase": settings,
        "workload": workload,
        "api": serde_json::to_value(phase.target.api).ok()?,
        "model": model,
    });
    Some(crate::schedule::canonical_sha256(&work))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_takes_cache_salt_only_where_the_engine_does() {
        assert_eq!(salt_used(None, true), SaltUsed::CacheSalt);
        assert_eq!(salt_used(None, false), SaltUsed::Text);
        assert_eq!(salt_used(Some(SaltMode::Text), true), SaltUsed::Text);
        assert_eq!(
            salt_used(Some(SaltMode::CacheSalt), false),
            SaltUsed::CacheSalt
        );
        assert_eq!(salt_used(Some(SaltMode::None), true), SaltUsed::None);
        assert!(engine_takes_cache_salt(Some("vllm")));
        assert!(!engine_takes_cache_salt(Some("llama.cpp")));
        assert!(!engine_takes_cache_salt(None));
    }
}
