//! Summary types: per-phase figures with seed 004's field names.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Distributions;
use crate::client::{ErrorKind, OutputTokenSource};
use crate::figure::Figure;

/// A distribution's order statistics and mean.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Distribution {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    #[serde(default)]
    pub mean: f64,
    /// Number of samples the figures were computed from.
    #[serde(default)]
    pub samples: u64,
    /// 95% distribution-free intervals of p50/p95/p99 ([`super::interval_ranks`]); absent
    /// for distributions that do not carry them and in reports written before them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95: Option<super::PercentileIntervals>,
}

/// One phase's figures. `ttft`, `tpot` and `e2e` are in **seconds**, as seed 004 reports them;
/// per-request records are in milliseconds, as seeds 000/002 report them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct PhaseSummary {
    /// Measured requests started.
    pub requests: u64,
    pub success: u64,
    pub errors: u64,
    /// Requests the client dropped on purpose (the workload's `cancel`): neither successes
    /// nor errors, and in no figure that needs a whole response.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cancelled: u64,
    /// Seconds from the first measured request's start to the last one's end.
    pub elapsed: f64,
    /// `Σ output_tokens / elapsed` over successful requests.
    pub output_tokens_per_second: f64,
    /// `requests / elapsed`.
    pub request_rate: f64,
    /// Each figure of the figure table that the phase's records had values of (`ttft`,
    /// `tpot`, `e2e` in seconds, as seed 004 reports them; `…_ms` figures in milliseconds),
    /// under its name.
    #[serde(flatten)]
    pub figures: Distributions,
    /// Σ prompt tokens over successful requests.
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    /// Σ cached tokens / Σ prompt tokens, when the server reported cached tokens.
    pub cached_token_ratio: Option<f64>,
    pub content_chunks: u64,
    pub reasoning_chunks: u64,
    pub output_token_sources: BTreeMap<OutputTokenSource, u64>,
    pub errors_by_kind: BTreeMap<ErrorKind, u64>,
    /// Failed requests grouped by cause (the `error.cause()` key, see docs/reports.md), most
    /// frequent first, then by cause; absent when no request failed, and in reports written
    /// before causes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors_by_cause: Vec<ErrorCause>,
    /// Requests meeting every SLO, per second; present when the plan sets an SLO.
    pub goodput: Option<Goodput>,
    /// Embeddings and rerank: Σ inputs (texts, documents) over successful requests; absent
    /// for chat and completions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_inputs: Option<u64>,
    /// `total_inputs / elapsed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_per_second: Option<f64>,
    /// `total_input_tokens / elapsed`, beside `total_inputs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens_per_second: Option<f64>,
    /// Σ request body bytes over the measured requests sent, whatever their outcome (the
    /// bytes went out); absent in reports written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_request_bytes: Option<u64>,
    /// `total_request_bytes / elapsed`: the upload the phase asked of the network and server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_bytes_per_second: Option<f64>,
    /// Σ images over the measured requests sent; absent when none carried images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_images: Option<u64>,
    /// `total_images / elapsed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images_per_second: Option<f64>,
    /// The load the phase held: mean requests and tokens in flight over `elapsed`; absent
    /// for an empty phase and in reports written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<super::InFlight>,
    /// Reasoning and content tokens apart; absent when no successful request's reasoning is
    /// known (neither its usage nor its stream said anything of reasoning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<super::ReasoningSummary>,
    /// Speculative decoding acceptance; absent when no successful request reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<super::SpecDecodeSummary>,
    /// Structured output: replies checked against the workload's `response_format`, the
    /// share valid with its interval, and the invalid ones by reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<super::reply_check::StructuredOutput>,
    /// Scored workloads: replies scored against their row's `expected`, the share correct
    /// with its interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<super::score::Accuracy>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl PhaseSummary {
    /// The phase's distribution of `figure`, when its records had values of it.
    pub fn distribution(&self, figure: Figure) -> Option<&Distribution> {
        self.figures.get(figure)
    }
}

impl PhaseSummary {
    /// Add one successful record's inputs (embeddings, rerank).
    pub(super) fn add_inputs(&mut self, record: &crate::client::RequestRecord) {
        if let Some(n) = record.inputs {
            *self.total_inputs.get_or_insert(0) += n;
        }
    }

    /// The input rates, once `elapsed` is known; only phases that counted inputs get them.
    pub(super) fn set_input_rates(&mut self) {
        if let Some(n) = self.total_inputs {
            self.inputs_per_second = Some(super::per_second(n as f64, self.elapsed));
            self.input_tokens_per_second = Some(super::per_second(
                self.total_input_tokens as f64,
                self.elapsed,
            ));
        }
    }

    /// Add one sent record's body bytes and images, whatever its outcome.
    pub(super) fn add_sent(&mut self, record: &crate::client::RequestRecord) {
        if let Some(bytes) = record.request_bytes {
            *self.total_request_bytes.get_or_insert(0) += bytes;
        }
        if record.images > 0 {
            *self.total_images.get_or_insert(0) += record.images;
        }
    }

    /// The upload rates, once `elapsed` is known.
    pub(super) fn set_sent_rates(&mut self) {
        let rate = |n: Option<u64>| n.map(|n| super::per_second(n as f64, self.elapsed));
        self.request_bytes_per_second = rate(self.total_request_bytes);
        self.images_per_second = rate(self.total_images);
    }

    /// The output and content rates, once `elapsed` is known.
    pub fn set_token_rates(&mut self) {
        self.output_tokens_per_second =
            super::per_second(self.total_output_tokens as f64, self.elapsed);
        let elapsed = self.elapsed;
        if let Some(r) = self.reasoning.as_mut() {
            r.set_rate(elapsed);
        }
    }

    /// Whether the phase encoded inputs (embeddings, rerank) rather than generated tokens.
    pub fn encodes(&self) -> bool {
        self.total_inputs.is_some()
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Goodput {
    /// Requests that met every objective.
    pub requests: u64,
    /// `requests / elapsed`.
    pub request_rate: f64,
    /// Share of measured requests that met every objective.
    pub fraction: f64,
}

/// Failed requests that share a cause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorCause {
    /// The grouping key, e.g. `HTTP 400 · invalid_request_error · context_length_exceeded`,
    /// `HTTP 401 · empty body`, `error_object · overloaded` or `idle_timeout`.
    pub cause: String,
    /// The kind of the example's failure.
    pub kind: ErrorKind,
    /// The example's HTTP status, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub count: u64,
    /// The message of the earliest request (lowest `request_index`) with this cause, cut to
    /// 300 characters.
    pub example: String,
}
