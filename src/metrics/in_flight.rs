//! Load as it was held: the time-weighted mean of requests and tokens in flight over a
//! phase's window, from the records, beside what the phase planned.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::client::RequestRecord;

/// The load a phase actually held, averaged over its `elapsed` window (first measured start
/// to last end).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct InFlight {
    /// Time-weighted mean of measured requests in flight: `Σ e2e / elapsed`, since every
    /// record lies inside the window (failed ones too: they held a slot while they ran).
    pub requests: f64,
    /// Time-weighted mean of tokens in flight: each request holds its prompt tokens from
    /// start to end and its generated tokens as they arrive (spread evenly between the first
    /// output and the end, so `output_tokens × generation / 2`).
    pub tokens: f64,
    /// `Σ e2e / requests`, seconds: the mean latency Little's law multiplies by the rate.
    pub mean_latency_s: f64,
}

impl InFlight {
    /// The same load over a window of `to_s` instead of `from_s` (an imported report states
    /// its own wall clock).
    pub fn over_window(self, from_s: f64, to_s: f64) -> InFlight {
        if from_s <= 0.0 || to_s <= 0.0 {
            return self;
        }
        let scale = from_s / to_s;
        InFlight {
            requests: self.requests * scale,
            tokens: self.tokens * scale,
            mean_latency_s: self.mean_latency_s,
        }
    }
}

/// Running sums of a phase's records, for [`InFlight`]. Integer nanoseconds, so that any
/// order of the same records (a streamed window, a sample's full tally, a shard merge) gives
/// the same figures bit for bit.
#[derive(Debug, Clone, Copy, Default)]
pub struct InFlightSums {
    requests: u64,
    request_ns: u128,
    /// Twice the token-nanoseconds (the generated half is `output_tokens × generation / 2`).
    double_token_ns: u128,
}

impl InFlightSums {
    pub fn add(&mut self, r: &RequestRecord) {
        let (request_ns, double_token_ns) = held(r);
        self.requests += 1;
        self.request_ns += request_ns;
        self.double_token_ns += double_token_ns;
    }

    /// The means over a window of `elapsed_s`; `None` for an empty or instant window.
    pub fn finish(&self, elapsed_s: f64) -> Option<InFlight> {
        if self.requests == 0 || elapsed_s <= 0.0 {
            return None;
        }
        let window_ns = elapsed_s * 1e9;
        Some(InFlight {
            requests: self.request_ns as f64 / window_ns,
            tokens: self.double_token_ns as f64 / 2.0 / window_ns,
            mean_latency_s: self.request_ns as f64 / self.requests as f64 / 1e9,
        })
    }
}

/// One request's in-flight nanoseconds and twice its token-nanoseconds. The prompt counts
/// the server's figure, else the planned one (a failed request has no usage).
fn held(r: &RequestRecord) -> (u128, u128) {
    let ns = |ms: f64| (ms.max(0.0) * 1e6).round() as u128;
    let e2e_ns = ns(r.e2e_ms);
    let prompt = u128::from(r.prompt_tokens.or(r.planned_context_tokens).unwrap_or(0));
    let generated = match (r.output_tokens, r.generation_ms) {
        (Some(n), Some(g_ms)) if g_ms > 0.0 => u128::from(n) * ns(g_ms),
        _ => 0,
    };
    (e2e_ns, 2 * prompt * e2e_ns + generated)
}

