//! Reading a report file in any supported format: servebench's own JSON, the single-run
//! `anvil-serving.benchmark/v1` format or the untagged multi-phase format.

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::anvil::{ANVIL_SCHEMA, AnvilRun, anvil_to_report};
use super::multiphase::{MultiPhaseRun, multiphase_to_report};
use super::write::REPORT_FILE;
use crate::report::model::{PlanSource, REPORT_SCHEMA, Report};

/// Why a report file could not be read; names the file and the problem.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct ReadError {
    pub path: PathBuf,
    pub problem: String,
}

/// Which format a report file is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// `servebench.report/v1`.
    Servebench,
    /// Single-run `anvil-serving.benchmark/v1` (seeds 000, 002).
    AnvilRun,
    /// Multi-phase report without a schema tag (seed 004).
    MultiPhase,
}

/// Detect the format from the parsed document.
pub fn detect(doc: &Value) -> Result<ReportFormat, String> {
    let Some(obj) = doc.as_object() else {
        return Err("expected a JSON object at the top level".to_string());
    };
    match obj.get("schema") {
        Some(Value::String(s)) if s == REPORT_SCHEMA => Ok(ReportFormat::Servebench),
        Some(Value::String(s)) if s == ANVIL_SCHEMA => Ok(ReportFormat::AnvilRun),
        Some(Value::String(s)) => Err(format!(
            "unsupported report schema {s:?}; expected {REPORT_SCHEMA:?} or {ANVIL_SCHEMA:?}"
        )),
        Some(other) => Err(format!("`schema` must be a string, found {other}")),
        None => match obj.get("phases") {
            Some(Value::Array(ps)) if ps.iter().all(|p| p.get("phase").is_some()) => {
                Ok(ReportFormat::MultiPhase)
            }
            Some(_) => Err(
                "`phases` is not a list of objects with a `phase` name (the multi-phase format)"
                    .to_string(),
            ),
            None => Err(format!(
                "not a known report: no `schema` ({REPORT_SCHEMA:?} or {ANVIL_SCHEMA:?}) and no `phases` list"
            )),
        },
    }
}

/// The report file a path names: the path itself, or a run directory's `report.json`.
pub fn report_file(path: &Path) -> Result<PathBuf, ReadError> {
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let file = path.join(REPORT_FILE);
    if file.is_file() {
        Ok(file)
    } else {
        Err(ReadError {
            path: path.to_path_buf(),
            problem: format!(
                "a directory without a report (looked for {})",
                file.display()
            ),
        })
    }
}

/// Read a report in any supported format.
pub fn read_report(path: &Path) -> Result<Report, ReadError> {
    let err = |problem: String| ReadError {
        path: path.to_path_buf(),
        problem,
    };
    let bytes = std::fs::read(path).map_err(|e| err(format!("cannot read: {e}")))?;
    read_report_bytes(&bytes, path)
}

/// Read a report from bytes already in memory; `path` names it in errors and the source.
pub fn read_report_bytes(bytes: &[u8], path: &Path) -> Result<Report, ReadError> {
    let err = |problem: String| ReadError {
        path: path.to_path_buf(),
        problem,
    };
    let doc: Value =
        serde_json::from_slice(bytes).map_err(|e| err(format!("not valid JSON: {e}")))?;
    let format = detect(&doc).map_err(err)?;
    let source = PlanSource {
        path: path.display().to_string(),
        sha256: hex::encode(Sha256::digest(bytes)),
    };
    match format {
        // Typed parses run on the bytes so errors carry line and column.
        ReportFormat::Servebench => serde_json::from_slice::<Report>(bytes)
            .map_err(|e| err(format!("not a valid {REPORT_SCHEMA} report: {e}"))),
        ReportFormat::AnvilRun => {
            let mut run: AnvilRun = serde_json::from_slice(bytes)
                .map_err(|e| err(format!("not a valid {ANVIL_SCHEMA} report: {e}")))?;
            run.extra = super::anvil::anvil_unread_fields(&doc);
            if run.request_timings.is_empty() {
                return Err(err(
                    "`request_timings` is empty: nothing to summarize".to_string()
                ));
            }
            if run.concurrency == 0 {
                return Err(err("`concurrency` must be at least 1".to_string()));
            }
            Ok(anvil_to_report(run, source))
        }
        ReportFormat::MultiPhase => {
            let run: MultiPhaseRun = serde_json::from_slice(bytes)
                .map_err(|e| err(format!("not a valid multi-phase report: {e}")))?;
            if run.phases.is_empty() {
                return Err(err("`phases` is empty".to_string()));
            }
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "imported".to_string());
            Ok(multiphase_to_report(run, &name, source))
        }
    }
}
