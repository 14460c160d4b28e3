//! Scraping a target's Prometheus `/metrics` before and after a phase and during its
//! window, and the phase's figures from those scrapes.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::report::{GaugeRange, GaugesFrom, ServerMetrics};

pub mod distribution;
pub mod endpoints;
pub mod labels;
pub mod names;
pub mod reading;
pub mod sampler;
pub mod window;

use window::{EndpointGauges, InWindow};

use names::{METRIC_NAMES, PREFIX_CACHE_COUNTERS, gauge_names, is_counter};

/// One scrape: every sample summed over its label sets, by metric name, and the label sets
/// themselves (up to a cap per metric).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    pub values: BTreeMap<String, f64>,
    pub series: labels::Series,
}

/// Parse Prometheus text exposition; malformed lines are skipped, not fatal.
pub fn parse_prometheus(text: &str) -> Sample {
    let mut values = BTreeMap::new();
    let mut series = labels::Series::default();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name_end = line
            .find(|c: char| c == '{' || c.is_whitespace())
            .unwrap_or(line.len());
        let name = &line[..name_end];
        let (label_text, rest) = match line[name_end..].strip_prefix('{') {
            Some(labelled) => match labelled.rfind('}') {
                Some(end) => (&labelled[..end], Some(&labelled[end + 1..])),
                None => ("", None),
            },
            None => ("", Some(&line[name_end..])),
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
        if !label_text.trim().is_empty() {
            series.add(name, label_text, value);
        }
    }
    Sample { values, series }
}

/// Fetch and parse; `Err` (with the reason) when the endpoint does not answer.
pub async fn scrape(http: &reqwest::Client, url: &str) -> Result<Sample, String> {
    Ok(parse_prometheus(&fetch(http, url).await?))
}

