//! The one combined report: everything needed to read, compare and re-run a benchmark.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::client::RequestRecord;
use crate::metrics::{Distribution, PhaseSummary};
// Report types computed by earlier stages, re-exported where the report gathers them.
pub use crate::metrics::{Drift, DriftVerdict, RecheckPair};
use crate::plan::{HookWhen, PercentileMethod, Plan};
pub use crate::workload::PromptTokenCheck;

use super::hooks::HookOutcome;

/// Identifies this report format.
pub const REPORT_SCHEMA: &str = "servebench.report/v1";

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    /// Always `servebench.report/v1`.
    pub schema: String,
    pub tool: ToolInfo,
    #[serde(flatten)]
    pub span: RunSpan,
    /// The plan's repository, each server as it states itself, and the prompts' salt;
    /// absent in reports written before provenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<super::Provenance>,
    pub host: HostFacts,
    pub plan_source: PlanSource,
    /// Variables as resolved for this run.
    pub vars: IndexMap<String, Value>,
    /// The expanded plan, verbatim: `servebench run report.json` repeats the run.
    pub plan: Plan,
    /// The plan's `metadata` labels (engine, gpu, …), copied for readers that skip `plan`.
    pub metadata: IndexMap<String, Value>,
    pub timing_methodology: TimingMethodology,
    /// Phases in the order they ran.
    pub phases: Vec<PhaseResult>,
    /// Each recheck paired with its original.
    pub rechecks: Vec<RecheckPair>,
    /// Each `repeat` group: arms pooled over their rounds and compared with the spread
    /// between rounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<RepeatResult>,
    /// Sharded runs: which shard of the run this report holds (`run --shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// Sharded runs: the shards a `servebench merge` report was recomputed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Vec<MergedShard>>,
    /// This machine's client ceiling, measured before the first phase (absent with
    /// `run --no-calibrate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_calibration: Option<ClientCalibration>,
    /// The client's runtime workers polled instead of parking (`run --busy-poll`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client_busy_poll: bool,
    /// Capacity searches, in plan order; their probes are among `phases`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub searches: Vec<super::search::SearchResult>,
    /// How each target was reached beyond its URL (TLS verification, client certificate, key
    /// header), by target name; plain targets are absent.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub endpoints:
        std::collections::BTreeMap<String, crate::report::model::endpoints::EndpointFacts>,
}

/// A run's identity and extent: a report's, and each shard's in a merged one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunSpan {
    pub run_id: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// RFC 3339, UTC; `None` while the run is going on.
    pub finished_at: Option<String>,
    /// True when the run did not finish every phase (interrupted, or a fatal error).
    pub partial: bool,
    /// Why the run stopped early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// What the client sustained against a zero-delay in-process simulator on loopback, just
/// before the run: the most load this machine's client can generate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientCalibration {
    pub requests_per_second: f64,
    /// SSE events per second, counted as text chunks plus three framing events per request.
    pub events_per_second: f64,
    pub concurrency: u32,
    pub duration_seconds: f64,
    /// How late a sleeping thread woke on this machine, measured just before the run: the
    /// error a parked client thread can add to any timing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_latency: Option<crate::wakeup::WakeLatency>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

/// Facts about the client machine.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct HostFacts {
    pub hostname: String,
    pub os: String,
    pub arch: String,
    pub cpus: usize,
    /// The CPU's model name (`/proc/cpuinfo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// The kernel's release (`uname -r`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Whether the run held the kernel's request to keep idle CPUs quick to wake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_latency_hint: Option<crate::wakeup::CpuLatencyHint>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanSource {
    pub path: String,
    /// sha256 of the source file's bytes, hex.
    pub sha256: String,
}

/// How the figures were measured, stated in words as the seed reports do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimingMethodology {
    pub clock: String,
    pub percentile_method: PercentileMethod,
    pub time_to_first_output: String,
    pub ttft: String,
    pub generation: String,
    pub decode: String,
    pub mean_inter_token_latency: String,
    pub tpot: String,
    pub effective_prefill: String,
    pub elapsed: String,
}

