//! The journal: one JSON line per finished request, appended as it completes, plus each
//! phase's facts and the rolling summaries. It holds only what no closed Parquet part holds
//! yet: every `part_rows` records the open file (`journal.jsonl`) is renamed to a segment
//! (`journal-000007.jsonl`) and a new one started; the segment is deleted once part 7 is
//! closed and listed in `requests/_manifest.json`. Each new file starts with the latest facts
//! of every phase and the summaries so far, so `recover` needs no deleted line.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde::Serialize;

use crate::client::RequestRecord;
use crate::report::formats::records::{PartsWriter, RecordRow, Window};

/// The open journal file in a run directory.
pub const JOURNAL_FILE: &str = "journal.jsonl";

/// The journal segment whose records make part `index`, kept until that part is closed.
pub fn segment_file_name(index: usize) -> String {
    format!("journal-{index:06}.jsonl")
}

/// Appends one JSON line per finished request, and hands each to the Parquet parts' writer.
/// Shared with the interrupt handler, which flushes it and closes the last part before a
/// forced exit.
#[derive(Clone)]
pub struct Journal {
    shared: Arc<Shared>,
    shard: Option<u32>,
}

/// The open journal file and the parts' writer, locked in that order.
struct Shared {
    segments: Mutex<Segments>,
    records: Mutex<Option<RecordsSink>>,
}

impl Shared {
    fn segments(&self) -> std::sync::MutexGuard<'_, Segments> {
        self.segments.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn sink(&self) -> std::sync::MutexGuard<'_, Option<RecordsSink>> {
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Close the last part, then restart the open file: its records are all in parts now.
    fn finish(&self) -> Result<u64, String> {
        // Held throughout, so no record lands in the open file between the last part and
        // the restart.
        let mut segments = self.segments();
        let Some(mut sink) = self.sink().take() else {
            return Ok(0);
        };
        let rows = sink.close()?;
        if segments.records > 0 {
            segments
                .restart()
                .map_err(|e| format!("cannot restart {JOURNAL_FILE}: {e}"))?;
        }
        Ok(rows)
    }
}

impl Drop for Shared {
    /// A run that returns early still leaves its last part closed and a journal that holds
    /// no record twice.
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            eprintln!("warning: {e}; the journal still holds every record not in a part");
        }
    }
}

/// The open journal file and what every new one starts with.
struct Segments {
    dir: PathBuf,
    writer: BufWriter<File>,
    /// The part the open file's records will make.
    index: usize,
    /// Records in the open file.
    records: u64,
    part_rows: u64,
    /// The latest facts line of each phase, in the order phases were first seen.
    facts: Vec<(String, Vec<u8>)>,
    summaries: Vec<Vec<u8>>,
}

/// Rows in flight to the Parquet writer; a full channel makes the collector wait.
const RECORDS_CHANNEL_ROWS: usize = 8192;

/// The Parquet writer's thread and the bounded channel that feeds it.
struct RecordsSink {
    sender: Option<SyncSender<RecordRow>>,
    thread: Option<JoinHandle<Result<u64, String>>>,
}

