//! Figures from the samples taken during a measured window: each gauge's min, max and
//! time-weighted mean, the server's levels as a whole, the generation rate, and a time series
//! kept to a bounded number of points.

use std::collections::BTreeMap;
use std::time::Duration;

use super::reading::{Counters, Levels, Reading};
use crate::report::{GaugeRange, MetricsPoint, WindowSampling};

/// Points the time series keeps at most; a longer window keeps every second sample, then
/// every fourth, and so on. The ranges, means and rates still use every sample.
pub const MAX_POINTS: usize = 2048;

/// One gauge over the samples that had it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Track {
    min: f64,
    max: f64,
    first_t: f64,
    last_t: f64,
    last_value: f64,
    /// Area under the line joining the samples.
    area: f64,
}

impl Track {
    fn start(t: f64, value: f64) -> Track {
        Track {
            min: value,
            max: value,
            first_t: t,
            last_t: t,
            last_value: value,
            area: 0.0,
        }
    }

    fn add(&mut self, t: f64, value: f64) {
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.area += (self.last_value + value) / 2.0 * (t - self.last_t);
        self.last_t = t;
        self.last_value = value;
    }

    fn range(&self) -> GaugeRange {
        let span = self.last_t - self.first_t;
        GaugeRange {
            min: self.min,
            max: self.max,
            // A gauge that held still, or was seen at one instant only: the value seen.
            mean: Some(if span > 0.0 && self.min < self.max {
                self.area / span
            } else {
                self.last_value
            }),
        }
    }
}

/// Tracks by name (or label text).
#[derive(Debug, Clone, Default)]
struct Tracks(BTreeMap<String, Track>);

impl Tracks {
    fn add(&mut self, key: &str, t: f64, value: f64) {
        match self.0.get_mut(key) {
            Some(track) => track.add(t, value),
            None => {
                self.0.insert(key.to_string(), Track::start(t, value));
            }
        }
    }

    fn ranges(&self) -> BTreeMap<String, GaugeRange> {
        self.0.iter().map(|(k, t)| (k.clone(), t.range())).collect()
    }
}

/// One endpoint's gauges over the window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndpointGauges {
    /// Samples the endpoint answered.
    pub answered: u64,
    /// Each listed gauge it exported: min, max and time-weighted mean.
    pub gauges: BTreeMap<String, GaugeRange>,
    /// The same per label set, for gauges with several.
    pub labelled: BTreeMap<String, BTreeMap<String, GaugeRange>>,
}

#[derive(Debug, Clone, Default)]
struct EndpointTracks {
    answered: u64,
    gauges: Tracks,
    labelled: BTreeMap<&'static str, Tracks>,
}

impl EndpointTracks {
    fn add(&mut self, t: f64, reading: &Reading) {
        self.answered += 1;
        for (name, value) in &reading.gauges {
            self.gauges.add(name, t, *value);
        }
        for (name, sets) in &reading.labelled {
            let tracks = self.labelled.entry(name).or_default();
            for (labels, value) in sets {
                tracks.add(labels, t, *value);
            }
        }
    }

    fn finish(&self) -> EndpointGauges {
        EndpointGauges {
            answered: self.answered,
            gauges: self.gauges.ranges(),
            labelled: self
                .labelled
                .iter()
                .map(|(name, tracks)| (name.to_string(), tracks.ranges()))
                .collect(),
        }
    }
}

/// The server as a whole at one sample.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Point {
    t: f64,
    levels: Levels,
    counters: Counters,
}

/// The time series, thinned to at most [`MAX_POINTS`] as it grows; the last sample is kept.
#[derive(Debug)]
struct Points {
    kept: Vec<Point>,
    /// Keep one sample in this many.
    stride: u64,
    seen: u64,
    last: Option<Point>,
}

impl Points {
    fn new() -> Points {
        Points {
            kept: Vec::new(),
            stride: 1,
            seen: 0,
            last: None,
        }
    }

    fn push(&mut self, point: Point) {
        if self.seen.is_multiple_of(self.stride) {
            self.kept.push(point);
            if self.kept.len() >= MAX_POINTS {
                let mut index = 0;
                self.kept.retain(|_| {
                    index += 1;
                    index % 2 == 1
                });
                self.stride *= 2;
            }
        }
        self.seen += 1;
        self.last = Some(point);
    }

    fn finish(mut self) -> Vec<Point> {
        if let Some(last) = self.last
            && self.kept.last() != Some(&last)
        {
            self.kept.push(last);
        }
        self.kept
    }
}

/// What the samples of one window gave.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InWindow {
    /// Each sampled endpoint's gauges, in the order they were sampled.
    pub endpoints: Vec<EndpointGauges>,
    /// The server's levels (`requests_running`, `requests_waiting`, `kv_cache_usage`) over
    /// the summed endpoints: requests added up, the fullest KV cache.
    pub levels: BTreeMap<String, GaugeRange>,
    pub timeline: Vec<MetricsPoint>,
    pub sampling: WindowSampling,
    /// The power gauge: `[t, watts]` at each sample every endpoint answered and one had it.
    pub power: Vec<[f64; 2]>,
    /// The most devices one power sample summed.
    pub power_devices: u64,
}

/// Samples as they arrive, each endpoint's and the server's as a whole.
#[derive(Debug)]
pub struct Window {
    interval: Duration,
    /// The endpoints that make up the server (the backends behind a gateway).
    summed: Vec<usize>,
    endpoints: Vec<EndpointTracks>,
    levels: Tracks,
    points: Points,
    samples: u64,
    failed: u64,
    first_failure: Option<String>,
    first: Option<(f64, Counters)>,
    previous: Option<(f64, Counters)>,
    generation_peak: Option<f64>,
    power: Vec<[f64; 2]>,
    power_devices: u64,
}

