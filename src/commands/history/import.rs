//! `history import FILE…`: servebench reports, the seeds' formats, AIPerf exports and vLLM
//! bench serve results into the store, each joining the series the mapping names.

use std::path::{Path, PathBuf};

use super::{fail, open};
use crate::exit::Exit;
use crate::history::import::{Mapping, detect_peer, peer_rows, report_rows};
use crate::history::record::{RunRows, RunSource};
use crate::history::{HistoryError, Location, OpenMode, Store as _};
use crate::report::formats::read::{ReportFormat, detect, read_report_bytes};

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// Result files: report.json, the seeds' formats, profile_export_aiperf.json, a vLLM
    /// bench serve result.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The plan whose series the import joins (required for AIPerf and vLLM files).
    #[arg(long)]
    pub plan: Option<String>,
    /// The phase whose series it joins (required for AIPerf and vLLM files).
    #[arg(long)]
    pub phase: Option<String>,
    /// The target whose series it joins (required for AIPerf and vLLM files).
    #[arg(long)]
    pub target: Option<String>,
    /// The run's start (RFC 3339, or a date for its 00:00 UTC), when the file states none or
    /// states it without a zone.
    #[arg(long, value_name = "TIME|DATE", value_parser = super::time_arg)]
    pub started_at: Option<String>,
}

pub fn run(location: &Location, args: &ImportArgs) -> Exit {
    let mapping = Mapping {
        plan: args.plan.clone(),
        phase: args.phase.clone(),
        target: args.target.clone(),
        started_at: args.started_at.clone(),
    };
    // Every file is read before the store is touched: a bad one imports nothing.
    let mut all = Vec::new();
    for path in &args.files {
        match rows(path, &mapping) {
            Ok(rows) => all.push(rows),
            Err(e) => return fail(&e),
        }
    }
    let mut store = match open(location, OpenMode::Create) {
        Ok(store) => store,
        Err(e) => return fail(&e),
    };
    for rows in &all {
        match store.record_rows(rows) {
            Ok(id) => println!("{id}"),
            Err(e) => return fail(&e),
        }
    }
    Exit::Success
}

fn rows(path: &Path, mapping: &Mapping) -> Result<RunRows, HistoryError> {
    let input = |detail: String| HistoryError::File {
        path: path.to_path_buf(),
        message: detail,
    };
    let bytes = std::fs::read(path).map_err(|e| input(format!("cannot read: {e}")))?;
    let doc: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| input(format!("not valid JSON: {e}")))?;
    if let Some(format) = detect_peer(&doc) {
        return peer_rows(format, &doc, &bytes, path, mapping);
    }
    let source = match detect(&doc) {
        Ok(ReportFormat::Servebench) => RunSource::Servebench,
        Ok(ReportFormat::AnvilRun) => RunSource::Anvil,
        Ok(ReportFormat::MultiPhase) => RunSource::MultiPhase,
        Err(e) => {
            return Err(input(format!(
                "{e}; nor an AIPerf export (profile_export_aiperf.json) or a vLLM bench serve result"
            )));
        }
    };
    let report = read_report_bytes(&bytes, path).map_err(|e| input(e.problem))?;
    report_rows(&report, source, path, &bytes, mapping)
}
