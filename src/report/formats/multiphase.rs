//! The multi-phase report without a schema tag (seed 004: a gateway plan's phases as
//! summaries, no request records), read into a [`Report`].

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::import::{IMPORT_PROMPT_TOLERANCE, Imported, imported_report, methodology};
use crate::figure::Figure;
use crate::metrics::{Distribution, PhaseSummary, tally_records};
use crate::plan::{PercentileMethod, Phase, Plan, Target, Tolerance, Workload};
use crate::report::assemble::phase::{Figures, Measured, PhaseFacts, phase_result};
use crate::report::assemble::relate::pair_rechecks;
use crate::report::model::PhaseHeader;
use crate::report::model::{PhaseResult, PlanSource, Report, ToolInfo};

/// A multi-phase report in seed 004's layout, its keys in seed 004's order. Read with
/// [`Distribution`]s; written with the seed's five order statistics
/// ([`super::gateway_out::GatewayDistribution`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MultiPhaseRun<D = Distribution> {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub engine: Option<String>,
    /// Written from `metadata.hardware`, else `metadata.gpu`.
    #[serde(default)]
    pub hardware: Option<String>,
    #[serde(default)]
    pub precision: Option<String>,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub notes: Vec<String>,
    pub phases: Vec<MultiPhaseEntry<D>>,
}

/// One phase's summary in a multi-phase report; latencies in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MultiPhaseEntry<D = Distribution> {
    pub phase: String,
    #[serde(default)]
    pub route: Option<String>,
    #[serde(default)]
    pub workload: Option<String>,
    #[serde(default)]
    pub concurrency: Option<u32>,
    pub requests: u64,
    pub success: u64,
    pub errors: u64,
    pub elapsed: f64,
    pub output_tokens_per_second: f64,
    pub request_rate: f64,
    #[serde(default = "none")]
    pub ttft: Option<D>,
    /// Seconds per output token after the first.
    #[serde(default = "none")]
    pub tpot: Option<D>,
    #[serde(default = "none")]
    pub e2e: Option<D>,
    #[serde(default = "none")]
    pub input_tokens: Option<D>,
    #[serde(default = "none")]
    pub output_tokens: Option<D>,
    #[serde(default)]
    pub start_offset_seconds: f64,
    #[serde(default)]
    pub end_offset_seconds: f64,
}

/// A missing distribution, whatever its type (`#[serde(default)]` would ask `D: Default`).
fn none<D>() -> Option<D> {
    None
}

/// A multi-phase report as a [`Report`]: summaries as given (seconds, linear percentiles),
/// no request records, rechecks paired by name (`recheck-X` ↔ `…X`).
pub fn multiphase_to_report(run: MultiPhaseRun, name: &str, source: PlanSource) -> Report {
    let metadata = multiphase_metadata(&run);
    let mut targets = IndexMap::new();
    let mut workloads = IndexMap::new();
    let mut plan_phases = Vec::new();
    let mut phases: Vec<PhaseResult> = Vec::new();
    for entry in run.phases {
        let route = entry.route.clone().unwrap_or_else(|| "default".to_string());
        let workload = entry
            .workload
            .clone()
            .unwrap_or_else(|| "default".to_string());
        targets.entry(route.clone()).or_insert_with(|| Target {
            model: run.model.clone(),
            ..Target::default()
        });
        workloads
            .entry(workload.clone())
            .or_insert_with(Workload::default);
        let recheck_of = original_of(&entry.phase, &route, &workload, entry.concurrency, &phases);
        plan_phases.push(Phase {
            name: Some(entry.phase.clone()),
            recheck: recheck_of.clone(),
            target: Some(route.clone()),
            route: Some(route.clone()),
            workload: Some(workload.clone()),
            concurrency: entry.concurrency,
            ..Phase::default()
        });
        phases.push(entry_result(entry, route, workload, recheck_of));
    }
    // Imported runs carry no tolerances: the defaults the runner uses when a plan sets none.
    let rechecks = pair_rechecks(&phases, |_| Tolerance::default());
    let method = PercentileMethod::Linear;
    let plan = Plan {
        version: crate::plan::PLAN_VERSION,
        name: name.to_string(),
        description: Some("imported multi-phase report".to_string()),
        vars: IndexMap::new(),
        metadata: metadata.clone(),
        seed: None,
        percentile_method: method,
        slo: None,
        history: None,
        targets,
        workloads,
        defaults: Default::default(),
        phases: plan_phases,
    };
    imported_report(Imported {
        tool: ToolInfo {
            name: "unknown".to_string(),
            version: "unknown".to_string(),
        },
        run_id: name.to_string(),
        started_at: "unknown".to_string(),
        finished_at: None,
        source,
        plan,
        metadata,
        timing_methodology: methodology(
            method,
            &BTreeMap::new(),
            "not stated by the imported report",
        ),
        phases,
        rechecks,
    })
}

