//! The single-run `anvil-serving.benchmark/v1` format (seeds 000 and 002): one phase with
//! per-request timings, read into a one-phase [`Report`].

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use super::import::{IMPORT_PROMPT_TOLERANCE, Imported, imported_report, methodology};
use crate::client::{OutputTokenSource, RequestRecord};
use crate::metrics::tally_records;
use crate::plan::{PercentileMethod, Phase, Plan, Target, TokenCount, Workload};
use crate::report::assemble::phase::{Figures, Measured, PhaseFacts, phase_result};
use crate::report::model::PhaseHeader;
use crate::report::model::{PhaseResult, PlanSource, Report, ServerMetrics, ToolInfo};

/// Schema tag of the single-run reports (seeds 000, 002).
pub const ANVIL_SCHEMA: &str = "anvil-serving.benchmark/v1";

/// A single-run report as seeds 000 and 002 write it.
#[derive(Debug, Deserialize)]
pub struct AnvilRun {
    pub schema: String,
    pub run_id: String,
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub finished_at: Option<String>,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub engine: Option<String>,
    #[serde(default)]
    pub gpu: Option<String>,
    #[serde(default)]
    pub measurement_protocol: Option<String>,
    pub concurrency: u32,
    #[serde(default)]
    pub context_tokens: Option<u32>,
    #[serde(default)]
    pub context_seed: Option<u64>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub failed: Option<u64>,
    #[serde(default)]
    pub wall_clock_ms: Option<f64>,
    #[serde(default)]
    pub metrics: Option<AnvilMetrics>,
    #[serde(default)]
    pub timing_methodology: BTreeMap<String, String>,
    #[serde(default)]
    pub serve_flags: Option<Value>,
    pub request_timings: Vec<AnvilTiming>,
    /// Top-level fields this reader does not use, kept so a writer can give them back; filled
    /// by [`anvil_unread_fields`] (a flattened map would cost the typed parse its positions).
    #[serde(skip)]
    pub extra: IndexMap<String, Value>,
}

/// Top-level fields of a single-run seed document that [`AnvilRun`] reads.
const ANVIL_READ_FIELDS: [&str; 18] = [
    "schema",
    "run_id",
    "started_at",
    "finished_at",
    "base_url",
    "model",
    "engine",
    "gpu",
    "measurement_protocol",
    "concurrency",
    "context_tokens",
    "context_seed",
    "max_tokens",
    "failed",
    "wall_clock_ms",
    "metrics",
    "timing_methodology",
    "serve_flags",
];

/// Fields a writer recomputes from the records, so the reader need not keep them.
const ANVIL_DERIVED_FIELDS: [&str; 3] = ["completed", "requests", "context_distribution"];

