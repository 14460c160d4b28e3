//! The run directory: the report rewritten atomically after every phase, and the journal of
//! every finished request, appended as it completes.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::client::RequestRecord;
use crate::report::{Report, ReportFiles};

pub use crate::report::REPORT_FILE;
pub const JOURNAL_FILE: &str = "journal.jsonl";

/// Create (or reuse, when empty) the run directory and prove it is writable, before any
/// request is sent.
pub fn prepare_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "--out {}: exists and is not a directory",
            dir.display()
        ));
    }
    if dir.join(REPORT_FILE).exists() {
        return Err(format!(
            "--out {}: already holds a report; choose another directory",
            dir.display()
        ));
    }
    fs::create_dir_all(dir)
        .map_err(|e| format!("--out {}: cannot create directory: {e}", dir.display()))?;
    let probe = dir.join(".servebench-write-probe");
    fs::write(&probe, b"probe")
        .and_then(|_| fs::remove_file(&probe))
        .map_err(|e| format!("--out {}: not writable: {e}", dir.display()))?;
    Ok(())
}

/// Write `report.json`, then `report.md` and `report.html`, each atomically.
pub fn write_report(dir: &Path, report: &Report) -> Result<PathBuf, String> {
    let files = ReportFiles::run_dir(dir);
    crate::report::write_files(report, &files)?;
    Ok(dir.join(REPORT_FILE))
}

/// Appends one JSON line per finished request. Shared with the interrupt handler, which
/// flushes it before a forced exit.
#[derive(Clone)]
pub struct Journal {
    writer: Arc<Mutex<BufWriter<File>>>,
}

#[derive(Serialize)]
struct JournalLine<'a> {
    phase: &'a str,
    window: Window,
    #[serde(flatten)]
    record: &'a RequestRecord,
}

/// Which window of a phase a journal line belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Window {
    Warmup,
    Measured,
}

impl Journal {
    pub fn create(dir: &Path) -> Result<Self, String> {
        let path = dir.join(JOURNAL_FILE);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        Ok(Journal {
            writer: Arc::new(Mutex::new(BufWriter::new(file))),
        })
    }

    pub fn append(
        &self,
        phase: &str,
        window: Window,
        record: &RequestRecord,
    ) -> std::io::Result<()> {
        let mut writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        serde_json::to_writer(
            &mut *writer,
            &JournalLine {
                phase,
                window,
                record,
            },
        )?;
        writer.write_all(b"\n")
    }

    /// A rolling summary line, `{"summary": {...}}`: readers of records skip lines without
    /// a `request_index`.
    pub fn append_summary(
        &self,
        phase: &str,
        window: Window,
        summary: &crate::scheduler::rolling::RollingSummary,
    ) -> std::io::Result<()> {
        #[derive(Serialize)]
        struct Inner<'a> {
            phase: &'a str,
            window: Window,
            #[serde(flatten)]
            summary: &'a crate::scheduler::rolling::RollingSummary,
        }
        #[derive(Serialize)]
        struct SummaryLine<'a> {
            summary: Inner<'a>,
        }
        let mut writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let line = SummaryLine {
            summary: Inner {
                phase,
                window,
                summary,
            },
        };
        serde_json::to_writer(&mut *writer, &line)?;
        writer.write_all(b"\n")
    }

    pub fn flush(&self) -> std::io::Result<()> {
        self.writer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .flush()
    }
}
