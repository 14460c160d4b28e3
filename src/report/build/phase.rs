//! The one builder of a [`PhaseResult`] from request records, and the one pairing of rechecks
//! with their originals; the runner, the shard merge and the older-format readers all call
//! these.

use crate::client::RequestRecord;
use crate::metrics::{self, RecheckPair};
use crate::plan::{PercentileMethod, Slo, Tolerance};

use crate::report::model::{
    PhaseResult, PromptTokenCheck, RecordsKept, ServerMetrics, WarmupResult,
};

/// What a phase was and how it ran, apart from its measured records.
#[derive(Debug, Clone, Default)]
pub struct PhaseFacts {
    pub phase: String,
    pub route: String,
    pub target: String,
    pub workload: String,
    pub concurrency: Option<u32>,
    pub rate_rps: Option<f64>,
    pub recheck_of: Option<String>,
    /// RFC 3339 of the measured window's start.
    pub started_at: String,
    /// Seconds from the run's first measured phase start to this phase's measured start.
    pub start_offset_seconds: f64,
    pub partial: bool,
    pub warmup: WarmupResult,
    pub dataset_sha256: Option<String>,
    pub server_metrics: Option<ServerMetrics>,
}

/// How a phase's figures are computed from its records.
#[derive(Debug, Clone, Copy)]
pub struct Figures<'a> {
    pub method: PercentileMethod,
    pub slo: Option<&'a Slo>,
    /// Tolerated gap between planned and served prompt tokens.
    pub prompt_tolerance: f64,
    /// Whether the client kept connections for reuse: only then is a server that closes
    /// every one worth a warning.
    pub connection_reuse: bool,
}

/// A phase's result: its facts, and every figure computed from `records` (which it keeps),
/// by the same tally a sampled phase's figures come from.
pub fn phase_result(
    facts: PhaseFacts,
    records: Vec<RequestRecord>,
    figures: Figures<'_>,
) -> PhaseResult {
    let tally = metrics::tally_records(
        &records,
        figures.method,
        figures.slo,
        figures.connection_reuse,
    );
    with_figures(facts, records, tally, figures.prompt_tolerance)
}

/// A phase's result from its tallied figures, keeping `records`.
fn with_figures(
    facts: PhaseFacts,
    records: Vec<RequestRecord>,
    tally: metrics::TallyFigures,
    prompt_tolerance: f64,
) -> PhaseResult {
    let mut result = without_figures(facts, records);
    result.end_offset_seconds += tally.last_end_ms / 1e3;
    result.summary = tally.summary;
    result.prompt_tokens = tally.prompt.check(prompt_tolerance);
    result.sessions = tally.sessions;
    result.achieved_rate_ratio = result
        .rate_rps
        .and_then(|rps| tally.achieved_rate.map(|r| r / rps));
    // A sample is uniform, so the share of streams that arrived at once holds for the phase.
    let buffering = metrics::buffering_warning(&result.request_timings);
    result.transport = tally.transport;
    result.transport.warnings.extend(buffering);
    result
}

/// A phase's facts and records, its figures still empty.
fn without_figures(facts: PhaseFacts, records: Vec<RequestRecord>) -> PhaseResult {
    PhaseResult {
        hooks: Vec::new(),
        phase: facts.phase,
        route: facts.route,
        target: facts.target,
        workload: facts.workload,
        concurrency: facts.concurrency,
        rate_rps: facts.rate_rps,
        recheck_of: facts.recheck_of,
        started_at: facts.started_at,
        start_offset_seconds: facts.start_offset_seconds,
        end_offset_seconds: facts.start_offset_seconds,
        partial: facts.partial,
        summary: Default::default(),
        warmup: facts.warmup,
        prompt_tokens: PromptTokenCheck::default(),
        dataset_sha256: facts.dataset_sha256,
        achieved_rate_ratio: None,
        server_metrics: facts.server_metrics,
        transport: Default::default(),
        request_timings: records,
        records: None,
        client_load_share: None,
        probe: None,
        marks: Vec::new(),
        recovery: None,
        until: None,
        saturation_stop: None,
        client_trust: None,
        sessions: None,
    }
}

/// A phase's result from figures tallied over all its `total` records, keeping `sample`
/// (sorted by request index) as its records.
pub fn phase_result_sampled(
    facts: PhaseFacts,
    sample: Vec<RequestRecord>,
    tally: metrics::TallyFigures,
    prompt_tolerance: f64,
) -> PhaseResult {
    let total = tally.summary.requests;
    let kept = sample.len() as u64;
    let mut result = with_figures(facts, sample, tally, prompt_tolerance);
    result.records = Some(RecordsKept {
        kept,
        total,
        sampling: "reservoir".to_string(),
    });
    result
}

/// Every recheck among `phases` paired with its original, each judged with the tolerance
/// `tolerance_of` gives for the recheck's name.
pub fn pair_rechecks(
    phases: &[PhaseResult],
    tolerance_of: impl Fn(&str) -> Tolerance,
) -> Vec<RecheckPair> {
    phases
        .iter()
        .filter_map(|recheck| {
            let original_name = recheck.recheck_of.as_deref()?;
            let original = phases.iter().find(|p| p.phase == original_name)?;
            Some(metrics::recheck_pair(
                original_name,
                &original.summary,
                &recheck.phase,
                &recheck.summary,
                &tolerance_of(&recheck.phase),
            ))
        })
        .collect()
}