/// The head of a phase's result: what the phase was, the load it asked for and when its
/// measured window began. The run's facts carry it as it is, and the result copies it whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhaseHeader {
    /// The phase's name.
    pub phase: String,
    /// sha256 of the work the phase asked for (its expanded settings, workload and target
    /// API and model; not its name, URL or the run's salt): two phases with the same hash
    /// asked for the same work, so their figures compare.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_sha256: Option<String>,
    /// How the phase's prompts were kept apart from other runs' in the server's prefix
    /// cache; absent in reports written before salts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_salt: Option<super::SaltUsed>,
    /// The path the traffic took (the target's name unless the phase set `route`).
    pub route: String,
    pub target: String,
    pub workload: String,
    /// Closed loop.
    pub concurrency: Option<u32>,
    /// Open loop: target requests per second.
    pub rate_rps: Option<f64>,
    /// Name of the phase this one rechecks.
    pub recheck_of: Option<String>,
    /// RFC 3339 of the measured window's start.
    pub started_at: String,
    /// Seconds from the run's first measured phase start to this phase's measured start.
    pub start_offset_seconds: f64,
}

/// One phase's settings, figures and records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhaseResult {
    /// What the phase was, the load it asked for and when its window began.
    #[serde(flatten)]
    pub header: PhaseHeader,
    pub end_offset_seconds: f64,
    /// True when this phase was cut short (interrupt, target down or fatal error).
    pub partial: bool,
    /// Why the phase ended before its bound when its target went down:
    /// `target down at 3.1 s (connection refused)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_down: Option<String>,
    /// Every spell the target was down during the measured window, and when it answered
    /// again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outages: Vec<super::TargetOutage>,
    /// Open-loop arrivals not sent while the target could not be reached (backoff, or a
    /// down target's one probe at a time): neither requests nor records.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub withheld: u64,
    #[serde(flatten)]
    pub summary: PhaseSummary,
    /// Outcomes of the phase's `before` and `after` actions, in the order they ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookOutcome>,
    pub warmup: WarmupResult,
    pub prompt_tokens: PromptTokenCheck,
    /// sha256 of the dataset or trace file the prompts came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_sha256: Option<String>,
    /// Open loop: achieved `requests / elapsed` over the target rate.
    pub achieved_rate_ratio: Option<f64>,
    /// Server counters and gauges scraped before and after the phase.
    pub server_metrics: Option<ServerMetrics>,
    /// Connections opened, retries, the client-versus-server timing gap, connection warnings.
    #[serde(flatten)]
    pub transport: crate::metrics::TransportSummary,
    /// Per-request records with seed 000's `request_timings` field names: every one, or a
    /// seeded sample when the phase ran more than the client keeps (see `records`).
    pub request_timings: Vec<RequestRecord>,
    /// Present when `request_timings` holds a sample: how many of how many. The summary's
    /// figures still cover every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<RecordsKept>,
    /// Share of the client ceiling this phase used: the larger of its requests/s and events/s
    /// over the run's `client_calibration` (above ~0.7 the client may have been the limit).
    /// Written `client_headroom` by earlier versions.
    #[serde(
        default,
        alias = "client_headroom",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_load_share: Option<f64>,
    /// The client ceiling `client_load_share` is taken of: the calibrated ceiling with this
    /// phase's prompts (summed over the machines of a merged run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_ceiling: Option<ClientCeiling>,
    /// A capacity-search probe: its load and verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<super::search::ProbeOutcome>,
    /// Instants the phase's actions marked (`mark`, `fault_on`, `fault_off`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<PhaseMark>,
    /// The outage and time to recover around the phase's `fault-on`/`fault-off` marks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<crate::metrics::recovery::Recovery>,
    /// The requests the client cancelled on purpose (the workload's `cancel`), and whether the
    /// server finished requests as fast after the first cancellation as before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancellations: Option<crate::metrics::cancellation::Cancellations>,
    /// A phase with `until: {stable: …}`: what ended it and its estimates then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<crate::metrics::stability::UntilOutcome>,
    /// A rate probe stopped early because the target fell behind its arrivals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation_stop: Option<SaturationStop>,
    /// Whether the client stayed within its bounds while the measured window ran; a
    /// client-bound phase's latencies include client-side delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_trust: Option<crate::metrics::trust::ClientTrust>,
    /// Session workloads: figures by turn, and whole sessions' durations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<crate::metrics::SessionSummary>,
    /// Model mixes: the phase's figures by the served model each request named, most
    /// requests first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<crate::metrics::ModelFigures>,
    /// Archetype mixes (a phase's `mix`): the phase's figures, goodput and SLO verdicts by
    /// the workload each request was drawn from, most requests first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub archetypes: Vec<crate::metrics::ArchetypeFigures>,
    /// With archetypes: each of the plan's SLO objectives against the whole phase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slo: Vec<crate::metrics::SloCheck>,
    /// The target's `cost`: what the window cost, per million output tokens and per million
    /// tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<crate::metrics::cost::PhaseCost>,
    /// The power gauge integrated over the window: mean watts and joules per output token
    /// and per request, with the method and sampling; or why there is no figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<crate::metrics::energy::PhaseEnergy>,
    /// A phase with `compare_to`: its overhead over that phase (TTFT, TPOT, per-request
    /// output tokens/s) with bootstrap intervals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<crate::metrics::overhead::Overhead>,
}

