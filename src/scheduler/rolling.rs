//! Rolling summaries of a long window: every interval, the figures of the records that
//! finished in it, written to the journal as a `{"summary": {...}}` line so `tail -f` shows
//! how a soak is going.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::live::LiveTally;
use crate::quantile::{PercentileMethod, percentile};

/// The figures of one interval, as a journal line states them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RollingSummary {
    /// Seconds since the window started.
    pub elapsed_s: f64,
    /// Seconds left of a timed window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remaining_s: Option<f64>,
    /// Seconds this summary covers.
    pub interval_s: f64,
    /// Requests finished in the interval, and since the window started.
    pub requests: u64,
    pub requests_total: u64,
    pub errors: u64,
    pub error_rate: f64,
    pub request_rate: f64,
    pub output_tokens_per_second: f64,
    /// Milliseconds, over the interval's successful requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_p50_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_p99_ms: Option<f64>,
}

/// Says when an interval's summary is due and states it from the window's [`LiveTally`].
pub struct Rolling {
    every: Duration,
    started: Instant,
    interval_start: Instant,
    planned: Option<Duration>,
}

impl Rolling {
    pub fn new(every: Duration, planned: Option<Duration>) -> Self {
        let now = Instant::now();
        Rolling {
            every,
            started: now,
            interval_start: now,
            planned,
        }
    }

    /// The interval's summary once `every` has passed since the last one; starts the next.
    pub fn due(&mut self, tally: &mut LiveTally, now: Instant) -> Option<RollingSummary> {
        let interval = now.saturating_duration_since(self.interval_start);
        if interval < self.every {
            return None;
        }
        self.interval_start = now;
        let mut records = tally.take_interval();
        let elapsed = now.saturating_duration_since(self.started);
        let seconds = interval.as_secs_f64().max(1e-9);
        records.ttft_ms.sort_unstable_by(f64::total_cmp);
        let ttft = |q: f64| {
            (!records.ttft_ms.is_empty())
                .then(|| percentile(&records.ttft_ms, q, PercentileMethod::Linear))
        };
        Some(RollingSummary {
            elapsed_s: elapsed.as_secs_f64(),
            remaining_s: self
                .planned
                .map(|p| p.saturating_sub(elapsed).as_secs_f64()),
            interval_s: interval.as_secs_f64(),
            requests: records.requests,
            requests_total: tally.requests,
            errors: records.errors,
            error_rate: if records.requests == 0 {
                0.0
            } else {
                records.errors as f64 / records.requests as f64
            },
            request_rate: records.requests as f64 / seconds,
            output_tokens_per_second: records.output_tokens as f64 / seconds,
            ttft_p50_ms: ttft(0.50),
            ttft_p99_ms: ttft(0.99),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::RequestRecord;

    #[test]
    fn an_interval_summarizes_its_own_records_then_starts_afresh() {
        let mut rolling = Rolling::new(Duration::from_secs(60), Some(Duration::from_secs(600)));
        let mut tally = LiveTally::default();
        let t0 = rolling.started;
        for i in 0..10 {
            let mut r = RequestRecord {
                ttft_ms: Some(f64::from(i)),
                output_tokens: Some(4),
                ..RequestRecord::default()
            };
            if i == 9 {
                r.error = Some(crate::client::RequestError::new(
                    crate::client::ErrorKind::TotalTimeout,
                    None,
                    String::new(),
                ));
            }
            tally.record(&r, t0);
        }
        assert_eq!(rolling.due(&mut tally, t0 + Duration::from_secs(59)), None);
        let s = rolling
            .due(&mut tally, t0 + Duration::from_secs(60))
            .expect("due");
        assert_eq!((s.requests, s.errors, s.requests_total), (10, 1, 10));
        assert!((s.error_rate - 0.1).abs() < 1e-12);
        assert_eq!(s.remaining_s, Some(540.0));
        assert_eq!(s.ttft_p50_ms, Some(4.0));
        assert!((s.output_tokens_per_second - 36.0 / 60.0).abs() < 1e-12);
        let next = rolling
            .due(&mut tally, t0 + Duration::from_secs(120))
            .expect("due");
        assert_eq!((next.requests, next.requests_total), (0, 10));
        assert_eq!(next.ttft_p50_ms, None);
    }
}
