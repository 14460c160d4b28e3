//! One running tally of a window's records, fed once per record as they arrive and read by
//! everything that watches the window live: the progress line, the rolling summaries, and the
//! checks that end a window early (run until stable, an over-saturated rate probe).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::client::RequestRecord;
use crate::figure::{FIGURES, Figure};
use crate::quantile::{PercentileMethod, percentile};

/// Recent requests kept for the progress line's median latency and error share.
const RECENT: usize = 512;

/// TTFTs kept per rolling interval for its percentiles: enough for a p99, bounded whatever
/// the rate.
const INTERVAL_TTFT_CAP: usize = 100_000;

/// What the watchers of a window ask the tally to keep beyond its counts.
#[derive(Debug, Clone, Default)]
pub struct Keep {
    /// The figures whose values are kept in full, in arrival order (run until stable).
    pub figures: Vec<Figure>,
    /// Completion instants kept over this trailing span (the saturation check).
    pub completions_for: Option<Duration>,
}

/// The records of the rolling interval under way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Interval {
    pub requests: u64,
    pub errors: u64,
    pub output_tokens: u64,
    /// Successful requests' TTFTs, milliseconds, up to a cap.
    pub ttft_ms: Vec<f64>,
}

/// A window's running tally.
#[derive(Debug, Default)]
pub struct LiveTally {
    /// Requests finished since the window started, and how many failed.
    pub requests: u64,
    pub errors: u64,
    /// Tokens of successful requests: generated, and prompt (embeddings and rerank show these).
    pub output_tokens: u64,
    pub input_tokens: u64,
    /// Whether the window's requests encode inputs (embeddings, rerank) rather than generate.
    pub encodes: bool,
    /// Outcomes of the last `RECENT` requests (true: failed).
    recent_failed: VecDeque<bool>,
    recent_failures: usize,
    /// Latencies of the last `RECENT` requests, milliseconds (E2E for encoders), a ring.
    recent_latency_ms: Vec<f64>,
    next_latency_slot: usize,
    interval: Interval,
    /// Per figure, in the figure's unit: its values, when asked to keep them.
    columns: Vec<Option<Vec<f64>>>,
    completions_for: Option<Duration>,
    completions: VecDeque<Instant>,
}

/// A tally shared between the task that feeds it and the watchers that read it.
pub type SharedTally = Arc<Mutex<LiveTally>>;

impl LiveTally {
    pub fn new(keep: &Keep) -> Self {
        let mut columns: Vec<Option<Vec<f64>>> = vec![None; FIGURES.len()];
        for figure in &keep.figures {
            columns[figure.index()].get_or_insert_with(Vec::new);
        }
        LiveTally {
            recent_failed: VecDeque::with_capacity(RECENT),
            recent_latency_ms: Vec::with_capacity(RECENT),
            columns,
            completions_for: keep.completions_for,
            ..LiveTally::default()
        }
    }

    pub fn shared(keep: &Keep) -> SharedTally {
        Arc::new(Mutex::new(LiveTally::new(keep)))
    }

    /// A shared tally, even one whose feeder panicked (the counts are still whole).
    pub fn lock(shared: &SharedTally) -> MutexGuard<'_, LiveTally> {
        shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Count one finished request, which reached the collector at `now`.
    pub fn record(&mut self, record: &RequestRecord, now: Instant) {
        let ok = record.is_ok();
        // A planned cancellation is neither an error nor a success.
        let failed = record.error.is_some();
        self.requests += 1;
        self.interval.requests += 1;
        if self.recent_failed.len() == RECENT && self.recent_failed.pop_front() == Some(true) {
            self.recent_failures -= 1;
        }
        self.recent_failed.push_back(failed);
        self.recent_failures += usize::from(failed);
        if ok {
            self.output_tokens += record.output_tokens.unwrap_or(0);
            self.input_tokens += record.prompt_tokens.unwrap_or(0);
            self.interval.output_tokens += record.output_tokens.unwrap_or(0);
            if let Some(ttft) = record.ttft_ms
                && self.interval.ttft_ms.len() < INTERVAL_TTFT_CAP
            {
                self.interval.ttft_ms.push(ttft);
            }
        } else if failed {
            self.errors += 1;
            self.interval.errors += 1;
        }
        self.keep_values(record);
        self.encodes |= record.inputs.is_some();
        let latency = if record.inputs.is_some() {
            ok.then_some(record.e2e_ms)
        } else {
            record.ttft_ms
        };
        if let Some(ms) = latency {
            if self.recent_latency_ms.len() < RECENT {
                self.recent_latency_ms.push(ms);
            } else {
                self.recent_latency_ms[self.next_latency_slot] = ms;
                self.next_latency_slot = (self.next_latency_slot + 1) % RECENT;
            }
        }
        if let Some(span) = self.completions_for {
            self.completions.push_back(now);
            while self
                .completions
                .front()
                .is_some_and(|t| now.duration_since(*t) > span)
            {
                self.completions.pop_front();
            }
        }
    }