/// What the phase planned to hold: its concurrency in a closed loop; in an open loop its
/// rate times the mean latency it saw (Little's law), capped by `max_concurrency`.
pub fn planned_requests_in_flight(
    concurrency: Option<u32>,
    rate_rps: Option<f64>,
    held: &InFlight,
) -> Option<f64> {
    match (concurrency, rate_rps) {
        (Some(c), None) => Some(f64::from(c)),
        (cap, Some(rate)) => {
            let little = rate * held.mean_latency_s;
            Some(cap.map_or(little, |c| little.min(f64::from(c))))
        }
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(start_ms: f64, e2e_ms: f64, first_ms: f64, prompt: u64, out: u64) -> RequestRecord {
        let mut r = RequestRecord {
            start_offset_ms: start_ms,
            e2e_ms,
            time_to_first_output_ms: Some(first_ms),
            prompt_tokens: Some(prompt),
            output_tokens: Some(out),
            ..RequestRecord::default()
        };
        crate::client::derive_record_fields(&mut r);
        r
    }

    /// The in-flight counts integrated step by step at 1 ms, independently of the sums.
    fn integrated(records: &[RequestRecord], end_ms: usize) -> (f64, f64) {
        let (mut reqs, mut tokens) = (0.0, 0.0);
        for t in 0..end_ms {
            let mid = t as f64 + 0.5;
            for r in records {
                let (start, end) = (r.start_offset_ms, r.start_offset_ms + r.e2e_ms);
                if mid < start || mid >= end {
                    continue;
                }
                reqs += 1.0;
                let first = start + r.time_to_first_output_ms.unwrap();
                let n = r.output_tokens.unwrap() as f64;
                // The first token at `first`, the other n − 1 evenly until the end.
                let arrived = if mid < first {
                    0.0
                } else {
                    1.0 + ((mid - first) / ((end - first) / (n - 1.0))).floor()
                };
                tokens += r.prompt_tokens.unwrap() as f64 + arrived;
            }
        }
        (reqs / end_ms as f64, tokens / end_ms as f64)
    }

    #[test]
    fn means_match_a_step_by_step_integration() {
        let records = [
            record(0.0, 400.0, 100.0, 50, 30),
            record(100.0, 600.0, 200.0, 20, 40),
            record(650.0, 350.0, 50.0, 10, 10),
        ];
        let mut sums = InFlightSums::default();
        records.iter().for_each(|r| sums.add(r));
        let held = sums.finish(1.0).unwrap();
        let (reqs, tokens) = integrated(&records, 1000);
        assert!((held.requests - 1.35).abs() < 1e-12, "{}", held.requests);
        assert!((held.requests - reqs).abs() < 1e-9);
        // Only the 1 ms steps' rounding at each token's arrival parts them.
        assert!(
            (held.tokens - tokens).abs() / tokens < 2e-3,
            "{held:?} vs {tokens}"
        );
        assert!((held.mean_latency_s - 0.45).abs() < 1e-12);
    }

    #[test]
    fn a_failed_request_holds_its_planned_prompt() {
        let failed = RequestRecord {
            e2e_ms: 100.0,
            planned_context_tokens: Some(8),
            ..RequestRecord::default()
        };
        let mut sums = InFlightSums::default();
        sums.add(&failed);
        let held = sums.finish(0.2).unwrap();
        assert_eq!(held.requests, 0.5);
        assert_eq!(held.tokens, 4.0);
        assert_eq!(InFlightSums::default().finish(1.0), None);
        let longer = held.over_window(0.2, 0.4);
        assert_eq!((longer.requests, longer.tokens), (0.25, 2.0));
    }

    #[test]
    fn the_order_of_the_records_does_not_change_a_bit() {
        let records: Vec<RequestRecord> = (0..500)
            .map(|i| {
                let f = f64::from(i);
                record(
                    f * 0.37,
                    50.0 + (f * 1.7).sin() * 20.3,
                    7.1,
                    100 + i as u64,
                    33,
                )
            })
            .collect();
        let mut forward = InFlightSums::default();
        records.iter().for_each(|r| forward.add(r));
        let mut backward = InFlightSums::default();
        records.iter().rev().for_each(|r| backward.add(r));
        assert_eq!(forward.finish(3.3), backward.finish(3.3));
    }

    #[test]
    fn planned_load_is_the_concurrency_or_rate_times_latency() {
        let held = InFlight {
            requests: 3.0,
            tokens: 0.0,
            mean_latency_s: 0.5,
        };
        assert_eq!(planned_requests_in_flight(Some(4), None, &held), Some(4.0));
        assert_eq!(
            planned_requests_in_flight(None, Some(10.0), &held),
            Some(5.0)
        );
        assert_eq!(
            planned_requests_in_flight(Some(2), Some(10.0), &held),
            Some(2.0)
        );
        assert_eq!(planned_requests_in_flight(None, None, &held), None);
    }
}