impl Window {
    pub fn new(interval: Duration, endpoints: usize, summed: Vec<usize>) -> Window {
        Window {
            interval,
            summed,
            endpoints: vec![EndpointTracks::default(); endpoints],
            levels: Tracks::default(),
            points: Points::new(),
            samples: 0,
            failed: 0,
            first_failure: None,
            first: None,
            previous: None,
            generation_peak: None,
            power: Vec::new(),
            power_devices: 0,
        }
    }

    /// One sample: every endpoint's scrape, in order, taken `t` seconds into the window. The
    /// server's figures take it only when every summed endpoint answered.
    pub fn add(&mut self, t: f64, scrapes: &[Result<Reading, String>]) {
        for (tracks, scrape) in self.endpoints.iter_mut().zip(scrapes) {
            match scrape {
                Ok(reading) => tracks.add(t, reading),
                Err(e) => {
                    self.failed += 1;
                    self.first_failure.get_or_insert_with(|| e.clone());
                }
            }
        }
        self.add_power(t, scrapes);
        let summed: Option<Vec<&Reading>> = self
            .summed
            .iter()
            .map(|&i| scrapes.get(i)?.as_ref().ok())
            .collect();
        let Some(summed) = summed.filter(|s| !s.is_empty()) else {
            return;
        };
        self.samples += 1;
        let levels = Levels::total(summed.iter().map(|r| &r.levels));
        let counters = Counters::total(summed.iter().map(|r| &r.counters));
        for (name, value) in [
            ("requests_running", levels.running),
            ("requests_waiting", levels.waiting),
            ("kv_cache_usage", levels.kv_cache_usage),
        ] {
            if let Some(value) = value {
                self.levels.add(name, t, value);
            }
        }
        if let Some((t0, before)) = self.previous
            && let Some(rate) = per_second(t0, before, t, counters, |c| c.generation_tokens)
        {
            self.generation_peak = Some(self.generation_peak.map_or(rate, |p| p.max(rate)));
        }
        self.first.get_or_insert((t, counters));
        self.previous = Some((t, counters));
        self.points.push(Point {
            t,
            levels,
            counters,
        });
    }

    /// The power gauge summed over the endpoints that export it; a sample with an endpoint
    /// that did not answer would read low, so it is left out.
    fn add_power(&mut self, t: f64, scrapes: &[Result<Reading, String>]) {
        let Some(readings) = scrapes
            .iter()
            .map(|s| s.as_ref().ok())
            .collect::<Option<Vec<&Reading>>>()
        else {
            return;
        };
        let mut found = readings.iter().filter_map(|r| r.power).peekable();
        if found.peek().is_none() {
            return;
        }
        let (watts, devices) = found.fold((0.0, 0), |(w, d), (rw, rd)| (w + rw, d + rd));
        self.power.push([t, watts]);
        self.power_devices = self.power_devices.max(devices);
    }

    pub fn finish(self) -> InWindow {
        let span = self.first.zip(self.previous);
        InWindow {
            endpoints: self.endpoints.iter().map(EndpointTracks::finish).collect(),
            levels: self.levels.ranges(),
            timeline: series(&self.points.finish()),
            sampling: WindowSampling {
                interval_s: self.interval.as_secs_f64(),
                samples: self.samples,
                failed: self.failed,
                first_failure: self.first_failure,
                span_s: span.map_or(0.0, |((t0, _), (t1, _))| t1 - t0),
                generation_tok_s: span.and_then(|((t0, first), (t1, last))| {
                    per_second(t0, first, t1, last, |c| c.generation_tokens)
                }),
                generation_tok_s_peak: self.generation_peak,
            },
            power: self.power,
            power_devices: self.power_devices,
        }
    }
}

/// A counter's rate between two samples; `None` without it or when it went down (the
/// server restarted).
fn per_second(
    t0: f64,
    before: Counters,
    t1: f64,
    after: Counters,
    field: fn(&Counters) -> Option<f64>,
) -> Option<f64> {
    let (v0, v1) = (field(&before)?, field(&after)?);
    let dt = t1 - t0;
    (dt > 0.0 && v1 >= v0).then(|| (v1 - v0) / dt)
}

/// Prefix-cache hits over queries between two samples.
fn hit_rate(before: Counters, after: Counters) -> Option<f64> {
    let queries = after.prefix_cache_queries? - before.prefix_cache_queries?;
    let hits = after.prefix_cache_hits? - before.prefix_cache_hits?;
    (queries > 0.0 && hits >= 0.0).then(|| hits / queries)
}

/// The points with the rates since the point before.
fn series(points: &[Point]) -> Vec<MetricsPoint> {
    let mut out = Vec::with_capacity(points.len());
    let mut previous: Option<&Point> = None;
    for p in points {
        let since = |field: fn(&Counters) -> Option<f64>| {
            previous.and_then(|b| per_second(b.t, b.counters, p.t, p.counters, field))
        };
        out.push(MetricsPoint {
            t_s: p.t,
            requests_running: p.levels.running,
            requests_waiting: p.levels.waiting,
            kv_cache_usage: p.levels.kv_cache_usage,
            requests_per_s: since(|c| c.requests),
            generation_tok_s: since(|c| c.generation_tokens),
            prefix_cache_hit_rate: previous.and_then(|b| hit_rate(b.counters, p.counters)),
        });
        previous = Some(p);
    }
    out
}

#[cfg(test)]
mod tests;
