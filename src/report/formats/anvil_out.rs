//! Writer of the `anvil-serving.benchmark/v1` format of seeds 000/002: one document per phase.
//!
//! Run fields come from the report's plan, its `metadata` and the phase; the `metrics` block
//! is recomputed from the phase's records with the seeds' formulas and nearest rank
//! ([`crate::metrics::anvil_metrics`]). A field the report cannot know is `null`. The seeds
//! were written with the keys of every object sorted, and so is this writer's output.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use indexmap::IndexMap;
use serde::Serialize;
use serde_json::{Map, Value};

use super::anvil::ANVIL_SCHEMA;
use crate::client::{ErrorKind, OutputTokenSource, RequestRecord};
use crate::metrics::{AnvilMetrics, anvil_metrics};
use crate::plan::{PercentileMethod, TokenCount};
use crate::report::model::{PhaseResult, Report, TimingMethodology};

/// The `serve_flags` every seed states; the ones the report's metadata leaves out are null.
const SEED_SERVE_FLAGS: [&str; 4] = [
    "no_thinking",
    "reasoning_effort",
    "shared_prefix_burst",
    "thinking_mode",
];

/// One phase as an `anvil-serving.benchmark/v1` document, the seeds' fields in their order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnvilDocument {
    /// The phase's target's `base_url`; null for an embedded simulator.
    pub base_url: Option<String>,
    /// Successful requests.
    pub completed: u64,
    /// Null for an open-loop phase without a concurrency cap.
    pub concurrency: Option<u32>,
    /// Planned prompt tokens → requests (all records, failed ones too).
    pub context_distribution: BTreeMap<String, u64>,
    pub context_seed: Option<u64>,
    pub context_tokens: Option<u64>,
    pub engine: Option<String>,
    pub failed: u64,
    pub failures: Vec<Value>,
    /// Seconds precision, as the seeds write it.
    pub finished_at: Option<String>,
    pub gpu: Option<String>,
    pub manifest: Value,
    pub max_context_tokens: Option<u64>,
    pub max_tokens: Option<u64>,
    pub measurement_protocol: Option<String>,
    pub metrics: AnvilMetrics,
    pub model: Option<String>,
    /// Successful requests only, as the seeds list them (`completed` entries).
    pub request_timings: Vec<AnvilTiming>,
    pub requests: u64,
    pub run_id: String,
    pub schema: String,
    pub serve_flags: Map<String, Value>,
    pub source_recipe: Value,
    pub started_at: Option<String>,
    pub tier: Value,
    pub timing_methodology: AnvilMethodology,
    /// The phase's measured window (`elapsed`), milliseconds.
    pub wall_clock_ms: f64,
}

/// One `request_timings` entry, the seeds' fields in their order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnvilTiming {
    pub content_chunks: u64,
    pub decode_tok_s: Option<f64>,
    pub e2e_ms: f64,
    pub effective_prefill_tok_s: Option<f64>,
    pub generation_ms: Option<f64>,
    pub mean_inter_token_latency_ms: Option<f64>,
    pub output_token_source: Option<OutputTokenSource>,
    pub output_tokens: Option<u64>,
    pub planned_context_tokens: Option<u64>,
    pub prompt_tokens: Option<u64>,
    pub reasoning_chunks: u64,
    pub request_index: u64,
    pub time_to_first_output_ms: Option<f64>,
    pub ttft_ms: Option<f64>,
    pub visible_generation_ms: Option<f64>,
}

/// One `failures` entry: the failed request and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnvilFailure {
    pub e2e_ms: f64,
    pub error: String,
    pub kind: ErrorKind,
    pub request_index: u64,
    /// HTTP status, when one was received.
    pub status: Option<u16>,
}

/// `timing_methodology` with the seeds' keys, worded by the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnvilMethodology {
    pub clock: String,
    pub decode: String,
    pub effective_prefill: String,
    pub generation: String,
    pub mean_inter_token_latency: String,
    pub time_to_first_output: String,
    pub ttft: String,
}

/// Why a report cannot be written in the anvil format.
#[derive(Debug, thiserror::Error)]
pub enum AnvilError {
    #[error("no phase named {name:?}; the report's phases are: {}", available.join(", "))]
    UnknownPhase {
        name: String,
        available: Vec<String>,
    },
    #[error(
        "phase {0:?} has no request records (it was read from a summary-only report); \
         the anvil format needs per-request timings"
    )]
    NoRecords(String),
}

