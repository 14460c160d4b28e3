//! The backend figures of a merged phase. Every shard scraped the same gateway and replicas
//! around its own window, and those windows overlap, so adding the shards' deltas would
//! count the overlap once per shard. Each backend's counters are instead read over the span
//! of all the shards' scrapes (earliest first reading to latest last reading), which counts
//! every request once whether the windows overlap or follow each other.

use crate::report::{BackendShare, CounterSpan, ServerMetrics};
use crate::runner::scrape::distribution::spread;

/// The merged server figures of one phase from each shard's: the backends', and the
/// samples during the window of the first shard that took any (every shard sampled the same
/// server, under the load of them all); `None` when no shard had either.
pub fn merge(parts: &[&ServerMetrics]) -> Option<ServerMetrics> {
    let backends = merge_backends(parts);
    let Some(sampled) = parts.iter().find(|m| m.sampling.is_some()) else {
        return backends;
    };
    let merged = backends.unwrap_or_default();
    Some(ServerMetrics {
        engine: merged.engine.clone().or_else(|| sampled.engine.clone()),
        gauges: sampled.gauges.clone(),
        normalized_gauges: sampled.normalized_gauges.clone(),
        gauges_from: sampled.gauges_from,
        timeline: sampled.timeline.clone(),
        sampling: sampled.sampling.clone(),
        ..merged
    })
}

/// The merged backends of one phase; `None` when no shard had backend figures.
fn merge_backends(parts: &[&ServerMetrics]) -> Option<ServerMetrics> {
    let parts: Vec<&ServerMetrics> = parts
        .iter()
        .copied()
        .filter(|m| !m.backends.is_empty())
        .collect();
    let first = parts.first()?;
    let mut names: Vec<&str> = Vec::new();
    for b in parts.iter().flat_map(|m| &m.backends) {
        if !names.contains(&b.name.as_str()) {
            names.push(&b.name);
        }
    }
    let mut summed_without_readings = false;
    let mut backends: Vec<BackendShare> = names
        .iter()
        .map(|name| {
            let rows: Vec<&BackendShare> = parts
                .iter()
                .flat_map(|m| &m.backends)
                .filter(|b| b.name == *name)
                .collect();
            let request_counter = over_all(&rows, |b| b.request_counter);
            summed_without_readings |= request_counter.is_none();
            let hits = over_all(&rows, |b| b.prefix_cache_hits);
            let queries = over_all(&rows, |b| b.prefix_cache_queries);
            BackendShare {
                name: name.to_string(),
                requests: request_counter
                    .map_or_else(|| rows.iter().map(|b| b.requests).sum(), delta),
                share: None,
                prefix_cache_hit_avg: ratio(hits.map(delta), queries.map(delta)),
                request_counter,
                prefix_cache_hits: hits,
                prefix_cache_queries: queries,
            }
        })
        .collect();
    let (total, skew) = spread(&backends);
    for b in &mut backends {
        b.share = (total > 0.0).then(|| b.requests / total);
    }
    let sum_of = |field: fn(&BackendShare) -> Option<CounterSpan>| -> Option<f64> {
        backends.iter().map(|b| field(b).map(delta)).sum()
    };
    let hit_avg = ratio(
        sum_of(|b| b.prefix_cache_hits),
        sum_of(|b| b.prefix_cache_queries),
    );
    let how = if summed_without_readings {
        "the shards' request counts summed (some shards recorded no counter readings, so \
         overlapping windows may count requests twice)"
    } else {
        "each backend's counters read over the span of every shard's scrapes"
    };
    Some(ServerMetrics {
        engine: first.engine.clone(),
        prefix_cache_hit_avg: hit_avg,
        backends,
        backend_skew: skew,
        backend_requests_from: first.backend_requests_from.clone(),
        notes: vec![format!("merged from {} shards: {how}", parts.len())],
        ..ServerMetrics::default()
    })
}

/// The span from the earliest first reading to the latest last one, when every shard has one.
fn over_all(
    rows: &[&BackendShare],
    field: impl Fn(&BackendShare) -> Option<CounterSpan>,
) -> Option<CounterSpan> {
    let spans: Option<Vec<CounterSpan>> = rows.iter().map(|b| field(b)).collect();
    let spans = spans?;
    Some(CounterSpan {
        start: spans.iter().map(|s| s.start).reduce(f64::min)?,
        end: spans.iter().map(|s| s.end).reduce(f64::max)?,
    })
}