/// The most load the client could send with a phase's prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientCeiling {
    pub requests_per_second: f64,
    /// SSE events per second, counted as text chunks plus three framing events per request.
    pub events_per_second: f64,
}

/// Why a rate probe was stopped before its planned end.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SaturationStop {
    /// Seconds from the measured start.
    pub at_s: f64,
    /// Completions per second over the trailing window when it stopped.
    pub achieved_rps: f64,
    pub target_rps: f64,
    pub why: String,
}

/// A named instant of a phase, marked by one of its actions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhaseMark {
    pub name: String,
    /// Seconds from the measured start: when a `during` action finished; 0 for a `before`
    /// action and the measured window's length for an `after` one.
    pub offset_s: f64,
    /// The list of the action that marked it.
    pub when: HookWhen,
}

/// How many of a phase's records the report holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecordsKept {
    pub kept: u64,
    pub total: u64,
    /// How the kept ones were chosen (`reservoir`: uniform, seeded by the plan's seed).
    pub sampling: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct WarmupResult {
    pub requests: u64,
    pub errors: u64,
    pub elapsed: f64,
}

/// Deltas of a Prometheus endpoint's counters over a phase, and its gauges' extremes.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ServerMetrics {
    pub url: String,
    /// Counter name → after − before.
    pub counter_deltas: BTreeMap<String, f64>,
    /// Gauge name → its range (and mean) over the phase; `gauges_from` says which scrapes.
    pub gauges: BTreeMap<String, GaugeRange>,
    /// Prefix-cache hits / queries over the phase, as seed 000 reports it.
    pub prefix_cache_hit_avg: Option<f64>,
    /// The engine whose metric names were found (`vllm`, `sglang`, `llamacpp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// Engine-neutral counter deltas (`prompt_tokens`, `generation_tokens`), named through
    /// one table for every engine (`runner::scrape::METRIC_NAMES`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub normalized_counter_deltas: BTreeMap<String, f64>,
    /// Engine-neutral gauge ranges (`requests_running`, `requests_waiting`,
    /// `kv_cache_usage` as a 0–1 fraction), through the same table.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub normalized_gauges: BTreeMap<String, GaugeRange>,
    /// With several metrics endpoints (a gateway and its replicas): each one's own figures.
    /// The fields above then hold the gateway's counters, and the backends' summed token
    /// counters and prefix-cache hit ratio.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<EndpointMetrics>,
    /// How the phase's requests spread over the backends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backends: Vec<BackendShare>,
    /// Largest backend request count over the mean (1 is an even spread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_skew: Option<f64>,
    /// Endpoints that could not be scraped (down, garbage), by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Counter deltas per label set (label text → delta), for counters with several label
    /// sets or a `worker` label; at most 64 label sets per metric.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labelled_counter_deltas: BTreeMap<String, BTreeMap<String, f64>>,
    /// Gauge ranges per label set, for the kept gauges with several label sets.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labelled_gauges: BTreeMap<String, BTreeMap<String, GaugeRange>>,
    /// Where `backends[].requests` came from: `gateway: METRIC` (the router's per-worker
    /// counter) or `backends` (each backend's own request counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_requests_from: Option<String>,
    /// Remarks on the figures, e.g. a metric whose label sets were cut at the cap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Scrapes during the measured window (the target's `metrics_interval`), over the
    /// backends when there are any, else the one endpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<MetricsPoint>,
    /// Which scrapes the gauge ranges come from; absent means `edges` (as in reports written
    /// before the window was sampled).
    #[serde(default, skip_serializing_if = "super::GaugesFrom::is_edges")]
    pub gauges_from: super::GaugesFrom,
    /// The sampling during the measured window, when there was any: how many samples, the
    /// scrapes that failed, and the generation rate taken from the samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<super::WindowSampling>,
}