impl RecordsSink {
    fn start(dir: &Path, part_rows: u64) -> Result<Self, String> {
        let segments_dir = dir.to_path_buf();
        // The writer's thread drops a closed part's segment; it takes no journal lock.
        let on_closed = Box::new(move |index: usize| {
            let segment = segments_dir.join(segment_file_name(index));
            if let Err(e) = fs::remove_file(&segment)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                eprintln!("warning: cannot remove {}: {e}", segment.display());
            }
        });
        let mut writer = PartsWriter::open(dir, Some(part_rows), on_closed)?;
        // Never more rows in flight than a part: the records no closed part holds stay
        // under two parts' worth (plus one), which bounds the journal.
        let capacity = RECORDS_CHANNEL_ROWS.min(part_rows as usize);
        let (sender, receiver) = mpsc::sync_channel::<RecordRow>(capacity.max(1));
        let thread = std::thread::Builder::new()
            .name("requests-parquet".to_string())
            .spawn(move || {
                for row in receiver {
                    writer.push(row)?;
                }
                writer.finish()
            })
            .map_err(|e| format!("cannot start the records writer: {e}"))?;
        Ok(RecordsSink {
            sender: Some(sender),
            thread: Some(thread),
        })
    }

    /// Close the channel and wait for the last part; the rows written.
    fn close(&mut self) -> Result<u64, String> {
        drop(self.sender.take());
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .map_err(|_| "the records writer panicked".to_string())?,
            None => Ok(0),
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

impl Segments {
    /// Start a new open file holding the carried lines, in place of `journal.jsonl`.
    fn start_file(&self) -> std::io::Result<BufWriter<File>> {
        let next = self.dir.join(format!("{JOURNAL_FILE}.next"));
        let mut writer = BufWriter::new(File::create(&next)?);
        for (_, line) in &self.facts {
            writer.write_all(line)?;
        }
        for line in &self.summaries {
            writer.write_all(line)?;
        }
        writer.flush()?;
        Ok(writer)
    }

    /// The open file's records make a part now: keep them as a segment until it closes.
    fn rotate(&mut self) -> std::io::Result<()> {
        self.writer.flush()?;
        let writer = self.start_file()?;
        let open = self.dir.join(JOURNAL_FILE);
        fs::rename(&open, self.dir.join(segment_file_name(self.index)))?;
        fs::rename(self.dir.join(format!("{JOURNAL_FILE}.next")), &open)?;
        self.writer = writer;
        self.index += 1;
        self.records = 0;
        Ok(())
    }

    /// The open file's records are all in closed parts: start it again from the carried lines.
    fn restart(&mut self) -> std::io::Result<()> {
        self.writer.flush()?;
        let writer = self.start_file()?;
        let open = self.dir.join(JOURNAL_FILE);
        fs::rename(self.dir.join(format!("{JOURNAL_FILE}.next")), &open)?;
        self.writer = writer;
        self.index += 1;
        self.records = 0;
        Ok(())
    }
}

impl Journal {
    /// Open the journal and the records' parts; `shard` fills their `shard` column, and a
    /// part closes every `part_rows` records.
    pub fn create(dir: &Path, shard: Option<u32>, part_rows: u64) -> Result<Self, String> {
        let path = dir.join(JOURNAL_FILE);
        let file =
            File::create(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let records = RecordsSink::start(dir, part_rows)?;
        let segments = Segments {
            dir: dir.to_path_buf(),
            writer: BufWriter::new(file),
            index: 0,
            records: 0,
            part_rows: part_rows.max(1),
            facts: Vec::new(),
            summaries: Vec::new(),
        };
        Ok(Journal {
            shared: Arc::new(Shared {
                segments: Mutex::new(segments),
                records: Mutex::new(Some(records)),
            }),
            shard,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Segments> {
        self.shared.segments()
    }

    pub fn append(
        &self,
        phase: &str,
        window: Window,
        record: &RequestRecord,
    ) -> std::io::Result<()> {
        let mut segments = self.lock();
        serde_json::to_writer(
            &mut segments.writer,
            &JournalLine {
                phase,
                window,
                record,
            },
        )?;
        segments.writer.write_all(b"\n")?;
        segments.records += 1;
        // Rotate before the part can close, so its segment is a file of its own by then.
        let rotated = if segments.records >= segments.part_rows {
            segments.rotate()
        } else {
            Ok(())
        };
        // Still under the journal's lock, so the parts hold the records in journal order.
        self.send_row(phase, window, record);
        rotated
    }

    /// Hand a record to the Parquet writer; if that writer failed, say why once and stop.
    fn send_row(&self, phase: &str, window: Window, record: &RequestRecord) {
        let mut sink = self.shared.sink();
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
            eprintln!("warning: {e}; the journal still holds every record not in a part");
        }
    }

    /// Close the last part; the journal then keeps only its carried lines, and later
    /// records go to the journal only. Returns the rows written, or why they could not be.
    pub fn finish_records(&self) -> Result<u64, String> {
        self.shared.finish()
    }

    /// A phase's facts as known so far, `{"phase_facts": {...}}`: `recover` builds an
    /// unfinished phase from the last such line and its records.
    pub fn append_facts(
        &self,
        facts: &crate::report::PhaseFacts,
        stage: FactsStage,
    ) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(&FactsLine {
            phase_facts: facts,
            stage,
        })?;
        line.push(b'\n');
        let mut segments = self.lock();
        segments.writer.write_all(&line)?;
        match segments
            .facts
            .iter_mut()
            .find(|(p, _)| *p == facts.header.phase)
        {
            Some((_, latest)) => *latest = line,
            None => segments.facts.push((facts.header.phase.clone(), line)),
        }
        segments.writer.flush()
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
        let mut line = serde_json::to_vec(&SummaryLine {
            summary: Inner {
                phase,
                window,
                summary,
            },
        })?;
        line.push(b'\n');
        let mut segments = self.lock();
        segments.writer.write_all(&line)?;
        segments.summaries.push(line);
        Ok(())
    }

    pub fn flush(&self) -> std::io::Result<()> {
        self.lock().writer.flush()
    }
}
