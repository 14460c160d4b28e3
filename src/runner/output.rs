//! The run directory: the report rewritten atomically after every phase, the journal of
//! finished requests not yet in a closed part ([`super::journal`]), and the records'
//! Parquet parts in `requests/`, the last closed on every exit path.

use std::fs;
use std::path::{Path, PathBuf};

use crate::report::{Report, ReportFiles};

pub use super::journal::{FactsStage, JOURNAL_FILE, Journal, segment_file_name};
pub use crate::report::formats::records::{PARTS_DIR, REQUESTS_FILE, Window};

pub use crate::report::REPORT_FILE;

/// Create (or reuse, when empty) the run directory and prove it is writable, before any
/// request is sent.
pub fn prepare_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "--output {}: exists and is not a directory",
            dir.display()
        ));
    }
    if dir.join(REPORT_FILE).exists() {
        return Err(format!(
            "--output {}: already holds a report; choose another directory",
            dir.display()
        ));
    }
    fs::create_dir_all(dir)
        .map_err(|e| format!("--output {}: cannot create directory: {e}", dir.display()))?;
    let probe = dir.join(".servebench-write-probe");
    fs::write(&probe, b"probe")
        .and_then(|_| fs::remove_file(&probe))
        .map_err(|e| format!("--output {}: not writable: {e}", dir.display()))?;
    Ok(())
}

/// Write `report.json`, then `report.md` and `report.html`, each atomically.
pub fn write_report(dir: &Path, report: &Report) -> Result<PathBuf, String> {
    let files = ReportFiles::run_dir(dir);
    crate::report::write_files(report, &files)?;
    Ok(dir.join(REPORT_FILE))
}

/// Close the records' last part; a failure costs the part, never the run (the journal holds
/// every record no closed part holds, and `servebench recover` rebuilds the parts from it).
pub(super) fn finish_records(journal: &Journal) {
    if let Err(e) = journal.finish_records() {
        eprintln!("warning: {e}; `servebench recover` rebuilds the records from the journal");
    }
}
