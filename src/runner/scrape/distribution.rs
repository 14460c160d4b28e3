//! How a phase's requests spread over the backends behind a gateway: from the gateway's
//! per-worker counters when it keeps them (what the router decided), else from each
//! backend's own request counter (what the replicas served).

use std::collections::BTreeMap;

use crate::report::{BackendShare, ServerMetrics};

use super::labels;
use super::names::{WORKER_REQUEST_COUNTERS, engine_request_counters};

/// A backend metrics endpoint as the plan lists it, with its phase figures when both its
/// scrapes answered.
pub struct Backend<'a> {
    pub name: &'a str,
    pub url: &'a str,
    pub metrics: Option<&'a ServerMetrics>,
}

/// The requests per backend, their shares, and where the counts came from.
pub struct Distribution {
    pub backends: Vec<BackendShare>,
    pub skew: Option<f64>,
    pub source: Option<String>,
}

/// `host:port` of a URL (`http://10.0.0.2:8000/metrics` → `10.0.0.2:8000`).
pub fn host_port(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest)
}

/// Requests per worker URL over the phase, from the gateway's first per-worker counter.
pub fn per_worker(gateway: &ServerMetrics) -> Option<(&'static str, BTreeMap<String, f64>)> {
    WORKER_REQUEST_COUNTERS.iter().find_map(|name| {
        let sets = gateway.labelled_counter_deltas.get(*name)?;
        let mut by_worker = BTreeMap::new();
        for (label_text, delta) in sets {
            if let Some(worker) = labels::value(label_text, "worker") {
                *by_worker.entry(worker).or_insert(0.0) += delta;
            }
        }
        (!by_worker.is_empty()).then_some((*name, by_worker))
    })
}

/// The phase's distribution over `backends` (in plan order; workers the gateway names but
/// the plan does not list follow, by their host and port).
pub fn distribute(gateway: Option<&ServerMetrics>, backends: &[Backend<'_>]) -> Distribution {
    let (mut rows, source) = match gateway.and_then(per_worker) {
        Some((counter, workers)) => (
            from_gateway(workers, backends),
            format!("gateway: {counter}"),
        ),
        None => (from_backends(backends), "backends".to_string()),
    };
    let (total, skew) = spread(&rows);
    for row in &mut rows {
        row.share = (total > 0.0).then(|| row.requests / total);
    }
    Distribution {
        source: (!rows.is_empty()).then_some(source),
        backends: rows,
        skew,
    }
}

fn from_gateway(mut workers: BTreeMap<String, f64>, backends: &[Backend<'_>]) -> Vec<BackendShare> {
    let mut rows: Vec<BackendShare> = backends
        .iter()
        .map(|b| {
            let here = host_port(b.url);
            let mine: Vec<String> = workers
                .keys()
                .filter(|w| host_port(w) == here)
                .cloned()
                .collect();
            let requests = mine.iter().filter_map(|w| workers.remove(w)).sum();
            BackendShare {
                name: b.name.to_string(),
                requests,
                share: None,
                prefix_cache_hit_avg: b.metrics.and_then(|m| m.prefix_cache_hit_avg),
            }
        })
        .collect();
    rows.extend(workers.into_iter().map(|(worker, requests)| BackendShare {
        name: host_port(&worker).to_string(),
        requests,
        ..BackendShare::default()
    }));
    rows
}

fn from_backends(backends: &[Backend<'_>]) -> Vec<BackendShare> {
    backends
        .iter()
        .filter_map(|b| {
            let m = b.metrics?;
            let requests = engine_request_counters().find_map(|c| m.counter_deltas.get(c))?;
            Some(BackendShare {
                name: b.name.to_string(),
                requests: *requests,
                share: None,
                prefix_cache_hit_avg: m.prefix_cache_hit_avg,
            })
        })
        .collect()
}

/// Total requests over the backends and the largest count over the mean.
pub fn spread(backends: &[BackendShare]) -> (f64, Option<f64>) {
    let total: f64 = backends.iter().map(|b| b.requests).sum();
    let max = backends.iter().map(|b| b.requests).fold(0.0, f64::max);
    let mean = total / backends.len().max(1) as f64;
    (total, (mean > 0.0).then(|| max / mean))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::scrape::{Sample, diff, parse_prometheus};

    fn fixture(name: &str) -> String {
        let path = format!(
            "{}/tests/fixtures/metrics/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn since_start(text: &str) -> ServerMetrics {
        diff("u", &Sample::default(), &parse_prometheus(text))
    }

    #[test]
    fn each_router_s_per_worker_counter_gives_the_backend_requests() {
        for file in ["vllm-router-0.1.17.txt", "sglang-router-0.3.2.txt"] {
            let gateway = since_start(&fixture(file));
            let backends = [
                Backend {
                    name: "replica-0",
                    url: "http://127.0.0.1:18101/metrics",
                    metrics: None,
                },
                Backend {
                    name: "replica-1",
                    url: "http://127.0.0.1:18102/metrics",
                    metrics: None,
                },
            ];
            let d = distribute(Some(&gateway), &backends);
            let rows: Vec<_> = d
                .backends
                .iter()
                .map(|b| (b.name.as_str(), b.requests, b.share))
                .collect();
            assert_eq!(
                rows,
                [("replica-0", 3.0, Some(0.5)), ("replica-1", 3.0, Some(0.5))],
                "{file}"
            );
            assert_eq!(d.skew, Some(1.0), "{file}");
            assert!(d.source.unwrap().starts_with("gateway: "), "{file}");
        }
    }

    #[test]
    fn workers_the_plan_does_not_list_are_named_by_host_and_port() {
        let gateway = since_start(&fixture("vllm-router-0.1.17.txt"));
        let backends = [Backend {
            name: "only",
            url: "http://127.0.0.1:18102/metrics",
            metrics: None,
        }];
        let d = distribute(Some(&gateway), &backends);
        let names: Vec<_> = d.backends.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["only", "127.0.0.1:18101"]);
    }

    #[test]
    fn without_gateway_counters_the_backends_own_counters_are_used() {
        let own = since_start(&fixture("servebench-sim.txt"));
        let backends = [Backend {
            name: "sim",
            url: "http://127.0.0.1:18101/metrics",
            metrics: Some(&own),
        }];
        let d = distribute(None, &backends);
        assert_eq!(d.backends[0].requests, 6.0);
        assert_eq!(d.source.as_deref(), Some("backends"));
    }
}