/// The top-level fields of a single-run seed document that [`AnvilRun`] does not read and a
/// writer cannot recompute (`manifest`, `max_context_tokens`, `tier`, …), nulls left out;
/// `request_timings` is read separately.
pub fn anvil_unread_fields(doc: &Value) -> IndexMap<String, Value> {
    let Some(obj) = doc.as_object() else {
        return IndexMap::new();
    };
    let kept = |k: &str, v: &Value| {
        let read = k == "request_timings" || ANVIL_READ_FIELDS.contains(&k);
        // An empty failure list says nothing the counts do not.
        let empty_failures = k == "failures" && v.as_array().is_some_and(Vec::is_empty);
        !(v.is_null() || read || ANVIL_DERIVED_FIELDS.contains(&k) || empty_failures)
    };
    obj.iter()
        .filter(|(k, v)| kept(k, v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[derive(Debug, Deserialize)]
pub struct AnvilMetrics {
    #[serde(default)]
    pub prefix_cache_hit_avg: Option<f64>,
}

/// One `request_timings` entry of a single-run seed report.
#[derive(Debug, Deserialize)]
pub struct AnvilTiming {
    pub request_index: u64,
    pub e2e_ms: f64,
    #[serde(default)]
    pub time_to_first_output_ms: Option<f64>,
    #[serde(default)]
    pub ttft_ms: Option<f64>,
    #[serde(default)]
    pub generation_ms: Option<f64>,
    #[serde(default)]
    pub visible_generation_ms: Option<f64>,
    #[serde(default)]
    pub decode_tok_s: Option<f64>,
    #[serde(default)]
    pub mean_inter_token_latency_ms: Option<f64>,
    #[serde(default)]
    pub effective_prefill_tok_s: Option<f64>,
    #[serde(default)]
    pub planned_context_tokens: Option<u64>,
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub cached_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub output_token_source: Option<OutputTokenSource>,
    #[serde(default)]
    pub content_chunks: u64,
    #[serde(default)]
    pub reasoning_chunks: u64,
}

/// `host:port` of a base URL, the route label of an imported single run.
fn route_of(base_url: Option<&str>) -> String {
    let Some(url) = base_url else {
        return "default".to_string();
    };
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() {
        "default".to_string()
    } else {
        host.to_string()
    }
}

/// Request starts for a closed loop of `concurrency` workers taking requests in index order;
/// the seed format records no start times.
fn reconstruct_starts(e2e_ms: &[f64], concurrency: u32) -> Vec<f64> {
    // More workers than requests changes nothing; the cap keeps a bogus value from allocating.
    let workers = (concurrency.max(1) as usize).min(e2e_ms.len().max(1));
    let mut free_at = vec![0.0f64; workers];
    e2e_ms
        .iter()
        .map(|e2e| {
            let (slot, start) =
                free_at
                    .iter()
                    .copied()
                    .enumerate()
                    .fold(
                        (0, f64::INFINITY),
                        |best, (i, t)| if t < best.1 { (i, t) } else { best },
                    );
            free_at[slot] = start + e2e;
            start
        })
        .collect()
}

/// A single-run seed report's `request_timings` as records: ids from the run id, start
/// offsets reconstructed for a closed loop, TPOT derived as DESIGN.md defines it.
pub fn anvil_records(run: &AnvilRun) -> Vec<RequestRecord> {
    let mut timings: Vec<&AnvilTiming> = run.request_timings.iter().collect();
    timings.sort_by_key(|t| t.request_index);
    let e2e: Vec<f64> = timings.iter().map(|t| t.e2e_ms).collect();
    let starts = reconstruct_starts(&e2e, run.concurrency);
    timings
        .into_iter()
        .zip(starts)
        .map(|(t, start)| {
            let tpot_ms = match (t.ttft_ms, t.output_tokens) {
                (Some(ttft), Some(out)) if out > 1 => Some((t.e2e_ms - ttft) / (out - 1) as f64),
                _ => None,
            };
            RequestRecord {
                request_index: t.request_index,
                request_id: format!("{}-{}", run.run_id, t.request_index),
                start_offset_ms: start,
                scheduled_offset_ms: None,
                send_lag_ms: None,
                time_to_first_output_ms: t.time_to_first_output_ms,
                ttft_ms: t.ttft_ms,
                e2e_ms: t.e2e_ms,
                generation_ms: t.generation_ms,
                visible_generation_ms: t.visible_generation_ms,
                decode_tok_s: t.decode_tok_s,
                mean_inter_token_latency_ms: t.mean_inter_token_latency_ms,
                tpot_ms,
                effective_prefill_tok_s: t.effective_prefill_tok_s,
                planned_context_tokens: t.planned_context_tokens,
                prompt_tokens: t.prompt_tokens,
                cached_tokens: t.cached_tokens,
                output_tokens: t.output_tokens,
                output_token_source: t.output_token_source,
                content_chunks: t.content_chunks,
                reasoning_chunks: t.reasoning_chunks,
                max_inter_chunk_ms: None,
                error: None,
                ..RequestRecord::default()
            }
        })
        .collect()
}

/// A single-run report as a one-phase [`Report`]. The summary is recomputed from the
/// records by [`crate::metrics::summarize`] with nearest rank, as the seed computed it; elapsed
/// and the rates use the seed's `wall_clock_ms` when present, as its `throughput_tok_s` did.
pub fn anvil_to_report(run: AnvilRun, source: PlanSource) -> Report {
    let route = route_of(run.base_url.as_deref());
    let phase_name = format!("c{}", run.concurrency);
    let method = PercentileMethod::NearestRank;
    let started_at = run
        .started_at
        .clone()
        .unwrap_or_else(|| "unknown".to_string());
    let phase = anvil_phase(&run, &route, &phase_name, &started_at);
    let metadata = anvil_metadata(&run);
    let plan = anvil_plan(&run, &route, phase_name, phase.summary.requests, &metadata);
    imported_report(Imported {
        tool: ToolInfo {
            name: "anvil-serving".to_string(),
            version: ANVIL_SCHEMA.to_string(),
        },
        timing_methodology: methodology(
            method,
            &run.timing_methodology,
            "not stated by the imported report",
        ),
        run_id: run.run_id,
        started_at,
        finished_at: run.finished_at,
        source,
        plan,
        metadata,
        phases: vec![phase],
        rechecks: Vec::new(),
    })
}

/// The run's one phase, its figures recomputed from the records.
fn anvil_phase(run: &AnvilRun, route: &str, phase_name: &str, started_at: &str) -> PhaseResult {
    let server_metrics = run
        .metrics
        .as_ref()
        .and_then(|m| m.prefix_cache_hit_avg)
        .map(|hit| ServerMetrics {
            prefix_cache_hit_avg: Some(hit),
            ..ServerMetrics::default()
        });
    let facts = PhaseFacts {
        header: PhaseHeader {
            phase: phase_name.to_string(),
            route: route.to_string(),
            target: route.to_string(),
            workload: "seed".to_string(),
            concurrency: Some(run.concurrency),
            started_at: started_at.to_string(),
            ..PhaseHeader::default()
        },
        server_metrics,
        prompt_tolerance: IMPORT_PROMPT_TOLERANCE,
        // Older formats record no connections.
        connection_reuse: false,
        ..PhaseFacts::default()
    };
    let figures = Figures {
        method: PercentileMethod::NearestRank,
        slo: None,
        previous: None,
    };
    let records = anvil_records(run);
    let mut stated = tally_records(&records, figures.method, None, false);
    // Failures the seed lists without timings still count as failed requests.
    let summary = &mut stated.summary;
    let failed_without_record = run.failed.unwrap_or(0);
    summary.requests += failed_without_record;
    summary.errors += failed_without_record;
    if let Some(wall_ms) = run.wall_clock_ms.filter(|w| *w > 0.0) {
        let records_elapsed = summary.elapsed;
        summary.elapsed = wall_ms / 1000.0;
        summary.in_flight = summary
            .in_flight
            .map(|held| held.over_window(records_elapsed, summary.elapsed));
        summary.set_token_rates();
        summary.request_rate = summary.requests as f64 / summary.elapsed;
    }
    stated.last_end_ms = summary.elapsed * 1e3;
    let measured = Measured::Stated {
        records,
        figures: Box::new(stated),
    };
    phase_result(facts, measured, figures)
}

/// The run's labels, and a note that its start offsets are reconstructed.
fn anvil_metadata(run: &AnvilRun) -> IndexMap<String, Value> {
    let mut metadata = IndexMap::new();
    metadata.insert("imported_from".to_string(), Value::from(ANVIL_SCHEMA));
    for (k, v) in [
        ("engine", &run.engine),
        ("gpu", &run.gpu),
        ("measurement_protocol", &run.measurement_protocol),
    ] {
        if let Some(v) = v {
            metadata.insert(k.to_string(), Value::from(v.clone()));
        }
    }
    if let Some(flags) = &run.serve_flags {
        metadata.insert("serve_flags".to_string(), flags.clone());
    }
    // Labels the reader does not use (`max_context_tokens`, `tier`, …) stay with the run.
    for (k, v) in &run.extra {
        metadata.entry(k.clone()).or_insert_with(|| v.clone());
    }
    metadata.insert(
        "start_offsets".to_string(),
        Value::from("reconstructed from concurrency and e2e (not recorded by the seed format)"),
    );
    metadata
}

/// A plan that would repeat the run: one closed-loop phase of the same size.
fn anvil_plan(
    run: &AnvilRun,
    route: &str,
    phase_name: String,
    requests: u64,
    metadata: &IndexMap<String, Value>,
) -> Plan {
    let workload = Workload {
        input_tokens: run.context_tokens.map(TokenCount::Fixed),
        output_tokens: run.max_tokens.map(TokenCount::Fixed),
        seed: run.context_seed,
        prompt_tolerance: Some(IMPORT_PROMPT_TOLERANCE),
        ..Workload::default()
    };
    let target = Target {
        base_url: run.base_url.clone(),
        model: run.model.clone(),
        ..Target::default()
    };
    Plan {
        version: crate::plan::PLAN_VERSION,
        name: run.run_id.clone(),
        description: Some(format!("imported {ANVIL_SCHEMA} report")),
        vars: IndexMap::new(),
        metadata: metadata.clone(),
        seed: run.context_seed,
        percentile_method: PercentileMethod::NearestRank,
        slo: None,
        history: None,
        targets: IndexMap::from([(route.to_string(), target)]),
        workloads: IndexMap::from([("seed".to_string(), workload)]),
        defaults: Default::default(),
        phases: vec![Phase {
            name: Some(phase_name),
            target: Some(route.to_string()),
            workload: Some("seed".to_string()),
            concurrency: Some(run.concurrency),
            requests: Some(requests),
            ..Phase::default()
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_loop_starts() {
        // Two workers: requests 0,1 start at 0; 2 takes the first free slot (t=100).
        assert_eq!(
            reconstruct_starts(&[100.0, 300.0, 50.0, 10.0], 2),
            vec![0.0, 0.0, 100.0, 150.0]
        );
        assert_eq!(
            route_of(Some("http://127.0.0.1:39062/v1")),
            "127.0.0.1:39062"
        );
        assert_eq!(route_of(None), "default");
        assert_eq!(reconstruct_starts(&[5.0, 6.0], u32::MAX), vec![0.0, 0.0]);
    }
}