    fn keep_values(&mut self, record: &RequestRecord) {
        for (spec, column) in FIGURES.iter().zip(&mut self.columns) {
            if let (Some(column), Some(value)) = (column.as_mut(), record.value(spec.figure)) {
                column.push(value);
            }
        }
    }

    /// The median latency of the recent requests, as the report reads a median.
    pub fn recent_median_ms(&self) -> Option<f64> {
        if self.recent_latency_ms.is_empty() {
            return None;
        }
        let mut sorted = self.recent_latency_ms.clone();
        sorted.sort_by(f64::total_cmp);
        Some(percentile(&sorted, 0.5, PercentileMethod::Linear))
    }

    /// Failures among the recent requests, and how many recent requests there are.
    pub fn recent_failures(&self) -> (usize, usize) {
        (self.recent_failures, self.recent_failed.len())
    }

    /// The interval under way; the next one starts empty.
    pub fn take_interval(&mut self) -> Interval {
        std::mem::take(&mut self.interval)
    }

    /// The kept values of `figure`, in arrival order; empty when not kept.
    pub fn values(&self, figure: Figure) -> &[f64] {
        self.columns
            .get(figure.index())
            .and_then(Option::as_deref)
            .unwrap_or(&[])
    }

    /// Completions within `span` before `now`, and the oldest completion kept.
    pub fn completions_within(&self, now: Instant, span: Duration) -> (usize, Option<Instant>) {
        let recent = self
            .completions
            .iter()
            .filter(|t| now.duration_since(**t) <= span)
            .count();
        (recent, self.completions.front().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{ErrorKind, RequestError};

    fn ok(ttft_ms: f64, tpot_ms: f64, e2e_ms: f64) -> RequestRecord {
        RequestRecord {
            ttft_ms: Some(ttft_ms),
            tpot_ms: Some(tpot_ms),
            e2e_ms,
            output_tokens: Some(4),
            ..RequestRecord::default()
        }
    }

    fn failed() -> RequestRecord {
        RequestRecord {
            ttft_ms: Some(1.0),
            error: Some(RequestError::new(
                ErrorKind::TotalTimeout,
                None,
                String::new(),
            )),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn one_record_feeds_the_counts_the_interval_and_the_asked_columns() {
        let keep = Keep {
            figures: vec![Figure::Tpot],
            completions_for: Some(Duration::from_secs(4)),
        };
        let mut tally = LiveTally::new(&keep);
        let t0 = Instant::now();
        tally.record(&ok(100.0, 10.0, 200.0), t0);
        tally.record(&failed(), t0 + Duration::from_secs(1));
        tally.record(&ok(300.0, 30.0, 400.0), t0 + Duration::from_secs(6));
        assert_eq!(
            (tally.requests, tally.errors, tally.output_tokens),
            (3, 1, 8)
        );
        // A failed request's TTFT counts for the live median, not for the interval's.
        assert_eq!(tally.recent_median_ms(), Some(100.0));
        assert_eq!(tally.recent_failures(), (1, 3));
        assert_eq!(tally.values(Figure::Tpot), [0.01, 0.03]);
        assert!(tally.values(Figure::Ttft).is_empty());
        // Completions older than the kept span are dropped.
        let now = t0 + Duration::from_secs(6);
        assert_eq!(
            tally.completions_within(now, Duration::from_secs(10)),
            (1, Some(now))
        );
        let interval = tally.take_interval();
        assert_eq!((interval.requests, interval.errors), (3, 1));
        assert_eq!(interval.ttft_ms, [100.0, 300.0]);
        assert_eq!(tally.take_interval(), Interval::default());
        assert_eq!(tally.requests, 3);
    }

    #[test]
    fn the_recent_share_forgets_requests_beyond_its_window() {
        let mut tally = LiveTally::new(&Keep::default());
        let now = Instant::now();
        tally.record(&failed(), now);
        for _ in 0..RECENT {
            tally.record(&ok(1.0, 1.0, 1.0), now);
        }
        assert_eq!(tally.recent_failures(), (0, RECENT));
        assert_eq!(tally.errors, 1);
    }
}