/// The documents of every phase, or of the one named, in plan order.
pub fn documents(
    report: &Report,
    phase: Option<&str>,
) -> Result<Vec<(String, AnvilDocument)>, AnvilError> {
    let selected: Vec<&PhaseResult> = match phase {
        None => report.phases.iter().collect(),
        Some(name) => {
            let found: Vec<&PhaseResult> = report
                .phases
                .iter()
                .filter(|p| p.header.phase == name)
                .collect();
            if found.is_empty() {
                return Err(AnvilError::UnknownPhase {
                    name: name.to_string(),
                    available: report
                        .phases
                        .iter()
                        .map(|p| p.header.phase.clone())
                        .collect(),
                });
            }
            found
        }
    };
    let single = report.phases.len() == 1;
    selected
        .into_iter()
        .map(|p| Ok((p.header.phase.clone(), document(report, p, single)?)))
        .collect()
}

/// File name for a phase's document: the phase name with anything but `[A-Za-z0-9._-]`
/// replaced, so a name never leaves the output directory.
pub fn file_name(phase: &str) -> String {
    let safe: String = phase
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let safe = safe.trim_start_matches('.');
    format!(
        "{}.anvil.json",
        if safe.is_empty() { "phase" } else { safe }
    )
}

/// Pretty JSON with every object's keys sorted, as the seeds were written.
pub fn render(doc: &AnvilDocument) -> String {
    let value = serde_json::to_value(doc).unwrap_or(Value::Null);
    let mut text = serde_json::to_string_pretty(&sort_keys(value)).unwrap_or_default();
    text.push('\n');
    text
}

/// `value` with the keys of every object in sorted order.
pub(crate) fn sort_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sort_keys(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sort_keys).collect()),
        other => other,
    }
}

/// One phase's document. `single` says the report holds only this phase, whose run id is then
/// the document's; otherwise the phase name is appended so each document has its own.
pub fn document(
    report: &Report,
    phase: &PhaseResult,
    single: bool,
) -> Result<AnvilDocument, AnvilError> {
    if phase.request_timings.is_empty() && phase.summary.requests > 0 {
        return Err(AnvilError::NoRecords(phase.header.phase.clone()));
    }
    let meta = &report.metadata;
    let target = report.plan.targets.get(&phase.header.target);
    let workload = report.plan.workloads.get(&phase.header.workload);
    let records = &phase.request_timings;
    let wall_clock_ms = phase.summary.elapsed * 1000.0;

    let mut metrics = anvil_metrics(records, wall_clock_ms, PercentileMethod::NearestRank);
    metrics.prefix_cache_hit_avg = phase
        .server_metrics
        .as_ref()
        .and_then(|m| m.prefix_cache_hit_avg);

    let fixed = |t: Option<&TokenCount>| match t {
        Some(TokenCount::Fixed(n)) => Some(u64::from(*n)),
        _ => None,
    };
    let (started_at, finished_at) = phase_times(phase, wall_clock_ms);

    Ok(AnvilDocument {
        base_url: target.and_then(|t| t.base_url.clone()),
        completed: phase.summary.success,
        concurrency: phase.header.concurrency,
        context_distribution: context_distribution(records),
        context_seed: meta_u64(meta, "context_seed")
            .or_else(|| workload.and_then(|w| w.seed))
            .or(report.plan.seed),
        context_tokens: fixed(workload.and_then(|w| w.input_tokens.as_ref()))
            .or_else(|| meta_u64(meta, "context_tokens")),
        engine: meta_text(meta, "engine"),
        failed: phase.summary.errors,
        failures: failures(records, meta),
        finished_at,
        gpu: meta_text(meta, "gpu"),
        manifest: meta.get("manifest").cloned().unwrap_or(Value::Null),
        max_context_tokens: meta_u64(meta, "max_context_tokens"),
        max_tokens: fixed(workload.and_then(|w| w.output_tokens.as_ref()))
            .or_else(|| meta_u64(meta, "max_tokens")),
        measurement_protocol: meta_text(meta, "measurement_protocol"),
        metrics,
        model: target
            .and_then(|t| t.model.clone())
            .or_else(|| meta_text(meta, "model")),
        request_timings: records.iter().filter(|r| r.is_ok()).map(timing).collect(),
        requests: phase.summary.requests,
        run_id: if single {
            report.span.run_id.clone()
        } else {
            format!("{}-{}", report.span.run_id, phase.header.phase)
        },
        schema: ANVIL_SCHEMA.to_string(),
        serve_flags: serve_flags(meta.get("serve_flags")),
        source_recipe: meta.get("source_recipe").cloned().unwrap_or(Value::Null),
        started_at,
        tier: meta.get("tier").cloned().unwrap_or(Value::Null),
        timing_methodology: methodology(&report.timing_methodology),
        wall_clock_ms,
    })
}

/// Requests per planned prompt size, keyed by the size as text.
fn context_distribution(records: &[RequestRecord]) -> BTreeMap<String, u64> {
    let mut distribution = BTreeMap::new();
    for planned in records.iter().filter_map(|r| r.planned_context_tokens) {
        *distribution.entry(planned.to_string()).or_insert(0) += 1;
    }
    distribution
}

