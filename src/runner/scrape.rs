//! Scraping a target's Prometheus `/metrics` before and after a phase, and the deltas.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::report::{GaugeRange, ServerMetrics};

/// Gauges whose before/after extremes are worth keeping (vLLM and SGLang names).
const GAUGES: &[&str] = &[
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:gpu_cache_usage_perc",
    "vllm:kv_cache_usage_perc",
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:token_usage",
    "sglang:cache_hit_rate",
];

/// Prefix-cache (hits, queries) counter pairs, newest vLLM names first.
const PREFIX_CACHE_COUNTERS: &[(&str, &str)] = &[
    (
        "vllm:prefix_cache_hits_total",
        "vllm:prefix_cache_queries_total",
    ),
    (
        "vllm:gpu_prefix_cache_hits_total",
        "vllm:gpu_prefix_cache_queries_total",
    ),
];

/// One scrape: every sample summed over its label sets, by metric name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    pub values: BTreeMap<String, f64>,
}

/// Parse Prometheus text exposition; malformed lines are skipped, not fatal.
pub fn parse_prometheus(text: &str) -> Sample {
    let mut values = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name_end = line
            .find(|c: char| c == '{' || c.is_whitespace())
            .unwrap_or(line.len());
        let name = &line[..name_end];
        let rest = match line[name_end..].strip_prefix('{') {
            Some(labelled) => labelled.rfind('}').map(|end| &labelled[end + 1..]),
            None => Some(&line[name_end..]),
        };
        let Some(value) = rest
            .and_then(|r| r.split_whitespace().next())
            .and_then(|v| v.parse::<f64>().ok())
        else {
            continue;
        };
        if name.is_empty() || name.ends_with("_bucket") || !value.is_finite() {
            continue;
        }
        *values.entry(name.to_string()).or_insert(0.0) += value;
    }
    Sample { values }
}

/// Fetch and parse; `None` (with the reason) when the endpoint does not answer.
pub async fn scrape(http: &reqwest::Client, url: &str) -> Result<Sample, String> {
    let response = http
        .get(url)
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .map_err(|e| format!("cannot scrape {url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("cannot scrape {url}: HTTP {}", response.status()));
    }
    let text = response
        .text()
        .await
        .map_err(|e| format!("cannot read {url}: {e}"))?;
    Ok(parse_prometheus(&text))
}

/// Counter deltas (names ending `_total`), gauge ranges and the prefix-cache hit ratio.
pub fn diff(url: &str, before: &Sample, after: &Sample) -> ServerMetrics {
    let counter_deltas: BTreeMap<String, f64> = after
        .values
        .iter()
        .filter(|(name, _)| name.ends_with("_total"))
        .map(|(name, after_value)| {
            (
                name.clone(),
                after_value - before.values.get(name).copied().unwrap_or(0.0),
            )
        })
        .collect();
    let gauges = GAUGES
        .iter()
        .filter_map(|name| {
            let b = before.values.get(*name).copied();
            let a = after.values.get(*name).copied();
            let (min, max) = match (b, a) {
                (Some(b), Some(a)) => (b.min(a), b.max(a)),
                (Some(v), None) | (None, Some(v)) => (v, v),
                (None, None) => return None,
            };
            Some((name.to_string(), GaugeRange { min, max }))
        })
        .collect();
    let prefix_cache_hit_avg = PREFIX_CACHE_COUNTERS.iter().find_map(|(hits, queries)| {
        let hits = counter_deltas.get(*hits)?;
        let queries = counter_deltas.get(*queries)?;
        (*queries > 0.0).then(|| hits / queries)
    });
    ServerMetrics {
        url: url.to_string(),
        counter_deltas,
        gauges,
        prefix_cache_hit_avg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "# HELP vllm:prefix_cache_queries_total Prefix cache queries.\n\
        # TYPE vllm:prefix_cache_queries_total counter\n\
        vllm:prefix_cache_queries_total{model_name=\"m\"} 100\n\
        vllm:prefix_cache_hits_total{model_name=\"m\"} 40\n\
        vllm:num_requests_running{model_name=\"m\"} 0\n\
        vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 5\n\
        garbage line without value\n";
    const AFTER: &str = "vllm:prefix_cache_queries_total{model_name=\"m\"} 137\n\
        vllm:prefix_cache_hits_total{model_name=\"m\"} 73\n\
        vllm:num_requests_running{model_name=\"m\"} 16\n";

    #[test]
    fn parses_labelled_samples_and_skips_buckets_and_garbage() {
        let sample = parse_prometheus(BEFORE);
        assert_eq!(
            sample.values.get("vllm:prefix_cache_queries_total"),
            Some(&100.0)
        );
        assert!(
            !sample
                .values
                .contains_key("vllm:time_to_first_token_seconds_bucket")
        );
        assert_eq!(sample.values.len(), 3);
    }

    #[test]
    fn sums_label_sets() {
        let sample = parse_prometheus("x_total{a=\"1\"} 2\nx_total{a=\"2\"} 3.5\n");
        assert_eq!(sample.values.get("x_total"), Some(&5.5));
    }

    #[test]
    fn prefix_cache_hit_ratio_is_hits_over_queries_of_the_phase() {
        let metrics = diff("u", &parse_prometheus(BEFORE), &parse_prometheus(AFTER));
        assert_eq!(
            metrics
                .counter_deltas
                .get("vllm:prefix_cache_queries_total"),
            Some(&37.0)
        );
        // Seed 000 reports 33/37 = 0.8918918918918919.
        assert_eq!(metrics.prefix_cache_hit_avg, Some(33.0 / 37.0));
        let running = metrics.gauges.get("vllm:num_requests_running").unwrap();
        assert_eq!((running.min, running.max), (0.0, 16.0));
    }
}
