//! Scrapes during a measured window (a target's `metrics_interval`): a compact time series of
//! the engine-neutral gauges and the request and token rates between scrapes.

use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::report::MetricsPoint;

use super::{Sample, diff};

/// What one scrape gave per endpoint, normalized: (gauges, absolute counters).
#[derive(Debug, Clone, Default)]
struct Reading {
    running: Option<f64>,
    waiting: Option<f64>,
    kv_cache_usage: Option<f64>,
    requests: Option<f64>,
    generation_tokens: Option<f64>,
}

fn read(sample: &Sample) -> Reading {
    // Against an empty scrape, counter "deltas" are the counters' values.
    let m = diff("", &Sample::default(), sample);
    let gauge = |name: &str| m.normalized_gauges.get(name).map(|g| g.max);
    let counter = |name: &str| m.normalized_counter_deltas.get(name).copied();
    Reading {
        running: gauge("requests_running"),
        waiting: gauge("requests_waiting"),
        kv_cache_usage: gauge("kv_cache_usage"),
        requests: counter("requests"),
        generation_tokens: counter("generation_tokens"),
    }
}

/// Summed over the endpoints that answered; `None` when none had the figure.
fn sum(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values
        .flatten()
        .fold(None, |acc, v| Some(acc.unwrap_or(0.0) + v))
}

/// Scrapes `urls` every `interval` until stopped: one at the start, one at the stop.
pub struct Sampler {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Vec<(f64, Vec<Reading>)>>,
}

impl Sampler {
    pub fn start(http: reqwest::Client, urls: Vec<String>, interval: Duration) -> Sampler {
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let origin = Instant::now();
            let mut points = Vec::new();
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                let last = tokio::select! {
                    _ = ticks.tick() => false,
                    _ = &mut stopped => true,
                };
                let t = origin.elapsed().as_secs_f64();
                let scrapes =
                    futures_util::future::join_all(urls.iter().map(|u| super::scrape(&http, u)))
                        .await;
                let readings = scrapes.iter().flatten().map(read).collect();
                points.push((t, readings));
                if last {
                    return points;
                }
            }
        });
        Sampler { stop, task }
    }

    /// Stop after one last scrape; the series.
    pub async fn finish(self) -> Vec<MetricsPoint> {
        let _ = self.stop.send(());
        let points = self.task.await.unwrap_or_default();
        series(&points)
    }
}

fn series(points: &[(f64, Vec<Reading>)]) -> Vec<MetricsPoint> {
    let totals: Vec<(f64, Reading)> = points
        .iter()
        .map(|(t, readings)| {
            let r = Reading {
                running: sum(readings.iter().map(|r| r.running)),
                waiting: sum(readings.iter().map(|r| r.waiting)),
                kv_cache_usage: readings
                    .iter()
                    .filter_map(|r| r.kv_cache_usage)
                    .reduce(f64::max),
                requests: sum(readings.iter().map(|r| r.requests)),
                generation_tokens: sum(readings.iter().map(|r| r.generation_tokens)),
            };
            (*t, r)
        })
        .collect();
    let mut out = Vec::with_capacity(totals.len());
    for (i, (t, r)) in totals.iter().enumerate() {
        let rate = |field: fn(&Reading) -> Option<f64>| {
            let (t0, before) = totals.get(i.checked_sub(1)?)?;
            let dt = t - t0;
            (dt > 0.0).then_some((field(r)? - field(before)?) / dt)
        };
        out.push(MetricsPoint {
            t_s: *t,
            requests_running: r.running,
            requests_waiting: r.waiting,
            kv_cache_usage: r.kv_cache_usage,
            requests_per_s: rate(|r| r.requests),
            generation_tok_s: rate(|r| r.generation_tokens),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::scrape::parse_prometheus;

    fn reading(text: &str) -> Reading {
        read(&parse_prometheus(text))
    }

    #[test]
    fn levels_are_summed_over_backends_and_rates_come_from_successive_scrapes() {
        let a0 = reading(
            "vllm:num_requests_running 1\nvllm:request_success_total 10\nvllm:kv_cache_usage_perc 0.2\n",
        );
        let b0 = reading(
            "vllm:num_requests_running 2\nvllm:request_success_total 0\nvllm:kv_cache_usage_perc 0.5\n",
        );
        let a1 = reading(
            "vllm:num_requests_running 0\nvllm:request_success_total 14\nvllm:kv_cache_usage_perc 0.1\n",
        );
        let b1 = reading(
            "vllm:num_requests_running 4\nvllm:request_success_total 2\nvllm:kv_cache_usage_perc 0.3\n",
        );
        let s = series(&[(0.0, vec![a0, b0]), (0.5, vec![a1, b1])]);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].requests_running, Some(3.0));
        assert_eq!(s[0].kv_cache_usage, Some(0.5));
        assert_eq!(s[0].requests_per_s, None);
        assert_eq!(s[1].requests_running, Some(4.0));
        // (16 − 10) requests over 0.5 s.
        assert_eq!(s[1].requests_per_s, Some(12.0));
        assert_eq!(s[1].generation_tok_s, None);
    }
}
