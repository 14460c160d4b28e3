//! The run directory: the report rewritten atomically after every phase, the journal of
//! every finished request, appended as it completes, and `requests.parquet`, streamed from
//! the journal by a thread of its own and finished on every exit path.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde::Serialize;

use crate::client::RequestRecord;
use crate::report::formats::records::{RecordRow, RecordsWriter};
use crate::report::{Report, ReportFiles};

pub use crate::report::formats::records::{REQUESTS_FILE, Window};

pub use crate::report::REPORT_FILE;
pub const JOURNAL_FILE: &str = "journal.jsonl";

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

/// Appends one JSON line per finished request, and hands each to the `requests.parquet`
/// writer. Shared with the interrupt handler, which flushes it and finishes the Parquet file
/// before a forced exit.
#[derive(Clone)]
pub struct Journal {
    writer: Arc<Mutex<BufWriter<File>>>,
    records: Arc<Mutex<Option<RecordsSink>>>,
    shard: Option<u32>,
}

/// Rows in flight to the Parquet writer; a full channel makes the collector wait.
const RECORDS_CHANNEL_ROWS: usize = 8192;

/// The Parquet writer's thread and the bounded channel that feeds it.
struct RecordsSink {
    sender: Option<SyncSender<RecordRow>>,
    thread: Option<JoinHandle<Result<u64, String>>>,
}

impl RecordsSink {
    fn start(path: PathBuf) -> Result<Self, String> {
        let mut writer = RecordsWriter::create(&path)?;
        let (sender, receiver) = mpsc::sync_channel::<RecordRow>(RECORDS_CHANNEL_ROWS);
        let thread = std::thread::Builder::new()
            .name("requests-parquet".to_string())
            .spawn(move || {
                for row in receiver {
                    writer.push(row)?;
                }
                writer.finish()
            })
            .map_err(|e| format!("cannot start the requests.parquet writer: {e}"))?;
        Ok(RecordsSink {
            sender: Some(sender),
            thread: Some(thread),
        })
    }

    /// Close the channel and wait for the footer; the rows written.
    fn close(&mut self) -> Result<u64, String> {
        drop(self.sender.take());
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .map_err(|_| "the requests.parquet writer panicked".to_string())?,
            None => Ok(0),
        }
    }
}

impl Drop for RecordsSink {
    /// A run that returns early still leaves a finished file.
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            eprintln!("warning: {e}");
        }
    }
}

#[derive(Serialize)]
struct JournalLine<'a> {
    phase: &'a str,
    window: Window,
    #[serde(flatten)]
    record: &'a RequestRecord,
}

/// How far a phase had got when its facts were journaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FactsStage {
    /// The measured window is starting: its warmup and `before` actions are known.
    Started,
    /// The measured window ended; its `after` actions may not have run yet.
    Measured,
    /// Every action ran: the phase is about to join the report.
    Finished,
}

#[derive(Serialize)]
struct FactsLine<'a> {
    phase_facts: &'a crate::report::PhaseFacts,
    stage: FactsStage,
}

impl Journal {
    /// Open the journal and start `requests.parquet`; `shard` fills its `shard` column.
    pub fn create(dir: &Path, shard: Option<u32>) -> Result<Self, String> {
        let path = dir.join(JOURNAL_FILE);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let records = RecordsSink::start(dir.join(REQUESTS_FILE))?;
        Ok(Journal {
            writer: Arc::new(Mutex::new(BufWriter::new(file))),
            records: Arc::new(Mutex::new(Some(records))),
            shard,
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
        writer.write_all(b"\n")?;
        // Still under the journal's lock, so both files hold the records in the same order.
        self.send_row(phase, window, record);
        Ok(())
    }

    /// Hand a record to the Parquet writer; if that writer failed, say why once and stop.
    fn send_row(&self, phase: &str, window: Window, record: &RequestRecord) {
        let mut sink = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let Some(active) = sink.as_ref().and_then(|s| s.sender.as_ref()) else {
            return;
        };
        let row = RecordRow {
            phase: phase.to_string(),
            window,
            shard: self.shard,
            record: record.clone(),
        };
        if active.send(row).is_err()
            && let Some(mut failed) = sink.take()
            && let Err(e) = failed.close()
        {
            eprintln!("warning: {e}; the journal still holds every record");
        }
    }

    /// Write the Parquet file's footer; later records go to the journal only. Returns the
    /// rows written, or why the file could not be written.
    pub fn finish_records(&self) -> Result<u64, String> {
        let sink = self
            .records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        match sink {
            Some(mut sink) => sink.close(),
            None => Ok(0),
        }
    }

    /// A phase's facts as known so far, `{"phase_facts": {...}}`: `recover` builds an
    /// unfinished phase from the last such line and its records.
    pub fn append_facts(
        &self,
        facts: &crate::report::PhaseFacts,
        stage: FactsStage,
    ) -> std::io::Result<()> {
        let mut writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let line = FactsLine {
            phase_facts: facts,
            stage,
        };
        serde_json::to_writer(&mut *writer, &line)?;
        writer.write_all(b"\n")?;
        writer.flush()
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

/// Write `requests.parquet`'s footer; a failure costs the file, never the run (the journal
/// holds every record, and `servebench recover` rebuilds the file from it).
pub(super) fn finish_records(journal: &Journal) {
    if let Err(e) = journal.finish_records() {
        eprintln!("warning: {e}; `servebench recover` rebuilds it from the journal");
    }
}
