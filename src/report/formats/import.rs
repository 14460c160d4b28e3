//! What the readers of older report formats share: the prompt tolerance imported runs get,
//! their methodology as stated, and the report shell around their phases.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde_json::Value;

use crate::plan::{PercentileMethod, Plan};
use crate::report::model::{
    HostFacts, PhaseResult, PlanSource, REPORT_SCHEMA, RecheckPair, Report, RunSpan,
    TimingMethodology, ToolInfo,
};

/// Prompt-size tolerance applied to imported runs, which carry none of their own.
pub const IMPORT_PROMPT_TOLERANCE: f64 = 0.10;

/// What an imported report states, gathered by its reader.
pub(super) struct Imported {
    pub tool: ToolInfo,
    pub run_id: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub source: PlanSource,
    pub plan: Plan,
    pub metadata: IndexMap<String, Value>,
    pub timing_methodology: TimingMethodology,
    pub phases: Vec<PhaseResult>,
    pub rechecks: Vec<RecheckPair>,
}

/// An imported run as a complete, finished [`Report`].
pub(super) fn imported_report(imported: Imported) -> Report {
    Report {
        schema: REPORT_SCHEMA.to_string(),
        tool: imported.tool,
        span: RunSpan {
            run_id: imported.run_id,
            started_at: imported.started_at,
            finished_at: imported.finished_at,
            partial: false,
            stop_reason: None,
        },
        provenance: None,
        host: HostFacts::default(),
        plan_source: imported.source,
        vars: IndexMap::new(),
        plan: imported.plan,
        metadata: imported.metadata,
        timing_methodology: imported.timing_methodology,
        phases: imported.phases,
        rechecks: imported.rechecks,
        repeats: Vec::new(),
        client_calibration: None,
        client_busy_poll: false,
        searches: Vec::new(),
        endpoints: Default::default(),
        shard: None,
        merged_from: None,
    }
}

pub(super) fn methodology(
    method: PercentileMethod,
    seed: &BTreeMap<String, String>,
    note: &str,
) -> TimingMethodology {
    let get = |k: &str, default: &str| seed.get(k).cloned().unwrap_or_else(|| default.to_string());
    TimingMethodology {
        clock: get("clock", note),
        percentile_method: method,
        time_to_first_output: get("time_to_first_output", note),
        ttft: get("ttft", note),
        generation: get("generation", note),
        decode: get("decode", note),
        mean_inter_token_latency: get("mean_inter_token_latency", note),
        tpot: get(
            "tpot",
            "(e2e − ttft) / (output_tokens − 1), derived on import from the request timings",
        ),
        effective_prefill: get("effective_prefill", note),
        elapsed: get("elapsed", note),
    }
}