/// The exposition text, or why there is none.
pub async fn fetch(http: &reqwest::Client, url: &str) -> Result<String, String> {
    let response = http
        .get(url)
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .map_err(|e| format!("cannot scrape {url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("cannot scrape {url}: HTTP {}", response.status()));
    }
    response
        .text()
        .await
        .map_err(|e| format!("cannot read {url}: {e}"))
}

/// A target's one endpoint over a phase: [`endpoint_figures`] with the server's time series
/// and how it was sampled, when it was.
pub fn measure(
    url: &str,
    before: &Sample,
    after: &Sample,
    window: Option<InWindow>,
) -> ServerMetrics {
    let own = endpoint_figures(
        url,
        before,
        after,
        window.as_ref().and_then(|w| w.endpoints.first()),
    );
    match window {
        Some(w) => ServerMetrics {
            timeline: w.timeline,
            sampling: Some(w.sampling),
            ..own
        },
        None => own,
    }
}

/// [`endpoint_figures`] from the two scrapes alone.
pub fn diff(url: &str, before: &Sample, after: &Sample) -> ServerMetrics {
    endpoint_figures(url, before, after, None)
}

/// Counter deltas (names ending `_total`) from `before` to `after`, the prefix-cache hit
/// ratio, gauge ranges, and the same figures under [`METRIC_NAMES`]' engine-neutral names.
/// The gauges come from the endpoint's samples during the window when it answered any, else
/// from the two scrapes around it.
pub fn endpoint_figures(
    url: &str,
    before: &Sample,
    after: &Sample,
    window: Option<&EndpointGauges>,
) -> ServerMetrics {
    let counter_deltas: BTreeMap<String, f64> = after
        .values
        .iter()
        .filter(|(name, _)| is_counter(name))
        .map(|(name, after_value)| {
            (
                name.clone(),
                after_value - before.values.get(name).copied().unwrap_or(0.0),
            )
        })
        .collect();
    let gauge_list: Vec<&str> = gauge_names().collect();
    let (gauges, labelled_gauges, gauges_from) = match window.filter(|w| w.answered > 0) {
        Some(w) => (w.gauges.clone(), w.labelled.clone(), GaugesFrom::Window),
        None => (
            edge_ranges(before, after),
            labels::gauge_ranges(&before.series, &after.series, &gauge_list),
            GaugesFrom::Edges,
        ),
    };
    let prefix_cache_hit_avg = PREFIX_CACHE_COUNTERS.iter().find_map(|(hits, queries)| {
        let hits = counter_deltas.get(*hits)?;
        let queries = counter_deltas.get(*queries)?;
        (*queries > 0.0).then(|| hits / queries)
    });
    let mut engine = None;
    let mut normalized_counter_deltas = BTreeMap::new();
    let mut normalized_gauges = BTreeMap::new();
    // First match wins, so a newer name listed first shadows an older one.
    for (name_engine, name, normalized) in METRIC_NAMES {
        let found = if is_counter(name) {
            counter_deltas.get(*name).is_some_and(|delta| {
                normalized_counter_deltas
                    .entry(normalized.to_string())
                    .or_insert(*delta);
                true
            })
        } else {
            gauges.get(*name).is_some_and(|range| {
                normalized_gauges
                    .entry(normalized.to_string())
                    .or_insert(*range);
                true
            })
        };
        if found {
            engine.get_or_insert_with(|| name_engine.to_string());
        }
    }
    let notes = after
        .series
        .capped
        .iter()
        .map(|name| {
            format!(
                "`{name}` has more than {} label sets; only the first are kept per label set",
                labels::LABEL_SET_CAP
            )
        })
        .collect();
    ServerMetrics {
        url: url.to_string(),
        labelled_counter_deltas: labels::counter_deltas(
            &before.series,
            &after.series,
            counter_deltas.keys(),
        ),
        labelled_gauges,
        counter_deltas,
        gauges,
        gauges_from,
        prefix_cache_hit_avg,
        engine,
        normalized_counter_deltas,
        normalized_gauges,
        notes,
        ..ServerMetrics::default()
    }
}

/// Each listed gauge's range over the scrapes before and after the window.
fn edge_ranges(before: &Sample, after: &Sample) -> BTreeMap<String, GaugeRange> {
    gauge_names()
        .filter_map(|name| {
            let b = before.values.get(name).copied();
            let a = after.values.get(name).copied();
            let (min, max) = match (b, a) {
                (Some(b), Some(a)) => (b.min(a), b.max(a)),
                (Some(v), None) | (None, Some(v)) => (v, v),
                (None, None) => return None,
            };
            let mean = None;
            Some((name.to_string(), GaugeRange { min, max, mean }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{MetricsEndpoint, MetricsRole};

    /// An endpoint with no name of its own, for the tests of this folder.
    pub(super) fn endpoint(url: &str, role: MetricsRole) -> MetricsEndpoint {
        MetricsEndpoint {
            url: url.into(),
            role,
            name: None,
        }
    }

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

    /// What a llama.cpp server (xllamacpp 2026.10.11549, `endpoint_metrics`) exports, trimmed.
    const LLAMACPP_BEFORE: &str = "\
        # HELP llamacpp:prompt_tokens_total Number of prompt tokens processed, excluding cached tokens\n\
        # TYPE llamacpp:prompt_tokens_total counter\n\
        llamacpp:prompt_tokens_total 32\n\
        llamacpp:prompt_tokens_cached_total 0\n\
        llamacpp:tokens_predicted_total 5\n\
        llamacpp:n_tokens_max 36\n\
        llamacpp:requests_processing 0\n\
        llamacpp:requests_deferred 0\n";
    const LLAMACPP_AFTER: &str = "\
        llamacpp:prompt_tokens_total 544\n\
        llamacpp:prompt_tokens_cached_total 12\n\
        llamacpp:tokens_predicted_total 133\n\
        llamacpp:n_tokens_max 300\n\
        llamacpp:requests_processing 4\n\
        llamacpp:requests_deferred 2\n";
    /// The five series every engine maps (prompt and generated token counters, requests
    /// running and waiting, KV-cache use), as SGLang and vLLM name them.
    const SGLANG: [&str; 5] = [
        "sglang:prompt_tokens_total",
        "sglang:generation_tokens_total",
        "sglang:num_running_reqs",
        "sglang:num_queue_reqs",
        "sglang:token_usage",
    ];
    const VLLM: [&str; 5] = [
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
    ];

    /// An exposition of `names` with `values`, each labelled with the model.
    fn exposition(names: [&str; 5], values: [f64; 5]) -> String {
        let lines = names.iter().zip(values);
        lines
            .map(|(name, value)| format!("{name}{{model_name=\"m\"}} {value}\n"))
            .collect()
    }

    #[test]
    fn every_engine_maps_to_the_same_normalized_fields() {
        let (sglang_before, sglang_after) = (
            exposition(SGLANG, [1000.0, 50.0, 0.0, 0.0, 0.1]),
            exposition(SGLANG, [1512.0, 178.0, 4.0, 2.0, 0.25]),
        );
        let (vllm_before, vllm_after) = (
            exposition(VLLM, [0.0, 0.0, 0.0, 0.0, 0.1]),
            exposition(VLLM, [512.0, 128.0, 4.0, 2.0, 0.25]),
        );
        for (engine, before, after, kv) in [
            ("llamacpp", LLAMACPP_BEFORE, LLAMACPP_AFTER, None),
            ("sglang", &sglang_before, &sglang_after, Some((0.1, 0.25))),
            ("vllm", &vllm_before, &vllm_after, Some((0.1, 0.25))),
        ] {
            let m = diff("u", &parse_prometheus(before), &parse_prometheus(after));
            assert_eq!(m.engine.as_deref(), Some(engine));
            assert_eq!(
                m.normalized_counter_deltas.get("prompt_tokens"),
                Some(&512.0),
                "{engine}"
            );
            assert_eq!(
                m.normalized_counter_deltas.get("generation_tokens"),
                Some(&128.0),
                "{engine}"
            );
            let range = |name: &str| m.normalized_gauges.get(name).map(|g| (g.min, g.max));
            assert_eq!(range("requests_running"), Some((0.0, 4.0)), "{engine}");
            assert_eq!(range("requests_waiting"), Some((0.0, 2.0)), "{engine}");
            assert_eq!(range("kv_cache_usage"), kv, "{engine}");
        }
    }

    #[test]
    fn llamacpp_gauges_are_kept_under_their_own_names_too() {
        let m = diff(
            "u",
            &parse_prometheus(LLAMACPP_BEFORE),
            &parse_prometheus(LLAMACPP_AFTER),
        );
        let deferred = m.gauges.get("llamacpp:requests_deferred").unwrap();
        assert_eq!((deferred.min, deferred.max), (0.0, 2.0));
        assert_eq!(
            m.counter_deltas.get("llamacpp:prompt_tokens_cached_total"),
            Some(&12.0)
        );
        // Not a `_total` counter, not a listed gauge: not kept.
        assert!(!m.gauges.contains_key("llamacpp:n_tokens_max"));
    }

    #[test]
    fn an_older_vllm_kv_cache_name_still_maps() {
        let before = parse_prometheus("vllm:gpu_cache_usage_perc 0.2\n");
        let after = parse_prometheus("vllm:gpu_cache_usage_perc 0.6\n");
        let m = diff("u", &before, &after);
        let kv = m.normalized_gauges.get("kv_cache_usage").unwrap();
        assert_eq!((kv.min, kv.max), (0.2, 0.6));
        assert_eq!(m.engine.as_deref(), Some("vllm"));
    }
}
