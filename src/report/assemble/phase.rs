//! The one builder of a [`PhaseResult`]: every field from one set of facts and the phase's
//! records, in one call, with nothing set afterwards. The runner, `recover`, the shard merge,
//! repeats and the older-format readers all call it, so their phases carry the same sections.

use serde::{Deserialize, Serialize};

use crate::client::RequestRecord;
use crate::figure::Figure;
use crate::metrics::cancellation;
use crate::metrics::recovery::{self, Recovery, RecoverySample, RecoverySettings};
use crate::metrics::stability::UntilOutcome;
use crate::metrics::trust::{self, ClientLoad, ClientTrust};
use crate::metrics::{self, PhaseSummary, TallyFigures, TransportSummary};
use crate::plan::{HookWhen, MARK_FAULT_OFF, MARK_FAULT_ON, PercentileMethod, Slo};

use super::probe::{self, ProbeSpec};
use crate::report::model::{
    ClientCeiling, HookOutcome, PhaseHeader, PhaseMark, PhaseResult, ProbeOutcome,
    PromptTokenCheck, RecordsKept, SaturationStop, ServerMetrics, WarmupResult,
};

/// Everything that describes a phase apart from its records: what was asked, how its window
/// ran and what watched it. The journal holds it too, so `recover` rebuilds the same result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseFacts {
    /// What the phase was, the load it asked for and when its window began: the result's
    /// head, as it is.
    #[serde(flatten)]
    pub header: PhaseHeader,
    pub partial: bool,
    pub warmup: WarmupResult,
    pub dataset_sha256: Option<String>,
    /// Tolerated gap between planned and served prompt tokens.
    #[serde(default)]
    pub prompt_tolerance: f64,
    /// Whether the client kept connections for reuse: only then is a server that closes
    /// every one worth a warning.
    #[serde(default)]
    pub connection_reuse: bool,
    pub server_metrics: Option<ServerMetrics>,
    /// The phase's `before`, `during` and `after` actions, in the order they ran.
    #[serde(default)]
    pub hooks: Vec<HookOutcome>,
    /// Instants the `during` actions marked, from the measured start (a `before` or `after`
    /// action's mark is placed from its hook).
    #[serde(default)]
    pub during_marks: Vec<PhaseMark>,
    pub until: Option<UntilOutcome>,
    pub saturation_stop: Option<SaturationStop>,
    /// The client's own load while the window ran (for a merged phase, the busiest
    /// machine's), judged for trust with the phase's send lag.
    pub client_load: Option<ClientLoad>,
    /// The client ceiling the phase's load is held against.
    pub client_ceiling: Option<ClientCeiling>,
    #[serde(default)]
    pub connections_warmed: u64,
    /// A capacity-search probe: what it was judged against.
    pub probe: Option<ProbeSpec>,
    /// Set when the window ended because its target went down, in words.
    #[serde(default)]
    pub target_down: Option<String>,
    /// Each spell the target was down during the measured window.
    #[serde(default)]
    pub outages: Vec<crate::report::model::TargetOutage>,
    /// Open-loop arrivals withheld while the target could not be reached.
    #[serde(default)]
    pub withheld: u64,
    /// The target's price per hour, when the plan gives one.
    #[serde(default)]
    pub cost: Option<crate::metrics::cost::HourlyPrice>,
    /// The power gauge as sampled through the window, timed from its origin.
    #[serde(default)]
    pub power: Option<crate::metrics::energy::PowerTrace>,
}

/// How a phase's figures are computed, and what they are compared with.
#[derive(Debug, Clone, Copy)]
pub struct Figures<'a> {
    pub method: PercentileMethod,
    pub slo: Option<&'a Slo>,
    /// The phase run before this one: recovery after a fault falls back on it for a baseline.
    pub previous: Option<&'a PhaseResult>,
}

/// A phase's measured records.
#[derive(Debug, Clone)]
pub enum Measured {
    /// Every record, by request index.
    All(Vec<RequestRecord>),
    /// A seeded sample by request index, and the figures tallied over every record.
    Sampled {
        sample: Vec<RequestRecord>,
        figures: Box<TallyFigures>,
    },
    /// Figures another tool's report states, with whatever records it holds.
    Stated {
        records: Vec<RequestRecord>,
        figures: Box<TallyFigures>,
    },
}

impl Measured {
    pub fn requests(&self) -> u64 {
        match self {
            Measured::All(records) => records.len() as u64,
            Measured::Sampled { figures, .. } | Measured::Stated { figures, .. } => {
                figures.summary.requests
            }
        }
    }

    pub fn errors(&self) -> u64 {
        match self {
            Measured::All(records) => records.iter().filter(|r| r.error.is_some()).count() as u64,
            Measured::Sampled { figures, .. } | Measured::Stated { figures, .. } => {
                figures.summary.errors
            }
        }
    }

    /// Milliseconds from the window's origin to the last record's end.
    pub fn last_end_ms(&self) -> f64 {
        match self {
            Measured::All(records) => records
                .iter()
                .map(|r| r.start_offset_ms + r.e2e_ms)
                .fold(0.0, f64::max),
            Measured::Sampled { figures, .. } | Measured::Stated { figures, .. } => {
                figures.last_end_ms
            }
        }
    }