/// One scrape during a phase: levels then, and rates since the scrape before.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct MetricsPoint {
    /// Seconds since the measured window began.
    pub t_s: f64,
    /// Requests running, summed over the backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_running: Option<f64>,
    /// Requests waiting, summed over the backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_waiting: Option<f64>,
    /// KV-cache usage (0–1), the fullest backend's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_usage: Option<f64>,
    /// Requests completed per second since the previous point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_s: Option<f64>,
    /// Generated tokens per second since the previous point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_tok_s: Option<f64>,
    /// Prefix-cache hits over queries since the previous point (vLLM's counters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache_hit_rate: Option<f64>,
}

/// One metrics endpoint's figures over a phase.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct EndpointMetrics {
    pub name: String,
    /// `gateway` or `backend`.
    pub role: String,
    pub metrics: ServerMetrics,
}

/// One backend's part of a phase.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct BackendShare {
    pub name: String,
    /// Requests the backend completed over the phase, from its own request counter.
    pub requests: f64,
    /// `requests` over all backends' requests.
    pub share: Option<f64>,
    /// The backend's prefix-cache hits over queries.
    pub prefix_cache_hit_avg: Option<f64>,
    /// The request counter `requests` came from, read at the phase's two scrapes: shards
    /// that scraped the same backend over overlapping windows merge to the span of them
    /// all instead of counting the overlap twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_counter: Option<CounterSpan>,
    /// The backend's prefix-cache hit and query counters at the two scrapes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache_hits: Option<CounterSpan>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache_queries: Option<CounterSpan>,
}

/// A counter's value at a phase's first and last scrape.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct CounterSpan {
    pub start: f64,
    pub end: f64,
}

/// A gauge over a phase: its extremes and, from samples during the window, its mean.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct GaugeRange {
    pub min: f64,
    pub max: f64,
    /// Time-weighted mean of the samples during the window: the area under the line joining
    /// them over the time they span. Absent for a range from the scrapes around the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_load_share_still_reads_under_its_old_name() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/reports/sample.json"
        ))
        .expect("fixture");
        let mut doc: Value = serde_json::from_str(&text).expect("JSON");
        doc["phases"][0]["client_headroom"] = Value::from(0.25);
        let report: Report = serde_json::from_value(doc).expect("reads");
        assert_eq!(report.phases[0].client_load_share, Some(0.25));
        let written = serde_json::to_value(&report).expect("writes");
        assert_eq!(written["phases"][0]["client_load_share"], Value::from(0.25));
        assert!(written["phases"][0].get("client_headroom").is_none());
    }
}

// Repeat groups: each arm's rounds pooled, and whether two arms differ by more than their
// rounds vary (computed in `repeats.rs`).

