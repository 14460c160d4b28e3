//! How a phase's requests spread over the backends behind a gateway: from the gateway's
//! per-worker counters when it keeps them (what the router decided), else from each
//! backend's own request counter (what the replicas served).

use std::collections::BTreeMap;

use crate::report::{BackendShare, CounterSpan, ServerMetrics};

use super::Sample;
use super::labels;
use super::names::{PREFIX_CACHE_COUNTERS, WORKER_REQUEST_COUNTERS, engine_request_counters};

/// An endpoint's phase figures and the two scrapes they came from.
#[derive(Clone, Copy)]
pub struct Scraped<'a> {
    pub metrics: &'a ServerMetrics,
    pub before: &'a Sample,
    pub after: &'a Sample,
}

/// A backend metrics endpoint as the plan lists it, with its figures when both its scrapes
/// answered.
pub struct Backend<'a> {
    pub name: &'a str,
    pub url: &'a str,
    pub scraped: Option<Scraped<'a>>,
}

fn span(before: f64, after: f64) -> Option<CounterSpan> {
    Some(CounterSpan {
        start: before,
        end: after,
    })
}

/// A counter's value in both scrapes, summed over the label sets `keep` accepts.
fn readings(s: &Scraped<'_>, name: &str, keep: impl Fn(&str) -> bool) -> Option<CounterSpan> {
    let read = |sample: &Sample| {
        sample
            .series
            .sets
            .get(name)
            .map(|sets| sets.iter().filter(|(l, _)| keep(l)).map(|(_, v)| v).sum())
    };
    span(read(s.before).unwrap_or(0.0), read(s.after)?)
}

/// A backend's own counter in both scrapes.
fn own(s: &Scraped<'_>, name: &str) -> Option<CounterSpan> {
    span(
        s.before.values.get(name).copied().unwrap_or(0.0),
        *s.after.values.get(name)?,
    )
}

/// The backend's prefix-cache hit and query counters, newest names first.
fn prefix_spans(s: Option<&Scraped<'_>>) -> (Option<CounterSpan>, Option<CounterSpan>) {
    s.and_then(|s| {
        PREFIX_CACHE_COUNTERS
            .iter()
            .find_map(|(hits, queries)| Some((own(s, hits)?, own(s, queries)?)))
    })
    .map_or((None, None), |(h, q)| (Some(h), Some(q)))
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
pub fn distribute(gateway: Option<Scraped<'_>>, backends: &[Backend<'_>]) -> Distribution {
    let counted = gateway.and_then(|g| Some((g, per_worker(g.metrics)?)));
    let (mut rows, source) = match counted {
        Some((g, (counter, workers))) => (
            from_gateway(&g, counter, workers, backends),
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

fn from_gateway(
    gateway: &Scraped<'_>,
    counter: &str,
    mut workers: BTreeMap<String, f64>,
    backends: &[Backend<'_>],
) -> Vec<BackendShare> {
    let worker_readings = |here: &str| {
        readings(gateway, counter, |l| {
            labels::value(l, "worker").is_some_and(|w| host_port(&w) == here)
        })
    };
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
            let (prefix_cache_hits, prefix_cache_queries) = prefix_spans(b.scraped.as_ref());
            BackendShare {
                name: b.name.to_string(),
                requests,
                share: None,
                prefix_cache_hit_avg: b.scraped.and_then(|s| s.metrics.prefix_cache_hit_avg),
                request_counter: worker_readings(here),
                prefix_cache_hits,
                prefix_cache_queries,
            }
        })
        .collect();
    rows.extend(workers.into_iter().map(|(worker, requests)| {
        let name = host_port(&worker).to_string();
        BackendShare {
            request_counter: worker_readings(&name),
            name,
            requests,
            ..BackendShare::default()
        }
    }));
    rows
}

fn from_backends(backends: &[Backend<'_>]) -> Vec<BackendShare> {
    backends
        .iter()
        .filter_map(|b| {
            let s = b.scraped.as_ref()?;
            let (counter, requests) = engine_request_counters()
                .find_map(|c| Some((c, *s.metrics.counter_deltas.get(c)?)))?;
            let (prefix_cache_hits, prefix_cache_queries) = prefix_spans(Some(s));
            Some(BackendShare {
                name: b.name.to_string(),
                requests,
                share: None,
                prefix_cache_hit_avg: s.metrics.prefix_cache_hit_avg,
                request_counter: own(s, counter),
                prefix_cache_hits,
                prefix_cache_queries,
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
    use crate::runner::scrape::{diff, parse_prometheus};

    fn fixture(name: &str) -> String {
        let path = format!(
            "{}/tests/fixtures/metrics/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// Figures since the server started: an empty scrape before.
    struct SinceStart {
        metrics: ServerMetrics,
        before: Sample,
        after: Sample,
    }

    impl SinceStart {
        fn scraped(&self) -> Scraped<'_> {
            Scraped {
                metrics: &self.metrics,
                before: &self.before,
                after: &self.after,
            }
        }
    }

    fn since_start(text: &str) -> SinceStart {
        let after = parse_prometheus(text);
        SinceStart {
            metrics: diff("u", &Sample::default(), &after),
            before: Sample::default(),
            after,
        }
    }

    #[test]
    fn each_router_s_per_worker_counter_gives_the_backend_requests() {
        for file in ["vllm-router-0.1.17.txt", "sglang-router-0.3.2.txt"] {
            let gateway = since_start(&fixture(file));
            let backends = [
                Backend {
                    name: "replica-0",
                    url: "http://127.0.0.1:18101/metrics",
                    scraped: None,
                },
                Backend {
                    name: "replica-1",
                    url: "http://127.0.0.1:18102/metrics",
                    scraped: None,
                },
            ];
            let d = distribute(Some(gateway.scraped()), &backends);
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
            let end = d.backends[1].request_counter.map(|c| c.end);
            assert_eq!(end, Some(3.0), "{file}");
            assert!(d.source.unwrap().starts_with("gateway: "), "{file}");
        }
    }

    #[test]
    fn workers_the_plan_does_not_list_are_named_by_host_and_port() {
        let gateway = since_start(&fixture("vllm-router-0.1.17.txt"));
        let backends = [Backend {
            name: "only",
            url: "http://127.0.0.1:18102/metrics",
            scraped: None,
        }];
        let d = distribute(Some(gateway.scraped()), &backends);
        let names: Vec<_> = d.backends.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["only", "127.0.0.1:18101"]);
    }

    #[test]
    fn without_gateway_counters_the_backends_own_counters_are_used() {
        let own = since_start(&fixture("servebench-sim.txt"));
        let backends = [Backend {
            name: "sim",
            url: "http://127.0.0.1:18101/metrics",
            scraped: Some(own.scraped()),
        }];
        let d = distribute(None, &backends);
        assert_eq!(d.backends[0].requests, 6.0);
        let counter = d.backends[0].request_counter.unwrap();
        assert_eq!((counter.start, counter.end), (0.0, 6.0));
        assert!(d.backends[0].prefix_cache_queries.is_some());
        assert_eq!(d.source.as_deref(), Some("backends"));
    }
}
