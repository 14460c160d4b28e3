//! Several metrics endpoints per target (a gateway and its replicas): concurrent scrapes,
//! per-endpoint deltas, backend sums and how the requests spread over the backends.

use crate::plan::{MetricsEndpoint, MetricsRole};
use crate::report::{EndpointMetrics, ServerMetrics};

use super::distribution::{Backend, Scraped, distribute, host_port};
use super::names::SUMMED_COUNTERS;
use super::window::InWindow;
use super::{Sample, endpoint_figures};

/// The name an endpoint goes by in the report: its own, else the URL's host and port.
pub fn endpoint_name(endpoint: &MetricsEndpoint) -> String {
    if let Some(name) = &endpoint.name {
        return name.clone();
    }
    host_port(&endpoint.url).to_string()
}

/// One scrape of every endpoint, concurrently; a failing one gives its reason.
pub async fn scrape_all(
    http: &reqwest::Client,
    endpoints: &[MetricsEndpoint],
) -> Vec<Result<Sample, String>> {
    let scrapes = endpoints.iter().map(|e| async move {
        let sample = super::scrape(http, &e.url).await?;
        if sample.values.is_empty() {
            return Err(format!("{} answered no Prometheus samples", e.url));
        }
        Ok(sample)
    });
    futures_util::future::join_all(scrapes).await
}

/// The phase's figures from every endpoint's before and after scrapes, and from the samples
/// during the window (`window`, in `endpoints`' order) when it was sampled. An endpoint that
/// failed either scrape is left out and named in `warnings`; the phase itself stands.
pub fn combine(
    endpoints: &[MetricsEndpoint],
    before: &[Result<Sample, String>],
    after: &[Result<Sample, String>],
    window: Option<InWindow>,
) -> ServerMetrics {
    let mut warnings = Vec::new();
    let mut per_endpoint = Vec::new();
    for (i, ((endpoint, before), after)) in endpoints.iter().zip(before).zip(after).enumerate() {
        let name = endpoint_name(endpoint);
        let sampled = window.as_ref().and_then(|w| w.endpoints.get(i));
        match (before, after) {
            (Ok(b), Ok(a)) => per_endpoint.push(Part {
                role: endpoint.role,
                name,
                url: &endpoint.url,
                metrics: endpoint_figures(&endpoint.url, b, a, sampled),
                before: b,
                after: a,
            }),
            (Err(e), _) | (_, Err(e)) => {
                warnings.push(format!("metrics endpoint `{name}` left out: {e}"));
            }
        }
    }
    let gateway = per_endpoint.iter().find(|p| p.role == MetricsRole::Gateway);
    let mut combined = gateway.map(|g| g.metrics.clone()).unwrap_or_default();
    combined.url = endpoints
        .iter()
        .find(|e| e.role == MetricsRole::Gateway)
        .map(|e| e.url.clone())
        .unwrap_or_default();
    let backend_metrics: Vec<&ServerMetrics> = per_endpoint
        .iter()
        .filter(|p| p.role == MetricsRole::Backend)
        .map(|p| &p.metrics)
        .collect();
    if !backend_metrics.is_empty() {
        sum_backends(&mut combined, &backend_metrics);
    }
    let names: Vec<String> = endpoints.iter().map(endpoint_name).collect();
    let backends: Vec<Backend<'_>> = endpoints
        .iter()
        .zip(&names)
        .filter(|(e, _)| e.role == MetricsRole::Backend)
        .map(|(e, name)| Backend {
            name,
            url: &e.url,
            scraped: per_endpoint
                .iter()
                .find(|p| p.role == MetricsRole::Backend && p.name == *name && p.url == e.url)
                .map(Part::scraped),
        })
        .collect();
    let distribution = distribute(gateway.map(Part::scraped), &backends);
    combined.backends = distribution.backends;
    combined.backend_skew = distribution.skew;
    combined.backend_requests_from = distribution.source;
    combined.notes = per_endpoint
        .iter()
        .flat_map(|p| {
            p.metrics
                .notes
                .iter()
                .map(move |n| format!("{}: {n}", p.name))
        })
        .collect();
    combined.endpoints = per_endpoint
        .into_iter()
        .map(|p| EndpointMetrics {
            name: p.name,
            role: role_name(p.role).to_string(),
            metrics: p.metrics,
        })
        .collect();
    combined.warnings = warnings;
    match window {
        Some(w) => with_window(combined, w),
        None => combined,
    }
}

/// The server's levels over the window are its summed endpoints' (the backends' requests
/// added up, the fullest KV cache), with its time series and how it was sampled.
fn with_window(combined: ServerMetrics, window: InWindow) -> ServerMetrics {
    let mut normalized_gauges = combined.normalized_gauges.clone();
    normalized_gauges.extend(window.levels);
    let gauges_from = if window.sampling.samples > 0 {
        crate::report::GaugesFrom::Window
    } else {
        combined.gauges_from
    };
    ServerMetrics {
        normalized_gauges,
        gauges_from,
        timeline: window.timeline,
        sampling: Some(window.sampling),
        ..combined
    }
}

