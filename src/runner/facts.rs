//! The report a run starts from: the tool, the host, the redacted plan and the methodology
//! prose, before any phase has run.

use crate::plan::{self, LoadedPlan};
use crate::report::{PlanSource, REPORT_SCHEMA, Report, RunSpan, TimingMethodology, ToolInfo};

use super::host;

/// A report with no phases yet, marked partial until the run finishes.
pub(super) fn new_report(
    loaded: &LoadedPlan,
    run_id: String,
    started_at: chrono::DateTime<chrono::Utc>,
) -> Report {
    let (redacted_plan, redacted_vars) = super::endpoint::redact_plan(&loaded.plan, &loaded.vars);
    Report {
        schema: REPORT_SCHEMA.to_string(),
        tool: ToolInfo {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        span: RunSpan {
            run_id,
            started_at: started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            finished_at: None,
            partial: true,
            stop_reason: None,
        },
        provenance: None,
        host: host::host_facts(),
        plan_source: PlanSource {
            path: loaded.source_path.display().to_string(),
            sha256: loaded.source_sha256.clone(),
        },
        // Secret header values stay out of the report (and so out of report.md/html).
        vars: redacted_vars,
        plan: redacted_plan,
        metadata: loaded.plan.metadata.clone(),
        timing_methodology: timing_methodology(loaded.plan.percentile_method),
        phases: Vec::new(),
        rechecks: Vec::new(),
        repeats: Vec::new(),
        client_calibration: None,
        client_busy_poll: false,
        searches: Vec::new(),
        endpoints: super::endpoint::endpoint_facts(&loaded.plan),
        shard: None,
        merged_from: None,
    }
}

fn timing_methodology(method: plan::PercentileMethod) -> TimingMethodology {
    TimingMethodology {
        clock: "client monotonic clock (std::time::Instant); timestamps taken when bytes arrive".to_string(),
        percentile_method: method,
        time_to_first_output: "request start through the first non-empty streamed reasoning or content delta".to_string(),
        ttft: "request start through the first non-empty streamed content delta".to_string(),
        generation: "client-observed E2E minus time to first output".to_string(),
        decode: "output tokens after the first divided by client-observed generation time; output tokens may include reasoning tokens".to_string(),
        mean_inter_token_latency: "client-observed generation time divided by output tokens after the first; not a per-token trace".to_string(),
        tpot: "(E2E minus TTFT) divided by output tokens after the first (vLLM's TPOT)".to_string(),
        effective_prefill: "usage.prompt_tokens divided by client-observed time to first output; includes queueing".to_string(),
        elapsed: "first measured request's start to the last one's end; warmup excluded".to_string(),
    }
}
