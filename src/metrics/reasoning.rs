//! Reasoning and content tokens apart: a phase's totals, content tokens per second beside
//! the output rate, and how many requests' reasoning was counted from the stream because the
//! server reported 0 or nothing while it streamed reasoning.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::client::{OutputTokenSource, RequestRecord};

/// A phase's reasoning and content tokens over its successful requests whose reasoning is
/// known (the server's usage, or the streamed reasoning).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ReasoningSummary {
    /// Successful requests whose reasoning count is known.
    pub requests: u64,
    pub total_reasoning_tokens: u64,
    /// Their output tokens less their reasoning tokens.
    pub total_content_tokens: u64,
    /// `total_content_tokens / elapsed`, beside `output_tokens_per_second`.
    pub content_tokens_per_second: f64,
    /// Requests whose reasoning was counted from the stream: the server reported 0 or no
    /// reasoning tokens while it streamed reasoning text.
    #[serde(default)]
    pub counted_from_stream: u64,
}

impl ReasoningSummary {
    /// Count one successful record.
    pub(super) fn add(slot: &mut Option<ReasoningSummary>, record: &RequestRecord) {
        let (Some((reasoning, source)), Some(content)) =
            (record.reasoning(), record.content_tokens())
        else {
            return;
        };
        let s = slot.get_or_insert_with(ReasoningSummary::default);
        s.requests += 1;
        s.total_reasoning_tokens += reasoning;
        s.total_content_tokens += content;
        s.counted_from_stream += u64::from(source == OutputTokenSource::Counted);
    }

    /// The content rate, once the phase's `elapsed` is known.
    pub fn set_rate(&mut self, elapsed: f64) {
        self.content_tokens_per_second =
            super::per_second(self.total_content_tokens as f64, elapsed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(output: u64, reasoning: Option<u64>, chunks: (u64, u64)) -> RequestRecord {
        RequestRecord {
            output_tokens: Some(output),
            reasoning_tokens: reasoning,
            reasoning_token_source: reasoning.map(|_| OutputTokenSource::Usage),
            reasoning_chunks: chunks.0,
            content_chunks: chunks.1,
            ..RequestRecord::default()
        }
    }

    #[test]
    fn usage_counts_and_stream_counts_apart() {
        let mut slot = None;
        ReasoningSummary::add(&mut slot, &record(10, Some(4), (4, 6)));
        // A record read from a report before reasoning tokens: its deltas' share, 30 × 3/4.
        ReasoningSummary::add(&mut slot, &record(30, None, (3, 1)));
        // Nothing of reasoning known: left out.
        ReasoningSummary::add(&mut slot, &record(7, None, (0, 7)));
        let mut s = slot.expect("reasoning known");
        s.set_rate(2.0);
        assert_eq!((s.requests, s.counted_from_stream), (2, 1));
        assert_eq!(
            (s.total_reasoning_tokens, s.total_content_tokens),
            (4 + 23, 6 + 7)
        );
        assert_eq!(s.content_tokens_per_second, 6.5);
    }
}