/// One endpoint that answered both scrapes.
struct Part<'a> {
    role: MetricsRole,
    name: String,
    url: &'a str,
    metrics: ServerMetrics,
    before: &'a Sample,
    after: &'a Sample,
}

impl Part<'_> {
    fn scraped(&self) -> Scraped<'_> {
        Scraped {
            metrics: &self.metrics,
            before: self.before,
            after: self.after,
        }
    }
}

fn role_name(role: MetricsRole) -> &'static str {
    match role {
        MetricsRole::Gateway => "gateway",
        MetricsRole::Backend => "backend",
    }
}

/// Backends' token, preemption and prefix-cache counters summed; the hit ratio from the
/// sums, so a busy replica weighs more than an idle one.
fn sum_backends(combined: &mut ServerMetrics, backends: &[&ServerMetrics]) {
    for name in ["prompt_tokens", "generation_tokens"] {
        let values: Vec<f64> = backends
            .iter()
            .filter_map(|m| m.normalized_counter_deltas.get(name).copied())
            .collect();
        if !values.is_empty() {
            combined
                .normalized_counter_deltas
                .insert(name.to_string(), values.iter().sum());
        }
    }
    for name in SUMMED_COUNTERS {
        let values: Vec<f64> = backends
            .iter()
            .filter_map(|m| m.counter_deltas.get(*name).copied())
            .collect();
        if !values.is_empty() {
            combined
                .counter_deltas
                .insert(name.to_string(), values.iter().sum());
        }
    }
    let hits = combined.counter_deltas.get("vllm:prefix_cache_hits_total");
    let queries = combined
        .counter_deltas
        .get("vllm:prefix_cache_queries_total");
    combined.prefix_cache_hit_avg = match (hits, queries) {
        (Some(h), Some(q)) if *q > 0.0 => Some(h / q),
        _ => combined.prefix_cache_hit_avg,
    };
    // The replicas' engine, not the router's, names the phase's figures.
    if let Some(engine) = backends.iter().find_map(|m| m.engine.clone()) {
        combined.engine = Some(engine);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::scrape::parse_prometheus;
    use crate::runner::scrape::tests::endpoint;

    fn sample(text: &str) -> Result<Sample, String> {
        Ok(parse_prometheus(text))
    }

    /// A vLLM replica's counters: requests served, prefix-cache hits and queries, prompt
    /// tokens.
    fn replica(
        success: u32,
        hits: u32,
        queries: u32,
        prompt_tokens: u32,
    ) -> Result<Sample, String> {
        sample(&format!(
            "vllm:request_success_total {success}\nvllm:prefix_cache_hits_total {hits}\n\
             vllm:prefix_cache_queries_total {queries}\nvllm:prompt_tokens_total {prompt_tokens}\n"
        ))
    }

    #[test]
    fn backends_are_summed_and_spread_and_a_failing_one_is_a_warning() {
        let endpoints = [
            endpoint("http://127.0.0.1:9000/metrics", MetricsRole::Gateway),
            endpoint("http://127.0.0.1:9001/metrics", MetricsRole::Backend),
            endpoint("http://127.0.0.1:9002/metrics", MetricsRole::Backend),
            endpoint("http://127.0.0.1:9003/metrics", MetricsRole::Backend),
        ];
        let before = [
            sample("router_requests_total 0\n"),
            replica(0, 0, 0, 0),
            replica(5, 10, 10, 10),
            Err("cannot scrape http://127.0.0.1:9003/metrics: refused".into()),
        ];
        let after = [
            sample("router_requests_total 40\n"),
            replica(30, 60, 100, 100),
            replica(15, 10, 110, 110),
            sample("vllm:request_success_total 99\n"),
        ];
        let m = combine(&endpoints, &before, &after, None);
        assert_eq!(m.url, "http://127.0.0.1:9000/metrics");
        assert_eq!(m.counter_deltas.get("router_requests_total"), Some(&40.0));
        // (60 + 0) hits over (100 + 100) queries.
        assert_eq!(m.prefix_cache_hit_avg, Some(0.3));
        assert_eq!(
            m.normalized_counter_deltas.get("prompt_tokens"),
            Some(&200.0)
        );
        let requests: Vec<_> = m
            .backends
            .iter()
            .map(|b| (b.name.as_str(), b.requests))
            .collect();
        assert_eq!(
            requests,
            [("127.0.0.1:9001", 30.0), ("127.0.0.1:9002", 10.0)]
        );
        let shares: f64 = m.backends.iter().filter_map(|b| b.share).sum();
        assert!((shares - 1.0).abs() < 1e-12);
        assert_eq!(m.backend_skew, Some(1.5));
        assert_eq!(m.backends[0].prefix_cache_hit_avg, Some(0.6));
        assert_eq!(m.endpoints.len(), 3);
        assert_eq!(m.warnings.len(), 1);
        assert!(
            m.warnings[0].contains("`127.0.0.1:9003`"),
            "{:?}",
            m.warnings
        );
    }
}
