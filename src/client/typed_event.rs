//! What the Responses and Messages APIs' streamed events share: a `type`, a `delta` whose
//! shape is each API's own, and a usage object (at the top, in `message` or in `response`)
//! read into the stream's counts.

use std::borrow::Cow;

use serde::Deserialize;

use super::scan::UsageCounts;

/// One event of either API; the fields the other API uses stay empty (a missing `Option`
/// field is `None` to serde). `M` is what `message` holds: the Messages API's `message_start`
/// carries the usage there, the Responses API's `error` event a string.
#[derive(Debug, Deserialize)]
pub(super) struct Event<'a, D, M> {
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    pub delta: Option<D>,
    /// Messages: `message_delta`'s totals.
    pub usage: Option<EventUsage>,
    pub message: Option<M>,
    /// Responses: the last event's `response.usage`.
    pub response: Option<UsageHolder>,
}

/// An object that carries a `usage` among fields not measured.
#[derive(Debug, Default, Deserialize)]
pub(super) struct UsageHolder {
    #[serde(default)]
    pub usage: Option<EventUsage>,
}

/// `usage` as either API sends it: input and output tokens, and each API's cached count.
#[derive(Debug, Default, Deserialize)]
pub(super) struct EventUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    /// Responses: `input_tokens_details.cached_tokens`.
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    /// Responses: `output_tokens_details.reasoning_tokens`.
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
    /// Messages: tokens read from or written to the prompt cache, left out of `input_tokens`.
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl EventUsage {
    /// The Responses API's counts: `input_tokens` is the whole prompt.
    pub(super) fn responses_counts(&self) -> UsageCounts {
        UsageCounts {
            prompt_tokens: self.input_tokens,
            completion_tokens: self.output_tokens,
            cached_tokens: self
                .input_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens),
            reasoning_tokens: self
                .output_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens),
        }
    }

    /// The Messages API's counts: the prompt is the uncached tokens plus those read from or
    /// written to the cache. A server that has no count yet as the stream opens sends zeros
    /// (vLLM does), which count as none; the cached count goes with the prompt's.
    pub(super) fn messages_counts(&self) -> UsageCounts {
        let prompt_tokens = self
            .input_tokens
            .map(|input| {
                input
                    + self.cache_read_input_tokens.unwrap_or(0)
                    + self.cache_creation_input_tokens.unwrap_or(0)
            })
            .filter(|&n| n > 0);
        UsageCounts {
            prompt_tokens,
            completion_tokens: self.output_tokens.filter(|&n| n > 0),
            cached_tokens: prompt_tokens.and(self.cache_read_input_tokens),
            // Messages usage has no reasoning count: thinking blocks are counted as streamed.
            reasoning_tokens: None,
        }
    }
}