/// The report's labels.
fn multiphase_metadata(run: &MultiPhaseRun) -> IndexMap<String, Value> {
    let mut metadata = IndexMap::new();
    metadata.insert(
        "imported_from".to_string(),
        Value::from("multi-phase gateway report"),
    );
    for (k, v) in [
        ("model", &run.model),
        ("engine", &run.engine),
        ("hardware", &run.hardware),
        ("precision", &run.precision),
        ("method", &run.method),
    ] {
        if let Some(v) = v {
            metadata.insert(k.to_string(), Value::from(v.clone()));
        }
    }
    if !run.notes.is_empty() {
        // Kept as the list it was, so the gateway writer can give it back.
        metadata.insert("notes".to_string(), Value::from(run.notes.clone()));
    }
    metadata
}

/// One phase's result: the figures are the report's own.
fn entry_result(
    entry: MultiPhaseEntry,
    route: String,
    workload: String,
    recheck_of: Option<String>,
) -> PhaseResult {
    let summary = PhaseSummary {
        requests: entry.requests,
        success: entry.success,
        errors: entry.errors,
        elapsed: entry.elapsed,
        output_tokens_per_second: entry.output_tokens_per_second,
        request_rate: entry.request_rate,
        figures: [
            (Figure::Ttft, entry.ttft),
            (Figure::Tpot, entry.tpot),
            (Figure::E2e, entry.e2e),
            (Figure::InputTokens, entry.input_tokens),
            (Figure::OutputTokens, entry.output_tokens),
        ]
        .into_iter()
        .filter_map(|(figure, d)| Some((figure, d?)))
        .collect(),
        ..PhaseSummary::default()
    };
    let facts = PhaseFacts {
        header: PhaseHeader {
            phase: entry.phase,
            target: route.clone(),
            route,
            workload,
            concurrency: entry.concurrency,
            recheck_of,
            started_at: "unknown".to_string(),
            start_offset_seconds: entry.start_offset_seconds,
            ..PhaseHeader::default()
        },
        prompt_tolerance: IMPORT_PROMPT_TOLERANCE,
        // Older formats record no connections.
        connection_reuse: false,
        ..PhaseFacts::default()
    };
    // No request records, and no planned prompt size: the prompt check has nothing to compare.
    let figures = Figures {
        method: PercentileMethod::Linear,
        slo: None,
        previous: None,
    };
    let mut stated = tally_records(&[], figures.method, None, false);
    stated.summary = summary;
    stated.last_end_ms = (entry.end_offset_seconds - entry.start_offset_seconds) * 1e3;
    let measured = Measured::Stated {
        records: Vec::new(),
        figures: Box::new(stated),
    };
    phase_result(facts, measured, figures)
}

/// The earlier phase a `recheck-X` phase repeats: same route, workload and concurrency, and a
/// name that is `X` or ends in `-X`.
fn original_of(
    name: &str,
    route: &str,
    workload: &str,
    concurrency: Option<u32>,
    earlier: &[PhaseResult],
) -> Option<String> {
    let suffix = name.strip_prefix("recheck-")?;
    earlier
        .iter()
        .find(|p| {
            p.header.route == route
                && p.header.workload == workload
                && p.header.concurrency == concurrency
                && p.header.recheck_of.is_none()
                && (p.header.phase == suffix || p.header.phase.ends_with(&format!("-{suffix}")))
        })
        .map(|p| p.header.phase.clone())
}
