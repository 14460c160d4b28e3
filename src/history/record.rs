//! A finished report → the rows the store keeps: one run, its phases, every figure of the
//! figure table with its interval, errors by cause, the trust verdict, the latency split and
//! the conditions beside them. Per-request records stay in the run's Parquet parts, which the
//! run row references by their manifest's path and hash (the manifest lists each part's).
//! Capacity searches become rows of their own (`searches`).

use std::io::Read as _;
use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::HistoryError;
use super::deployment::deployment_sha256;
use super::searches::{SearchRow, search_rows};
use super::series::Conditions;
use crate::metrics::trust::TrustVerdict;
use crate::report::formats::records::RecordsSet;
use crate::report::model::figure_path::{FigurePath, Stat, figure_path_names};
use crate::report::model::provenance::{phase_conditions, provenance_labels};
use crate::report::model::{PhaseResult, Report};

/// Which tool and format a stored run's numbers came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunSource {
    /// A servebench report (recorded after `run`, by `history record` or imported).
    Servebench,
    /// The seeds' single-run `anvil-serving.benchmark/v1` format.
    Anvil,
    /// The seeds' multi-phase gateway format.
    MultiPhase,
    /// AIPerf's JSON export (`profile_export_aiperf.json`).
    Aiperf,
    /// vLLM's `vllm bench serve --save-result` JSON.
    VllmBenchServe,
}

impl RunSource {
    pub const ALL: [RunSource; 5] = [
        RunSource::Servebench,
        RunSource::Anvil,
        RunSource::MultiPhase,
        RunSource::Aiperf,
        RunSource::VllmBenchServe,
    ];

    /// As the store writes it.
    pub fn name(self) -> &'static str {
        match self {
            RunSource::Servebench => "servebench",
            RunSource::Anvil => "anvil",
            RunSource::MultiPhase => "multi_phase",
            RunSource::Aiperf => "aiperf",
            RunSource::VllmBenchServe => "vllm_bench_serve",
        }
    }

    pub fn named(name: &str) -> Option<RunSource> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// One run and everything stored about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRows {
    pub run: RunRow,
    pub phases: Vec<PhaseRow>,
    /// Its capacity searches (their probes are among `phases`).
    pub searches: Vec<SearchRow>,
}

/// The run's own facts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRow {
    /// The report's `run_id` (the store's id is this, made unique if it repeats).
    pub run_id: String,
    /// Identifies this recording: recording the same report again finds it instead of
    /// adding it twice.
    pub record_key: String,
    pub plan: String,
    pub source: RunSource,
    /// RFC 3339.
    pub started_at: String,
    pub finished_at: Option<String>,
    /// Every phase ran and the report was finished; partial runs are kept but marked.
    pub complete: bool,
    pub stop_reason: Option<String>,
    /// The tool and its version (`servebench 0.1.0`, `aiperf 0.13.0`).
    pub tool: String,
    pub hostname: Option<String>,
    /// sha256 of the plan file the run came from.
    pub plan_sha256: Option<String>,
    pub report_path: Option<String>,
    pub report_sha256: Option<String>,
    /// The run's per-request records, by path and hash: `requests/_manifest.json`, which
    /// lists every part with its hash (an older run's `requests.parquet`).
    pub records_path: Option<String>,
    pub records_sha256: Option<String>,
    /// The plan's `metadata` labels, JSON.
    pub metadata: String,
    /// Where and against what the run ran (client host, plan repository, targets' identity),
    /// JSON; `None` when the report does not say.
    pub provenance: Option<String>,
    /// The plan's `history:` section, JSON (which figures alert, runs a level needs).
    pub history: Option<String>,
}

/// One phase of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseRow {
    pub phase: String,
    pub target: String,
    pub route: String,
    pub workload: String,
    pub concurrency: Option<i64>,
    pub rate_rps: Option<f64>,
    pub recheck_of: Option<String>,
    pub started_at: String,
    pub partial: bool,
    /// sha256 of the asked-for work, when the report states it.
    pub work_sha256: Option<String>,
    /// sha256 of the deployment labels and the target's identity.
    pub deployment_sha256: String,
    pub trust: Option<TrustVerdict>,
    /// The bounds a client-bound phase exceeded, JSON list.
    pub trust_reasons: String,
    pub requests: i64,
    pub errors: i64,
    pub elapsed_s: f64,
    pub conditions: Conditions,
    pub split: Option<SplitRow>,
    pub figures: Vec<FigureRow>,
    pub errors_by_cause: Vec<ErrorRow>,
}

