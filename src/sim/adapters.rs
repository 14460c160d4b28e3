//! Simulated LoRA adapters: names served beside the base model, a load delay on first use
//! and a cap on adapters resident at once, the least recently used evicted to make room.

use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::duration::HumanDuration;

/// `adapters:` in the simulator's settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimAdapters {
    /// Adapter names served beside the base model (and listed by `/v1/models`).
    pub names: Vec<String>,
    /// How long loading an adapter that is not resident takes; its requests wait for it
    /// (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_delay: Option<HumanDuration>,
    /// Adapters resident at once, like vLLM's `--max-loras`; loading another evicts the least
    /// recently used (default: all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_resident: Option<u32>,
}

/// Resolved adapter settings.
#[derive(Debug, Clone)]
pub(crate) struct AdapterSettings {
    pub names: Vec<String>,
    pub load_delay: Duration,
    pub max_resident: usize,
}

/// The adapter settings, or a problem for each bad value.
pub(crate) fn resolve(
    config: Option<&SimAdapters>,
    base_model: &str,
    problems: &mut Vec<String>,
) -> Option<AdapterSettings> {
    let config = config?;
    for (i, name) in config.names.iter().enumerate() {
        if name.is_empty() {
            problems.push(format!("adapters.names[{i}] must not be empty"));
        } else if name == base_model {
            problems.push(format!(
                "adapters.names[{i}]: `{name}` is the base model's name"
            ));
        } else if config.names[..i].contains(name) {
            problems.push(format!("adapters.names[{i}]: `{name}` is listed twice"));
        }
    }
    if config.max_resident == Some(0) {
        problems.push("adapters.max_resident must be at least 1".to_string());
    }
    Some(AdapterSettings {
        names: config.names.clone(),
        load_delay: config.load_delay.map_or(Duration::ZERO, |d| d.0),
        max_resident: config
            .max_resident
            .map_or(config.names.len(), |n| n as usize)
            .max(1),
    })
}

/// The adapters resident now, and what loading them cost so far.
pub(crate) struct AdapterPool {
    settings: AdapterSettings,
    /// Resident adapters with the time each is (or was) ready, least recently used first.
    resident: Mutex<Vec<(String, Instant)>>,
    loads: AtomicU64,
    evictions: AtomicU64,
}

impl AdapterPool {
    pub fn new(settings: AdapterSettings) -> Self {
        AdapterPool {
            settings,
            resident: Mutex::new(Vec::new()),
            loads: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    pub fn names(&self) -> &[String] {
        &self.settings.names
    }

    pub fn serves(&self, model: &str) -> bool {
        self.settings.names.iter().any(|n| n == model)
    }

    /// When a request for `model` may start: `None` for a name that is not an adapter; now
    /// for a resident adapter that is loaded; the end of its load for one still loading or
    /// not resident (which starts loading now, evicting the least recently used adapter when
    /// the cap is reached). Requests for an adapter that is loading share its one load.
    pub fn ready_at(&self, model: &str, now: Instant) -> Option<Instant> {
        if !self.serves(model) {
            return None;
        }
        let mut resident = self.resident.lock().unwrap_or_else(|p| p.into_inner());
        let ready = match resident.iter().position(|(name, _)| name == model) {
            Some(i) => resident.remove(i).1,
            None => {
                if resident.len() >= self.settings.max_resident {
                    resident.remove(0);
                    self.evictions.fetch_add(1, Relaxed);
                }
                self.loads.fetch_add(1, Relaxed);
                now + self.settings.load_delay
            }
        };
        resident.push((model.to_string(), ready));
        Some(ready.max(now))
    }

    /// Prometheus lines: vLLM's `vllm:lora_requests_info` gauge (resident adapters as its
    /// running set, the cap as `max_lora`) and the simulator's load and eviction counters.
    pub fn render(&self, out: &mut String) {
        let resident: Vec<String> = self
            .resident
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(name, _)| name.clone())
            .collect();
        let now_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let _ = writeln!(
            out,
            "# HELP vllm:lora_requests_info Running stats on lora requests.\n\
             # TYPE vllm:lora_requests_info gauge\n\
             vllm:lora_requests_info{{max_lora=\"{}\",running_lora_adapters=\"{}\",\
             waiting_lora_adapters=\"\"}} {now_s:?}",
            self.settings.max_resident,
            resident.join(",")
        );
        for (name, help, value) in [
            (
                "servebench_sim:lora_adapter_loads_total",
                "Adapter loads (first use, or use after eviction).",
                &self.loads,
            ),
            (
                "servebench_sim:lora_adapter_evictions_total",
                "Resident adapters evicted to load another.",
                &self.evictions,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}.0",
                value.load(Relaxed)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(max_resident: u32) -> AdapterPool {
        let mut problems = Vec::new();
        let config = SimAdapters {
            names: vec!["a".into(), "b".into()],
            load_delay: Some(HumanDuration(Duration::from_millis(300))),
            max_resident: Some(max_resident),
        };
        let settings = resolve(Some(&config), "base", &mut problems).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        AdapterPool::new(settings)
    }

    #[test]
    fn first_use_waits_the_load_and_later_uses_do_not() {
        let pool = pool(2);
        let t0 = Instant::now();
        let load = Duration::from_millis(300);
        assert_eq!(pool.ready_at("base", t0), None);
        assert_eq!(pool.ready_at("a", t0), Some(t0 + load));
        // A second request while `a` loads waits for the same load, not a new one.
        let t1 = t0 + Duration::from_millis(100);
        assert_eq!(pool.ready_at("a", t1), Some(t0 + load));
        let t2 = t0 + Duration::from_secs(1);
        assert_eq!(pool.ready_at("a", t2), Some(t2));
        assert_eq!(pool.ready_at("b", t2), Some(t2 + load));
        assert_eq!(pool.loads.load(Relaxed), 2);
        assert_eq!(pool.evictions.load(Relaxed), 0);
    }

    #[test]
    fn the_least_recently_used_is_evicted_at_the_cap() {
        let pool = pool(1);
        let t0 = Instant::now();
        let load = Duration::from_millis(300);
        pool.ready_at("a", t0);
        let t1 = t0 + Duration::from_secs(1);
        // `b` evicts `a`; `a` must load again.
        assert_eq!(pool.ready_at("b", t1), Some(t1 + load));
        let t2 = t1 + Duration::from_secs(1);
        assert_eq!(pool.ready_at("a", t2), Some(t2 + load));
        assert_eq!(pool.loads.load(Relaxed), 3);
        assert_eq!(pool.evictions.load(Relaxed), 2);
        let mut text = String::new();
        pool.render(&mut text);
        assert!(text.contains("running_lora_adapters=\"a\""), "{text}");
        assert!(text.contains("max_lora=\"1\""), "{text}");
        assert!(
            text.contains("servebench_sim:lora_adapter_loads_total 3.0"),
            "{text}"
        );
    }

    #[test]
    fn bad_settings_are_each_named() {
        let mut problems = Vec::new();
        let config = SimAdapters {
            names: vec!["a".into(), "a".into(), "base".into(), String::new()],
            load_delay: None,
            max_resident: Some(0),
        };
        resolve(Some(&config), "base", &mut problems);
        assert_eq!(problems.len(), 4, "{problems:?}");
    }
}