/// The phase's start and end (start plus its wall clock), to the second.
fn phase_times(phase: &PhaseResult, wall_clock_ms: f64) -> (Option<String>, Option<String>) {
    let started = DateTime::parse_from_rfc3339(&phase.header.started_at)
        .ok()
        .map(|t| t.with_timezone(&Utc));
    let finished = started.and_then(|s| {
        chrono::Duration::try_milliseconds(wall_clock_ms as i64)
            .and_then(|d| s.checked_add_signed(d))
    });
    let seconds = |t: DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Secs, true);
    (started.map(seconds), finished.map(seconds))
}

fn methodology(tm: &TimingMethodology) -> AnvilMethodology {
    AnvilMethodology {
        clock: tm.clock.clone(),
        decode: tm.decode.clone(),
        effective_prefill: tm.effective_prefill.clone(),
        generation: tm.generation.clone(),
        mean_inter_token_latency: tm.mean_inter_token_latency.clone(),
        time_to_first_output: tm.time_to_first_output.clone(),
        ttft: tm.ttft.clone(),
    }
}

fn timing(r: &RequestRecord) -> AnvilTiming {
    AnvilTiming {
        content_chunks: r.content_chunks,
        decode_tok_s: r.decode_tok_s,
        e2e_ms: r.e2e_ms,
        effective_prefill_tok_s: r.effective_prefill_tok_s,
        generation_ms: r.generation_ms,
        mean_inter_token_latency_ms: r.mean_inter_token_latency_ms,
        output_token_source: r.output_token_source,
        output_tokens: r.output_tokens,
        planned_context_tokens: r.planned_context_tokens,
        prompt_tokens: r.prompt_tokens,
        reasoning_chunks: r.reasoning_chunks,
        request_index: r.request_index,
        time_to_first_output_ms: r.time_to_first_output_ms,
        ttft_ms: r.ttft_ms,
        visible_generation_ms: r.visible_generation_ms,
    }
}

/// The failed records; a report read from an anvil document without them gives back the
/// `failures` list it kept in `metadata`.
fn failures(records: &[RequestRecord], meta: &IndexMap<String, Value>) -> Vec<Value> {
    let listed: Vec<Value> = records
        .iter()
        .filter_map(|r| {
            let e = r.error.as_ref()?;
            serde_json::to_value(AnvilFailure {
                e2e_ms: r.e2e_ms,
                error: e.message.clone(),
                kind: e.kind,
                request_index: r.request_index,
                status: e.status,
            })
            .ok()
        })
        .collect();
    if !listed.is_empty() {
        return listed;
    }
    match meta.get("failures") {
        Some(Value::Array(kept)) => kept.clone(),
        _ => Vec::new(),
    }
}

/// The seeds' four flags (null when the metadata does not state one), then any others.
fn serve_flags(given: Option<&Value>) -> Map<String, Value> {
    let given = given.and_then(Value::as_object);
    let mut flags: Map<String, Value> = SEED_SERVE_FLAGS
        .iter()
        .map(|k| (k.to_string(), Value::Null))
        .collect();
    if let Some(given) = given {
        for (k, v) in given {
            flags.insert(k.clone(), v.clone());
        }
    }
    flags
}

/// A metadata label as text: strings as they are, other values as JSON; null when absent.
fn meta_text(meta: &IndexMap<String, Value>, key: &str) -> Option<String> {
    match meta.get(key)? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn meta_u64(meta: &IndexMap<String, Value>, key: &str) -> Option<u64> {
    meta.get(key).and_then(Value::as_u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_stay_in_the_directory() {
        assert_eq!(file_name("capacity-c16"), "capacity-c16.anvil.json");
        assert_eq!(file_name("../x/y"), "_x_y.anvil.json");
        assert_eq!(file_name(".."), "phase.anvil.json");
    }

    #[test]
    fn serve_flags_fill_the_seed_keys_with_null() {
        let given = serde_json::json!({"thinking_mode": "default", "extra": 1});
        let flags = serve_flags(Some(&given));
        assert_eq!(flags["thinking_mode"], "default");
        assert_eq!(flags["no_thinking"], Value::Null);
        assert_eq!(flags["extra"], 1);
        assert_eq!(flags.len(), 5);
    }

    #[test]
    fn keys_sort_at_every_level() {
        let v = serde_json::json!({"b": [{"z": 1, "a": 2}], "a": {"10": 1, "4": 2}});
        let text = serde_json::to_string(&sort_keys(v)).unwrap();
        assert_eq!(text, r#"{"a":{"10":1,"4":2},"b":[{"a":2,"z":1}]}"#);
    }
}