/// The mean latency split, milliseconds (`metrics::transport::LatencySplit`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SplitRow {
    pub requests: i64,
    pub client_queue_ms: Option<f64>,
    pub connect_ms: f64,
    pub tls_ms: f64,
    pub server_queue_ms: Option<f64>,
    pub server_prefill_ms: f64,
    pub server_decode_ms: f64,
    pub frontend_network_ms: f64,
    pub e2e_ms: f64,
}

/// One figure of a phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureRow {
    /// A figure path (`ttft.p99`, `error_rate`).
    pub figure: String,
    pub value: f64,
    /// The within-run 95% interval, when the figure has one.
    pub interval: Option<(f64, f64)>,
    /// How the figure's definition differs from servebench's, for imported figures.
    pub note: Option<String>,
}

/// Failed requests that share a cause.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorRow {
    pub cause: String,
    pub kind: String,
    pub status: Option<i64>,
    pub count: i64,
    pub example: String,
}

/// The rows for `report`; `report_path` is where its report.json lies (its hash and the
/// records beside it are read from there).
pub fn rows(report: &Report, report_path: Option<&Path>) -> Result<RunRows, HistoryError> {
    let report_sha256 = report_path.map(sha256_file).transpose()?;
    let records = match report_path {
        Some(path) => RecordsSet::beside(path).map_err(|message| HistoryError::File {
            path: path.to_path_buf(),
            message,
        })?,
        None => None,
    }
    .map(|set| set.address().to_path_buf());
    let records_sha256 = records.as_deref().map(sha256_file).transpose()?;
    let complete = !report.span.partial && report.span.finished_at.is_some();
    let run = RunRow {
        run_id: report.span.run_id.clone(),
        record_key: record_key(report),
        plan: report.plan.name.clone(),
        source: RunSource::Servebench,
        started_at: report.span.started_at.clone(),
        finished_at: report.span.finished_at.clone(),
        complete,
        stop_reason: report.span.stop_reason.clone(),
        tool: format!("{} {}", report.tool.name, report.tool.version),
        hostname: Some(report.host.hostname.clone()).filter(|h| !h.is_empty()),
        plan_sha256: Some(report.plan_source.sha256.clone()),
        report_path: report_path.map(absolute),
        report_sha256,
        records_path: records.as_deref().map(absolute),
        records_sha256,
        metadata: Value::from_iter(report.metadata.clone()).to_string(),
        provenance: provenance(report).map(|p| p.to_string()),
        history: report
            .plan
            .history
            .as_ref()
            .and_then(|h| serde_json::to_string(h).ok()),
    };
    let phases = report
        .phases
        .iter()
        .map(|phase| phase_row(report, phase))
        .collect();
    Ok(RunRows {
        run,
        phases,
        searches: search_rows(report),
    })
}

/// One phase's row: every figure path that has a value in it.
pub fn phase_row(report: &Report, phase: &PhaseResult) -> PhaseRow {
    let summary = &phase.summary;
    let split = phase
        .transport
        .server_timing_gap
        .as_ref()
        .and_then(|gap| gap.split.as_ref());
    PhaseRow {
        phase: phase.header.phase.clone(),
        target: phase.header.target.clone(),
        route: phase.header.route.clone(),
        workload: phase.header.workload.clone(),
        concurrency: phase.header.concurrency.map(i64::from),
        rate_rps: phase.header.rate_rps,
        recheck_of: phase.header.recheck_of.clone(),
        started_at: phase.header.started_at.clone(),
        partial: phase.partial || report.span.partial,
        work_sha256: phase.header.work_sha256.clone(),
        deployment_sha256: deployment_sha256(report, &phase.header.target),
        trust: phase.client_trust.as_ref().map(|t| t.verdict),
        trust_reasons: json!(
            phase
                .client_trust
                .as_ref()
                .map(|t| t.reasons.clone())
                .unwrap_or_default()
        )
        .to_string(),
        requests: summary.requests as i64,
        errors: summary.errors as i64,
        elapsed_s: summary.elapsed,
        conditions: phase_conditions(phase, report),
        split: split.map(|s| SplitRow {
            requests: s.requests as i64,
            client_queue_ms: s.client_queue_ms,
            connect_ms: s.connect_ms,
            tls_ms: s.tls_ms,
            server_queue_ms: s.server_queue_ms,
            server_prefill_ms: s.server_prefill_ms,
            server_decode_ms: s.server_decode_ms,
            frontend_network_ms: s.frontend_network_ms,
            e2e_ms: s.e2e_ms,
        }),
        figures: figures(phase),
        errors_by_cause: summary
            .errors_by_cause
            .iter()
            .map(|c| ErrorRow {
                cause: c.cause.clone(),
                kind: c.kind.name().to_string(),
                status: c.status.map(i64::from),
                count: c.count as i64,
                example: c.example.clone(),
            })
            .collect(),
    }
}

