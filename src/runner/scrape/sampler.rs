//! Scraping a target's metrics endpoints during a measured window (its `metrics_interval`,
//! every second by default), on the side client and off the request path: each sample's
//! text is parsed on the blocking pool, and a failed scrape is counted, never fatal.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::reading::{Reading, power, read};
use super::window::{InWindow, Window};
use crate::plan::power::DEFAULT_POWER_METRIC;
use crate::plan::{MetricsEndpoint, MetricsRole};

/// The endpoints a window samples, and which of them make up the server.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    /// Every metrics endpoint of the target, in the plan's order.
    pub urls: Vec<String>,
    /// Indices into `urls` whose levels and counters add up to the server: the backends
    /// behind a gateway, else every endpoint.
    pub summed: Vec<usize>,
    /// The power gauge read from every endpoint that exports it.
    pub power_metric: String,
}

impl Sampled {
    /// A target's endpoints: its `metrics` list, else its one `metrics_url`; `None` for a
    /// target with neither.
    pub fn of(metrics_url: Option<&str>, metrics: &[MetricsEndpoint]) -> Option<Sampled> {
        if metrics.is_empty() {
            return metrics_url.map(|url| Sampled {
                urls: vec![url.to_string()],
                summed: vec![0],
                power_metric: DEFAULT_POWER_METRIC.to_string(),
            });
        }
        let backends: Vec<usize> = (0..metrics.len())
            .filter(|&i| metrics[i].role == MetricsRole::Backend)
            .collect();
        Some(Sampled {
            urls: metrics.iter().map(|m| m.url.clone()).collect(),
            summed: if backends.is_empty() {
                (0..metrics.len()).collect()
            } else {
                backends
            },
            power_metric: DEFAULT_POWER_METRIC.to_string(),
        })
    }
}

/// Samples as the window opens, every interval while it runs, and once when it closes.
pub struct Sampler {
    stop: oneshot::Sender<()>,
    task: JoinHandle<InWindow>,
    /// The instant the samples' times count from.
    origin: Instant,
}

impl Sampler {
    pub fn start(http: reqwest::Client, sampled: Sampled, interval: Duration) -> Sampler {
        let (stop, mut stopped) = oneshot::channel();
        let origin = Instant::now();
        let task = tokio::spawn(async move {
            let urls: Arc<[String]> = sampled.urls.into();
            let metric: Arc<str> = sampled.power_metric.into();
            let mut window = Window::new(interval, urls.len(), sampled.summed);
            let mut ticks = tokio::time::interval(interval);
            // A slow scrape skips ticks rather than bunching the next ones.
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                let last = tokio::select! {
                    _ = ticks.tick() => false,
                    _ = &mut stopped => true,
                };
                let t = origin.elapsed().as_secs_f64();
                window.add(t, &sample(&http, urls.clone(), metric.clone()).await);
                if last {
                    return window.finish();
                }
            }
        });
        Sampler { stop, task, origin }
    }

    /// The instant the window's sample times count from.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Stop after one last sample; what the window's samples gave (`None` if the sampler
    /// itself failed).
    pub async fn finish(self) -> Option<InWindow> {
        let _ = self.stop.send(());
        self.task.await.ok()
    }
}

/// One sample: every endpoint scraped concurrently, the texts read on the blocking pool.
async fn sample(
    http: &reqwest::Client,
    urls: Arc<[String]>,
    power_metric: Arc<str>,
) -> Vec<Result<Reading, String>> {
    let texts =
        futures_util::future::join_all(urls.iter().map(|url| super::fetch(http, url))).await;
    let count = urls.len();
    let read_all = move || {
        texts
            .into_iter()
            .zip(urls.iter())
            .map(|(text, url)| {
                let sample = super::parse_prometheus(&text?);
                let mut reading = read(&sample).map_err(|e| format!("{url} {e}"))?;
                reading.power = power(&sample, &power_metric);
                Ok(reading)
            })
            .collect()
    };
    tokio::task::spawn_blocking(read_all)
        .await
        .unwrap_or_else(|e| vec![Err(format!("a sample could not be read: {e}")); count])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::scrape::tests::endpoint;

    #[test]
    fn the_backends_make_up_the_server_else_every_endpoint() {
        assert_eq!(Sampled::of(None, &[]), None);
        let one = Sampled::of(Some("http://a/metrics"), &[]).unwrap();
        assert_eq!((one.urls.len(), one.summed), (1, vec![0]));
        let gateway = endpoint("http://g/metrics", MetricsRole::Gateway);
        let backend = endpoint("http://b/metrics", MetricsRole::Backend);
        let behind = Sampled::of(None, &[gateway.clone(), backend.clone(), backend]).unwrap();
        assert_eq!(behind.urls.len(), 3);
        assert_eq!(behind.summed, [1, 2]);
        let gateways = Sampled::of(None, &[gateway.clone(), gateway]).unwrap();
        assert_eq!(gateways.summed, [0, 1]);
    }
}
