//! The `metrics` block of the older `anvil-serving.benchmark/v1` report format (seed reports 000/002).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::percentile;
use crate::client::{OutputTokenSource, RequestRecord};
use crate::plan::PercentileMethod;

/// The `metrics` block of a seed 000/002 report, field for field. Percentiles are `None` when
/// no record carries the field.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct AnvilMetrics {
    pub content_chunks: u64,
    /// Content chunks per second; the seeds leave it null.
    pub content_chunks_s: Option<f64>,
    pub decode_tok_s_p50: Option<f64>,
    pub decode_tok_s_p95: Option<f64>,
    pub e2e_p50_ms: Option<f64>,
    pub e2e_p95_ms: Option<f64>,
    pub effective_prefill_tok_s_p50: Option<f64>,
    pub effective_prefill_tok_s_p95: Option<f64>,
    pub generation_p50_ms: Option<f64>,
    pub generation_p95_ms: Option<f64>,
    pub mean_inter_token_latency_ms_p50: Option<f64>,
    pub mean_inter_token_latency_ms_p95: Option<f64>,
    pub output_token_sources: BTreeMap<OutputTokenSource, u64>,
    /// Σ output tokens.
    pub output_tokens: u64,
    /// Mean prefix-cache hit rate from the server's Prometheus metrics; not derivable from
    /// records, so [`anvil_metrics`] leaves it `None` for the caller to fill.
    pub prefix_cache_hit_avg: Option<f64>,
    pub prompt_token_samples: u64,
    /// Σ prompt tokens.
    pub prompt_tokens: u64,
    pub prompt_tokens_p50: Option<f64>,
    pub prompt_tokens_p95: Option<f64>,
    pub reasoning_chunks: u64,
    /// `Σ output_tokens / wall_clock_s`.
    pub throughput_tok_s: Option<f64>,
    pub time_to_first_output_p50_ms: Option<f64>,
    pub time_to_first_output_p95_ms: Option<f64>,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p95_ms: Option<f64>,
    pub ttft_samples: u64,
}

/// p50 and p95 of one optional field over the records.
fn p50_p95(
    records: &[&RequestRecord],
    method: PercentileMethod,
    field: impl Fn(&RequestRecord) -> Option<f64>,
) -> (Option<f64>, Option<f64>, u64) {
    let mut values: Vec<f64> = records
        .iter()
        .filter_map(|r| field(r))
        .filter(|v| v.is_finite())
        .collect();
    if values.is_empty() {
        return (None, None, 0);
    }
    values.sort_unstable_by(f64::total_cmp);
    (
        Some(percentile(&values, 0.50, method)),
        Some(percentile(&values, 0.95, method)),
        values.len() as u64,
    )
}

/// `anvil-serving.benchmark/v1` aggregate metrics over successful records (`completed` requests in the seeds).
/// `wall_clock_ms` is the run's wall clock (the seeds' top-level `wall_clock_ms`); the seeds
/// use nearest rank.
pub fn anvil_metrics(
    records: &[RequestRecord],
    wall_clock_ms: f64,
    method: PercentileMethod,
) -> AnvilMetrics {
    let ok: Vec<&RequestRecord> = records.iter().filter(|r| r.is_ok()).collect();
    let ok = ok.as_slice();
    let (decode_tok_s_p50, decode_tok_s_p95, _) = p50_p95(ok, method, |r| r.decode_tok_s);
    let (e2e_p50_ms, e2e_p95_ms, _) = p50_p95(ok, method, |r| Some(r.e2e_ms));
    let (effective_prefill_tok_s_p50, effective_prefill_tok_s_p95, _) =
        p50_p95(ok, method, |r| r.effective_prefill_tok_s);
    let (generation_p50_ms, generation_p95_ms, _) = p50_p95(ok, method, |r| r.generation_ms);
    let (mean_inter_token_latency_ms_p50, mean_inter_token_latency_ms_p95, _) =
        p50_p95(ok, method, |r| r.mean_inter_token_latency_ms);
    let (prompt_tokens_p50, prompt_tokens_p95, prompt_token_samples) =
        p50_p95(ok, method, |r| r.prompt_tokens.map(|t| t as f64));
    let (time_to_first_output_p50_ms, time_to_first_output_p95_ms, _) =
        p50_p95(ok, method, |r| r.time_to_first_output_ms);
    let (ttft_p50_ms, ttft_p95_ms, ttft_samples) = p50_p95(ok, method, |r| r.ttft_ms);

    let mut output_token_sources = BTreeMap::new();
    for source in ok.iter().filter_map(|r| r.output_token_source) {
        *output_token_sources.entry(source).or_insert(0) += 1;
    }
    let output_tokens: u64 = ok.iter().filter_map(|r| r.output_tokens).sum();
    AnvilMetrics {
        content_chunks: ok.iter().map(|r| r.content_chunks).sum(),
        content_chunks_s: None,
        decode_tok_s_p50,
        decode_tok_s_p95,
        e2e_p50_ms,
        e2e_p95_ms,
        effective_prefill_tok_s_p50,
        effective_prefill_tok_s_p95,
        generation_p50_ms,
        generation_p95_ms,
        mean_inter_token_latency_ms_p50,
        mean_inter_token_latency_ms_p95,
        output_token_sources,
        output_tokens,
        prefix_cache_hit_avg: None,
        prompt_token_samples,
        prompt_tokens: ok.iter().filter_map(|r| r.prompt_tokens).sum(),
        prompt_tokens_p50,
        prompt_tokens_p95,
        reasoning_chunks: ok.iter().map(|r| r.reasoning_chunks).sum(),
        throughput_tok_s: (wall_clock_ms > 0.0)
            .then(|| output_tokens as f64 / (wall_clock_ms / 1000.0)),
        time_to_first_output_p50_ms,
        time_to_first_output_p95_ms,
        ttft_p50_ms,
        ttft_p95_ms,
        ttft_samples,
    }
}
