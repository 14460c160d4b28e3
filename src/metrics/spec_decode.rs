//! Speculative decoding per phase, from what the server reported per request (vLLM's
//! `metrics.speculative_decoding`): the acceptance rate and mean acceptance length pooled
//! over the phase's verify steps and draft tokens, 95% intervals by bootstrap over requests,
//! the pooled histogram, and the same rates from the server's counters over the window, as a
//! cross-check.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bootstrap_ratio_ci;
use crate::client::RequestRecord;

/// Seeds the bootstrap, so a report's intervals are the same each time it is built.
const BOOTSTRAP_SEED: u64 = 0x5bec_dec0;

/// One request's counts, as the phase pools them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Counts {
    steps: u64,
    drafted: u64,
    accepted: u64,
}

/// The running counts of a phase's records that reported acceptance.
#[derive(Debug, Clone, Default)]
pub struct SpecDecodeTally {
    requests: Vec<Counts>,
    histogram: Vec<u64>,
}

impl SpecDecodeTally {
    /// Count one successful record.
    pub fn add(&mut self, record: &RequestRecord) {
        let Some(s) = &record.spec_decoding else {
            return;
        };
        self.requests.push(Counts {
            steps: s.num_spec_steps,
            drafted: s.draft_tokens().unwrap_or(0),
            accepted: s.num_accepted_draft_tokens,
        });
        if self.histogram.len() < s.acceptance_histogram.len() {
            self.histogram.resize(s.acceptance_histogram.len(), 0);
        }
        for (slot, n) in self.histogram.iter_mut().zip(&s.acceptance_histogram) {
            *slot += n;
        }
    }

    /// The phase's figures; `None` when no request reported acceptance.
    pub fn finish(&self) -> Option<SpecDecodeSummary> {
        if self.requests.is_empty() {
            return None;
        }
        let sum = |f: fn(&Counts) -> u64| self.requests.iter().map(f).sum::<u64>();
        let (steps, drafted, accepted) =
            (sum(|c| c.steps), sum(|c| c.drafted), sum(|c| c.accepted));
        let pairs = |den: fn(&Counts) -> u64| -> Vec<(f64, f64)> {
            self.requests
                .iter()
                .map(|c| (c.accepted as f64, den(c) as f64))
                .collect()
        };
        let rate_ci = bootstrap_ratio_ci(&pairs(|c| c.drafted), BOOTSTRAP_SEED);
        let per_step_ci = bootstrap_ratio_ci(&pairs(|c| c.steps), BOOTSTRAP_SEED);
        Some(SpecDecodeSummary {
            requests: self.requests.len() as u64,
            num_spec_steps: steps,
            num_draft_tokens: drafted,
            num_accepted_draft_tokens: accepted,
            acceptance_rate: (drafted > 0).then(|| accepted as f64 / drafted as f64),
            acceptance_rate_ci95: rate_ci,
            acceptance_length: (steps > 0).then(|| 1.0 + accepted as f64 / steps as f64),
            acceptance_length_ci95: per_step_ci.map(|[lo, hi]| [1.0 + lo, 1.0 + hi]),
            acceptance_histogram: self.histogram.clone(),
            counters: None,
        })
    }
}

/// A phase's speculative decoding, pooled over the requests that reported it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SpecDecodeSummary {
    /// Successful requests that reported acceptance.
    pub requests: u64,
    pub num_spec_steps: u64,
    pub num_draft_tokens: u64,
    pub num_accepted_draft_tokens: u64,
    /// Σ accepted / Σ drafted draft tokens.
    pub acceptance_rate: Option<f64>,
    /// 95% interval of `acceptance_rate`, by bootstrap over requests.
    pub acceptance_rate_ci95: Option<[f64; 2]>,
    /// `1 + Σ accepted / Σ verify steps`: tokens per step, the bonus token included.
    pub acceptance_length: Option<f64>,
    /// 95% interval of `acceptance_length`, by bootstrap over requests.
    pub acceptance_length_ci95: Option<[f64; 2]>,
    /// Verify steps by the draft tokens they accepted (index `j` accepted `j`), summed.
    pub acceptance_histogram: Vec<u64>,
    /// The same rates from the server's counters over the phase's window, when scraped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<SpecDecodeCounters>,
}

/// vLLM's `spec_decode` counters' deltas over the window, and the rates they give.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SpecDecodeCounters {
    /// `vllm:spec_decode_num_drafts_total`: verify steps.
    pub drafts: f64,
    pub draft_tokens: f64,
    pub accepted_tokens: f64,
    pub acceptance_rate: Option<f64>,
    pub acceptance_length: Option<f64>,
}

impl SpecDecodeCounters {
    /// From the deltas of the drafts, draft-token and accepted-token counters; `None` when
    /// the window drafted nothing.
    pub fn from_deltas(drafts: f64, draft_tokens: f64, accepted_tokens: f64) -> Option<Self> {
        (drafts > 0.0).then(|| SpecDecodeCounters {
            drafts,
            draft_tokens,
            accepted_tokens,
            acceptance_rate: (draft_tokens > 0.0).then(|| accepted_tokens / draft_tokens),
            acceptance_length: Some(1.0 + accepted_tokens / drafts),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::SpecDecoding;

    fn record(steps: u64, accepted: u64, histogram: Vec<u64>) -> RequestRecord {
        RequestRecord {
            spec_decoding: Some(SpecDecoding {
                mean_acceptance_length: 1.0 + accepted as f64 / steps as f64,
                draft_acceptance_rate: accepted as f64 / (3 * steps) as f64,
                acceptance_histogram: histogram,
                num_spec_steps: steps,
                num_accepted_draft_tokens: accepted,
                num_spec_tokens: Some(3),
                ..SpecDecoding::default()
            }),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn pools_steps_and_tokens_over_requests() {
        let mut tally = SpecDecodeTally::default();
        tally.add(&record(2, 3, vec![0, 1, 1, 0]));
        tally.add(&record(4, 6, vec![1, 1, 1, 1]));
        tally.add(&RequestRecord::default());
        let s = tally.finish().expect("two requests");
        assert_eq!(s.requests, 2);
        assert_eq!(
            (
                s.num_spec_steps,
                s.num_draft_tokens,
                s.num_accepted_draft_tokens
            ),
            (6, 18, 9)
        );
        assert_eq!(s.acceptance_rate, Some(0.5));
        assert_eq!(s.acceptance_length, Some(2.5));
        assert_eq!(s.acceptance_histogram, vec![1, 2, 2, 1]);
        let [lo, hi] = s.acceptance_rate_ci95.expect("interval");
        assert!(lo <= 0.5 && 0.5 <= hi);
        assert_eq!(SpecDecodeTally::default().finish(), None);
    }
}
