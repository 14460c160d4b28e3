//! `history import`: other results as the store's rows, so a team's past results start the
//! series. servebench reports and the seeds' formats arrive as a [`Report`] (read by the
//! command) and keep their own names unless the mapping renames them; peers' result files
//! (AIPerf's JSON export, vLLM's `bench serve` result) carry no plan, so they join a series
//! only by an explicit mapping (plan, phase, target), and each figure whose definition
//! differs from servebench's keeps a note saying how.

mod aiperf;
mod peer;
mod vllm;

use std::path::Path;

use serde_json::Value;

use super::HistoryError;
use super::record::{self, RunRows, RunSource};
use crate::report::model::Report;

pub use peer::PeerFormat;

/// Which series an import joins: given on the command line.
#[derive(Debug, Clone, Default)]
pub struct Mapping {
    pub plan: Option<String>,
    pub phase: Option<String>,
    pub target: Option<String>,
    /// RFC 3339; replaces (or supplies) the run's start.
    pub started_at: Option<String>,
}

/// A peer's result file, detected from its fields; `None` when it is not one.
pub fn detect_peer(doc: &Value) -> Option<PeerFormat> {
    peer::detect(doc)
}

/// The rows of a peer's result file (`bytes` is the file, `doc` its parsed JSON).
pub fn peer_rows(
    format: PeerFormat,
    doc: &Value,
    bytes: &[u8],
    path: &Path,
    mapping: &Mapping,
) -> Result<RunRows, HistoryError> {
    let input = |detail: String| HistoryError::File {
        path: path.to_path_buf(),
        message: detail,
    };
    let (plan, phase, target) = match (&mapping.plan, &mapping.phase, &mapping.target) {
        (Some(plan), Some(phase), Some(target)) => (plan, phase, target),
        _ => {
            return Err(input(format!(
                "{} carries no plan: give --plan, --phase and --target to say which series it joins",
                format.describe()
            )));
        }
    };
    let summary = match format {
        PeerFormat::Aiperf => aiperf::summary(doc),
        PeerFormat::VllmBenchServe => vllm::summary(doc),
    }
    .map_err(input)?;
    let started_at = mapping
        .started_at
        .clone()
        .or(summary.started_at.clone())
        .ok_or_else(|| input("states no start time: give --started-at".to_string()))?;
    peer::rows(
        format,
        summary,
        peer::Identity {
            plan,
            phase,
            target,
            started_at: &started_at,
            file_sha256: &record::sha256_hex(bytes),
            path,
        },
    )
}

/// The rows of a servebench report or a seed read as one, renamed by `mapping`.
pub fn report_rows(
    report: &Report,
    source: RunSource,
    path: &Path,
    bytes: &[u8],
    mapping: &Mapping,
) -> Result<RunRows, HistoryError> {
    let mut rows = record::rows(report, Some(path))?;
    rows.run.source = source;
    if let Some(plan) = &mapping.plan {
        rows.run.plan = plan.clone();
    }
    if let Some(started_at) = &mapping.started_at {
        rows.run.started_at = started_at.clone();
    }
    if chrono::DateTime::parse_from_rfc3339(&rows.run.started_at).is_err() {
        return Err(HistoryError::File {
            path: path.to_path_buf(),
            message: format!(
                "its start time {:?} is not an RFC 3339 time: give --started-at",
                rows.run.started_at
            ),
        });
    }
    if mapping.phase.is_some() || mapping.target.is_some() {
        let [only] = rows.phases.as_mut_slice() else {
            return Err(HistoryError::File {
                path: path.to_path_buf(),
                message: format!(
                    "holds {} phases; --phase and --target rename the phase of a one-phase report",
                    rows.phases.len()
                ),
            });
        };
        if let Some(phase) = &mapping.phase {
            only.phase = phase.clone();
        }
        if let Some(target) = &mapping.target {
            only.target = target.clone();
        }
    }
    // The file and the mapping identify an import: importing it again finds it.
    rows.run.record_key = record::sha256_hex(
        format!(
            "{}|{:?}|{:?}|{:?}|{:?}",
            record::sha256_hex(bytes),
            mapping.plan,
            mapping.phase,
            mapping.target,
            mapping.started_at
        )
        .as_bytes(),
    );
    Ok(rows)
}