/// Every figure path with a finite value in `phase`, in the figure table's order, each
/// percentile with its interval.
pub fn figures(phase: &PhaseResult) -> Vec<FigureRow> {
    figure_path_names()
        .iter()
        .filter_map(|name| {
            let path: FigurePath = name.parse().ok()?;
            let value = path.value(phase).filter(|v| v.is_finite())?;
            let interval = match path {
                FigurePath::Dist(figure, stat) if stat != Stat::Mean => phase
                    .summary
                    .distribution(figure)
                    .and_then(|d| d.ci95)
                    .and_then(|ci| ci.of(stat))
                    .map(|i| (i.lo, i.hi)),
                _ => path.share_interval(phase).map(|[lo, hi]| (lo, hi)),
            };
            Some(FigureRow {
                figure: name.clone(),
                value,
                interval,
                note: None,
            })
        })
        .collect()
}

/// The same report always gives the same key; a different run (or a later, finished copy
/// of a partial one) gives another.
fn record_key(report: &Report) -> String {
    let identity = json!({
        "run_id": report.span.run_id,
        "started_at": report.span.started_at,
        "finished_at": report.span.finished_at,
        "partial": report.span.partial,
        "plan_sha256": report.plan_source.sha256,
        "shard": report.shard.as_ref().map(|s| s.index),
        "phases": report.phases.iter().map(|p| (&p.header.phase, &p.header.started_at, p.summary.requests)).collect::<Vec<_>>(),
    });
    sha256_hex(identity.to_string().as_bytes())
}

/// What the report states about where and against what it ran: the labels `compare` diffs
/// (tool, host, plan commit, each server as it stated itself), so the trends mark the same
/// changes. The plan's `metadata` is stored on its own (`metadata`), not twice.
fn provenance(report: &Report) -> Option<Value> {
    Some(Value::from_iter(
        provenance_labels(report)
            .into_iter()
            .filter(|(label, _)| !label.starts_with("metadata "))
            .map(|(label, value)| (label, Value::String(value))),
    ))
}

pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// sha256 of a file, read in blocks (a run's Parquet file may be large).
pub(super) fn sha256_file(path: &Path) -> Result<String, HistoryError> {
    let input = |e: std::io::Error| HistoryError::File {
        path: path.to_path_buf(),
        message: format!("cannot read: {e}"),
    };
    let mut file = std::fs::File::open(path).map_err(input)?;
    let mut hasher = Sha256::new();
    let mut block = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut block).map_err(input)?;
        if n == 0 {
            break;
        }
        hasher.update(&block[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

fn absolute(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_path_with_a_value_is_recorded_with_its_interval() {
        let report = crate::report::sample_report();
        let phase = &report.phases[0];
        let rows = figures(phase);
        for row in &rows {
            let path: FigurePath = row.figure.parse().unwrap();
            assert_eq!(path.value(phase), Some(row.value), "{}", row.figure);
        }
        let ttft = phase
            .summary
            .distribution(crate::figure::Figure::Ttft)
            .unwrap();
        let p50 = rows.iter().find(|r| r.figure == "ttft.p50").unwrap();
        assert_eq!(
            p50.interval,
            ttft.ci95.and_then(|ci| ci.p50).map(|i| (i.lo, i.hi))
        );
        assert!(rows.iter().any(|r| r.figure == "error_rate"));
        assert!(
            rows.iter()
                .all(|r| r.figure != "ttft.p50" || r.note.is_none())
        );
    }

    #[test]
    fn the_record_key_follows_the_report_not_the_file() {
        let report = crate::report::sample_report();
        let mut later = report.clone();
        assert_eq!(record_key(&report), record_key(&later));
        later.span.finished_at = Some("2099-01-01T00:00:00Z".into());
        assert_ne!(record_key(&report), record_key(&later));
    }
}