    pub fn prompt_check(&self, tolerance: f64) -> PromptTokenCheck {
        match self {
            Measured::All(records) => PromptTokenCheck::from_requests(
                records
                    .iter()
                    .map(|r| (r.planned_context_tokens, r.prompt_tokens)),
                tolerance,
            ),
            Measured::Sampled { figures, .. } | Measured::Stated { figures, .. } => {
                figures.prompt.check(tolerance)
            }
        }
    }
}

/// A phase's result: its facts, and every figure computed from its records (which it keeps,
/// or a sample of).
pub fn phase_result(facts: PhaseFacts, measured: Measured, figures: Figures<'_>) -> PhaseResult {
    let (records, tally, kept) = tallied(measured, &figures, facts.connection_reuse);
    let end_offset_seconds = facts.header.start_offset_seconds + tally.last_end_ms / 1e3;
    let marks = marks(
        &facts,
        end_offset_seconds - facts.header.start_offset_seconds,
    );
    let recovery = fault_recovery(&facts.header.phase, &marks, &records, figures.previous);
    let cancellations = cancellation::cancellations(
        &records,
        kept.as_ref()
            .map_or(1.0, |k| k.total as f64 / k.kept.max(1) as f64),
        facts.server_metrics.as_ref().and_then(server_aborted),
    );
    let client_trust = client_trust(&facts, &tally.summary);
    let client_load_share = facts
        .client_ceiling
        .as_ref()
        .and_then(|c| load_share(&tally.summary, c));
    let achieved_rate_ratio = facts
        .header
        .rate_rps
        .and_then(|rps| tally.achieved_rate.map(|r| r / rps));
    let probe = probe_outcome(
        &facts,
        &tally.summary,
        &records,
        probe::ProbeClient {
            trust: client_trust.as_ref(),
            achieved_rate_ratio,
        },
    );
    let transport = transport(tally.transport, &records, facts.connections_warmed);
    let cost = facts
        .cost
        .as_ref()
        .and_then(|price| metrics::cost::phase_cost(price, &tally.summary));
    // The window `elapsed` covers ends with the last request.
    let window_from = tally.last_end_ms / 1e3 - tally.summary.elapsed;
    let energy = facts
        .power
        .as_ref()
        .and_then(|trace| metrics::energy::phase_energy(trace, window_from, &tally.summary));
    let mut summary = tally.summary;
    spec_decode_counters(&mut summary, facts.server_metrics.as_ref());
    PhaseResult {
        header: facts.header,
        achieved_rate_ratio,
        end_offset_seconds,
        partial: facts.partial,
        target_down: facts.target_down,
        outages: facts.outages,
        withheld: facts.withheld,
        prompt_tokens: tally.prompt.check(facts.prompt_tolerance),
        sessions: tally.sessions,
        models: tally.models,
        archetypes: tally.archetypes,
        slo: tally.slo,
        summary,
        hooks: facts.hooks,
        warmup: facts.warmup,
        dataset_sha256: facts.dataset_sha256,
        server_metrics: facts.server_metrics,
        transport,
        request_timings: records,
        records: kept,
        client_load_share,
        client_ceiling: facts.client_ceiling,
        probe,
        marks,
        recovery,
        cancellations,
        until: facts.until,
        saturation_stop: facts.saturation_stop,
        client_trust,
        cost,
        energy,
        overhead: None,
    }
}

/// The server's `spec_decode` counters over the window beside the acceptance its requests
/// reported, as a cross-check.
fn spec_decode_counters(summary: &mut PhaseSummary, server: Option<&ServerMetrics>) {
    let (Some(spec), Some(server)) = (summary.spec_decode.as_mut(), server) else {
        return;
    };
    let delta = |name: &str| server.normalized_counter_deltas.get(name).copied();
    spec.counters = delta("spec_decode_drafts").and_then(|drafts| {
        metrics::SpecDecodeCounters::from_deltas(
            drafts,
            delta("spec_decode_draft_tokens")?,
            delta("spec_decode_accepted_tokens")?,
        )
    });
}

/// The records the result keeps, the figures over every record (tallied here unless they
/// came with a sample or were stated) and, for a sample, how many it kept of how many.
fn tallied(
    measured: Measured,
    figures: &Figures<'_>,
    connection_reuse: bool,
) -> (Vec<RequestRecord>, TallyFigures, Option<RecordsKept>) {
    match measured {
        Measured::All(records) => {
            let tally =
                metrics::tally_records(&records, figures.method, figures.slo, connection_reuse);
            (records, tally, None)
        }
        Measured::Sampled { sample, figures } => {
            let kept = RecordsKept {
                kept: sample.len() as u64,
                total: figures.summary.requests,
                sampling: "reservoir".to_string(),
            };
            (sample, *figures, Some(kept))
        }
        Measured::Stated { records, figures } => (records, *figures, None),
    }
}