fn delta(span: CounterSpan) -> f64 {
    span.end - span.start
}

fn ratio(hits: Option<f64>, queries: Option<f64>) -> Option<f64> {
    match (hits, queries) {
        (Some(h), Some(q)) if q > 0.0 => Some(h / q),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend's name, its request count, and its counter's first and last reading.
    type Row<'a> = (&'a str, f64, Option<(f64, f64)>);

    fn part(rows: &[Row<'_>]) -> ServerMetrics {
        ServerMetrics {
            backends: rows
                .iter()
                .map(|(name, requests, span)| BackendShare {
                    name: name.to_string(),
                    requests: *requests,
                    request_counter: span.map(|(start, end)| CounterSpan { start, end }),
                    prefix_cache_hits: span.map(|(start, end)| CounterSpan {
                        start,
                        end: start + (end - start) / 2.0,
                    }),
                    prefix_cache_queries: span.map(|(start, end)| CounterSpan { start, end }),
                    ..BackendShare::default()
                })
                .collect(),
            backend_requests_from: Some("backends".into()),
            ..ServerMetrics::default()
        }
    }

    fn requests(m: &ServerMetrics) -> Vec<(&str, f64)> {
        m.backends
            .iter()
            .map(|b| (b.name.as_str(), b.requests))
            .collect()
    }

    #[test]
    fn overlapping_windows_count_each_request_once() {
        // Both shards saw all 70 of a's requests (60 while each was measuring).
        let one = part(&[
            ("a", 60.0, Some((100.0, 160.0))),
            ("b", 20.0, Some((0.0, 20.0))),
        ]);
        let two = part(&[
            ("a", 60.0, Some((110.0, 170.0))),
            ("b", 20.0, Some((5.0, 25.0))),
        ]);
        let m = merge(&[&one, &two]).expect("merged");
        assert_eq!(requests(&m), [("a", 70.0), ("b", 25.0)]);
        let shares: f64 = m.backends.iter().filter_map(|b| b.share).sum();
        assert!((shares - 1.0).abs() < 1e-12);
        // Hits over the span 100..140, queries over 100..170.
        assert_eq!(m.backends[0].prefix_cache_hit_avg, Some(40.0 / 70.0));
        assert!(m.notes[0].contains("span"), "{:?}", m.notes);
    }

    #[test]
    fn windows_one_after_the_other_sum() {
        let one = part(&[("a", 30.0, Some((0.0, 30.0)))]);
        let two = part(&[("a", 40.0, Some((30.0, 70.0)))]);
        let m = merge(&[&one, &two]).expect("merged");
        assert_eq!(requests(&m), [("a", 70.0)]);
        assert_eq!(m.backend_skew, Some(1.0));
    }

    #[test]
    fn without_readings_the_counts_are_summed_and_the_note_says_so() {
        let one = part(&[("a", 3.0, None), ("b", 1.0, None)]);
        let two = part(&[("a", 1.0, None), ("b", 3.0, None)]);
        let m = merge(&[&one, &two]).expect("merged");
        assert_eq!(requests(&m), [("a", 4.0), ("b", 4.0)]);
        assert_eq!(m.backends[1].share, Some(0.5));
        assert!(m.notes[0].contains("summed"), "{:?}", m.notes);
        assert!(merge(&[&ServerMetrics::default()]).is_none());
    }

    #[test]
    fn the_server_s_samples_are_the_first_sampled_shard_s() {
        let sampled = |samples: u64| ServerMetrics {
            gauges_from: crate::report::GaugesFrom::Window,
            sampling: Some(crate::report::WindowSampling {
                samples,
                ..Default::default()
            }),
            timeline: vec![Default::default(); samples as usize],
            ..ServerMetrics::default()
        };
        let (one, two) = (sampled(3), sampled(4));
        let m = merge(&[&ServerMetrics::default(), &one, &two]).expect("merged");
        assert_eq!(m.sampling, one.sampling);
        assert_eq!(m.timeline.len(), 3);
        assert_eq!(m.gauges_from, crate::report::GaugesFrom::Window);
        assert!(m.backends.is_empty());
        // With backends too, both are kept.
        let mut with_backends = part(&[("a", 3.0, Some((0.0, 3.0)))]);
        with_backends.sampling = one.sampling.clone();
        let m = merge(&[&with_backends]).expect("merged");
        assert_eq!((m.backends.len(), m.sampling.is_some()), (1, true));
    }
}