/// One `repeat` group of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepeatResult {
    pub group: String,
    /// Rounds the plan asked for.
    pub rounds: u32,
    pub arms: Vec<ArmResult>,
    /// Every pair of arms, in plan order.
    pub pairs: Vec<ArmPair>,
}

/// One arm of a group: its rounds pooled, and how much they varied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArmResult {
    pub arm: String,
    /// The round phases that ran, in round order.
    pub phases: Vec<String>,
    /// Figures from the union of the rounds' records, rounds laid end to end (so rates are
    /// over the rounds' summed elapsed time).
    pub pooled: PhaseSummary,
    /// Per figure path the figure table has repeat groups judge (`ttft.p50`, …, then
    /// `output_tokens_per_second`): each round's value and their range.
    pub spread: Vec<RoundSpread>,
}

/// One figure across an arm's rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RoundSpread {
    /// A figure path (`ttft.p50`, …), in its usual unit (seconds for times).
    pub metric: String,
    /// The pooled value.
    pub pooled: Option<f64>,
    /// Each round's value, in round order.
    pub rounds: Vec<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

impl RoundSpread {
    pub(crate) fn range(&self) -> Option<f64> {
        Some(self.max? - self.min?)
    }
}

/// Two arms compared on each figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArmPair {
    pub a: String,
    pub b: String,
    pub metrics: Vec<PairFigure>,
}

/// Whether two arms' pooled values differ by more than their rounds vary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PairFigure {
    pub metric: String,
    /// `b − a`, pooled values.
    pub difference: f64,
    /// The larger of the two arms' round-to-round ranges (max − min).
    pub spread: f64,
    /// `|difference| > spread`: the gap is larger than either arm moves between rounds.
    pub exceeds_spread: bool,
}

// Sharded runs: a shard's identity, and a merged report's per-shard facts.

/// Which part of a sharded run a report holds (`servebench run --shard I/N`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShardInfo {
    /// 0-based shard index.
    pub index: u32,
    /// Number of shards the plan was split into.
    pub count: u32,
    /// sha256 (hex) of the canonical JSON of the report's expanded `plan`: shards of one run
    /// share it.
    pub plan_sha256: String,
    /// `--start-at`, RFC 3339, when the shard started its phases at planned times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// Each phase's planned start and how late the shard began it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phase_starts: Vec<PlannedStart>,
}

/// A phase's planned start under `--start-at`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlannedStart {
    pub phase: String,
    /// RFC 3339: `start_at` plus the phase's planned offset.
    pub planned_at: String,
    /// How late the shard began the phase (its warmup, or its measured window when it has
    /// none), milliseconds; 0 when on time.
    pub late_ms: f64,
}

/// One shard of a merged report: where it ran and how its client kept up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MergedShard {
    pub index: u32,
    /// The shard report's path as given to `servebench merge`.
    pub file: String,
    /// The shard report's own span.
    #[serde(flatten)]
    pub span: RunSpan,
    pub host: HostFacts,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// The salt this shard's prompts carried (its report's `provenance.salt`). Shards share
    /// one when run with one `--salt` or `--start-at`; otherwise each drew its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salt: Option<String>,
    pub phases: Vec<ShardPhaseFacts>,
}

/// One phase as one shard ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShardPhaseFacts {
    pub phase: String,
    /// RFC 3339 of this shard's measured start.
    pub started_at: String,
    /// This shard's workers (closed loop).
    pub concurrency: Option<u32>,
    /// This shard's target rate (open loop).
    pub rate_rps: Option<f64>,
    pub requests: u64,
    pub errors: u64,
    pub warmup: WarmupResult,
    /// Open loop: how far this shard's sends lagged their schedule (client headroom).
    pub send_lag_ms: Option<Distribution>,
    /// Open loop: this shard's achieved rate over its target rate.
    pub achieved_rate_ratio: Option<f64>,
    /// Under `--start-at`: how late the shard began the phase, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_ms: Option<f64>,
    /// The shard's own scrape of the server's metrics around its phase.
    pub server_metrics: Option<ServerMetrics>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