/// The client's load judged with its send lag.
fn client_trust(facts: &PhaseFacts, summary: &PhaseSummary) -> Option<ClientTrust> {
    // The client's own lateness: a wait for the plan's concurrency cap is not the client's.
    let send_lag_p99 = summary.distribution(Figure::ClientSendLag).map(|d| d.p99);
    facts
        .client_load
        .clone()
        .map(|load| trust::judge(load, send_lag_p99))
}

/// A capacity-search probe's verdict, when the phase was one.
fn probe_outcome(
    facts: &PhaseFacts,
    summary: &PhaseSummary,
    records: &[RequestRecord],
    client: probe::ProbeClient<'_>,
) -> Option<ProbeOutcome> {
    facts.probe.as_ref().map(|spec| {
        let mut outcome = probe::judge(
            spec,
            summary,
            records,
            facts.saturation_stop.as_ref(),
            client,
        );
        // A target that went down says nothing about the load it was probed at.
        if facts.target_down.is_some() {
            outcome.verdict = crate::metrics::verdict::Verdict::Indeterminate;
            outcome.passed = false;
        }
        outcome
    })
}

/// The tally's transport figures with the warnings and counts only the records and the
/// facts tell.
fn transport(
    mut transport: TransportSummary,
    records: &[RequestRecord],
    connections_warmed: u64,
) -> TransportSummary {
    // A sample is uniform, so the share of streams that arrived at once holds for the phase.
    transport
        .warnings
        .extend(metrics::buffering_warning(records));
    transport.connections_warmed = connections_warmed;
    transport
}

/// Every mark of the phase in time order: the `during` actions' where they finished, a
/// `before` action's at the measured start and an `after` action's at its end.
fn marks(facts: &PhaseFacts, length_s: f64) -> Vec<PhaseMark> {
    let mut marks = facts.during_marks.clone();
    for hook in &facts.hooks {
        // `during` marks are in `during_marks`, where their actions finished.
        let offset_s = match hook.when {
            HookWhen::Before => 0.0,
            HookWhen::After => length_s.max(0.0),
            HookWhen::During => continue,
        };
        if let Some(name) = &hook.mark {
            marks.push(PhaseMark {
                name: name.clone(),
                offset_s,
                when: hook.when,
            });
        }
    }
    marks.sort_by(|a, b| a.offset_s.total_cmp(&b.offset_s));
    marks
}

/// The outage and time to recover around the phase's first `fault-on` mark, against the
/// phase's own requests before it or, lacking enough of them, the previous phase's.
fn fault_recovery(
    phase: &str,
    marks: &[PhaseMark],
    records: &[RequestRecord],
    previous: Option<&PhaseResult>,
) -> Option<Recovery> {
    let find = |name: &str, from: f64| {
        marks
            .iter()
            .find(|m| m.name == name && m.offset_s >= from)
            .map(|m| m.offset_s)
    };
    let on = find(MARK_FAULT_ON, f64::NEG_INFINITY)?;
    let off = find(MARK_FAULT_OFF, on);
    let baseline = previous
        .and_then(|p| recovery::baseline(&recovery_samples(&p.request_timings), "previous phase"));
    let measured = recovery::recovery(
        &recovery_samples(records),
        on,
        off,
        baseline,
        RecoverySettings::default(),
    );
    if measured.is_none() {
        eprintln!(
            "warning: phase `{phase}`: no baseline for recovery (fewer than {} requests before \
             the fault-on mark, and no previous phase with as many)",
            recovery::MIN_BASELINE_REQUESTS
        );
    }
    measured
}

/// The server's own count of aborted requests over the phase: vLLM's
/// `vllm:request_success_total{finished_reason="abort"}`, summed over its label sets (engines).
fn server_aborted(metrics: &ServerMetrics) -> Option<f64> {
    let sets = metrics
        .labelled_counter_deltas
        .get("vllm:request_success_total")?;
    let aborted = sets
        .iter()
        .filter(|(labels, _)| labels.contains("finished_reason=\"abort\""))
        .map(|(_, delta)| delta);
    aborted.clone().next()?;
    Some(aborted.sum())
}

fn recovery_samples(records: &[RequestRecord]) -> Vec<RecoverySample> {
    records
        .iter()
        .map(|r| RecoverySample {
            start_s: r.start_offset_ms / 1e3,
            ok: r.is_ok(),
            ttft_ms: r.ttft_ms,
        })
        .collect()
}

/// The phase's share of the client ceiling: the larger of requests/s over the ceiling with
/// its prompts and events/s over the events ceiling.
pub fn load_share(summary: &metrics::PhaseSummary, ceiling: &ClientCeiling) -> Option<f64> {
    let s = summary;
    if s.elapsed <= 0.0 || ceiling.requests_per_second <= 0.0 || ceiling.events_per_second <= 0.0 {
        return None;
    }
    let events = metrics::phase_events(s.requests, s.content_chunks + s.reasoning_chunks);
    let events_per_s = events as f64 / s.elapsed;
    let requests_per_s = s.requests as f64 / s.elapsed;
    Some(
        (requests_per_s / ceiling.requests_per_second)
            .max(events_per_s / ceiling.events_per_second),
    )
}
