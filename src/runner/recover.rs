//! `servebench recover`: a run directory whose process was killed (SIGKILL, power loss) made
//! whole again. Finished phases come from the last report.json written after a phase; the
//! interrupted phase from its journal lines, marked partial; `requests.parquet` is rebuilt
//! from every journal line.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::Deserialize;

use crate::client::RequestRecord;
use crate::report::formats::records::{RecordRow, RecordsWriter};
use crate::report::{
    Figures, IMPORT_PROMPT_TOLERANCE, PhaseFacts, Report, WarmupResult, phase_result, read_report,
};

use super::output::{self, JOURNAL_FILE, REPORT_FILE, REQUESTS_FILE, Window};

/// What recovery rebuilt, and what it skipped on the way.
#[derive(Debug)]
pub struct Recovered {
    pub report: Report,
    /// The run never wrote its final report; false when only the Parquet file was rebuilt.
    pub killed: bool,
    /// Each phase rebuilt from the journal, with its measured request count.
    pub rebuilt_phases: Vec<(String, usize)>,
    /// Rows written to `requests.parquet`.
    pub rows: u64,
    /// Journal lines skipped, and why.
    pub notes: Vec<String>,
}

/// A journal line that is a request record.
#[derive(Deserialize)]
struct JournalEntry {
    phase: String,
    window: Window,
    #[serde(flatten)]
    record: RequestRecord,
}

/// An interrupted phase's records, as the journal holds them.
#[derive(Default)]
struct Interrupted {
    name: String,
    measured: Vec<RequestRecord>,
    warmup: WarmupResult,
}

/// Rebuild `dir`'s `requests.parquet` and, when the run was killed (its report never got a
/// `finished_at`), its report files, marked partial.
pub fn recover(dir: &Path) -> Result<Recovered, String> {
    let mut report = read_report(&dir.join(REPORT_FILE)).map_err(|e| e.to_string())?;
    let journal_path = dir.join(JOURNAL_FILE);
    let journal = File::open(&journal_path)
        .map_err(|e| format!("cannot open {}: {e}", journal_path.display()))?;
    let shard = report.shard.as_ref().map(|s| s.index);
    let finished: HashSet<String> = report.phases.iter().map(|p| p.phase.clone()).collect();
    let mut writer = RecordsWriter::create(&dir.join(REQUESTS_FILE))?;
    let mut interrupted: Vec<Interrupted> = Vec::new();
    let mut notes = Vec::new();
    for entry in JournalLines::new(BufReader::new(journal), &mut notes) {
        let entry = entry.map_err(|e| format!("{}: {e}", journal_path.display()))?;
        if !finished.contains(&entry.phase) {
            let index = match interrupted.iter().position(|p| p.name == entry.phase) {
                Some(index) => index,
                None => {
                    interrupted.push(Interrupted {
                        name: entry.phase.clone(),
                        ..Interrupted::default()
                    });
                    interrupted.len() - 1
                }
            };
            let phase = &mut interrupted[index];
            match entry.window {
                Window::Measured => phase.measured.push(entry.record.clone()),
                Window::Warmup => {
                    phase.warmup.requests += 1;
                    phase.warmup.errors += u64::from(!entry.record.is_ok());
                }
            }
        }
        writer.push(RecordRow {
            phase: entry.phase,
            window: entry.window,
            shard,
            record: entry.record,
        })?;
    }
    let rows = writer.finish()?;
    let rebuilt_phases = interrupted
        .iter()
        .filter(|_| report.finished_at.is_none())
        .map(|p| (p.name.clone(), p.measured.len()))
        .collect();
    // A run that ended (finished, failed or interrupted) wrote its own final report: only
    // the Parquet file is rebuilt.
    let killed = report.finished_at.is_none();
    if killed {
        add_interrupted(&mut report, interrupted);
        report.partial = true;
        report.stop_reason = Some(format!(
            "killed; recovered from {JOURNAL_FILE} by `servebench recover`"
        ));
        output::write_report(dir, &report)?;
    }
    Ok(Recovered {
        report,
        killed,
        rebuilt_phases,
        rows,
        notes,
    })
}

/// Each interrupted phase as a partial phase result. The journal does not hold when a
/// phase started: it is placed at the previous phase's end and the run's start time.
fn add_interrupted(report: &mut Report, phases: Vec<Interrupted>) {
    for phase in phases {
        let mut records = phase.measured;
        records.sort_by_key(|r| r.request_index);
        let facts = PhaseFacts {
            phase: phase.name,
            started_at: report.started_at.clone(),
            start_offset_seconds: report.phases.last().map_or(0.0, |p| p.end_offset_seconds),
            partial: true,
            warmup: phase.warmup,
            ..PhaseFacts::default()
        };
        let figures = Figures {
            method: report.plan.percentile_method,
            slo: report.plan.slo.as_ref(),
            prompt_tolerance: IMPORT_PROMPT_TOLERANCE,
            connection_reuse: true,
        };
        let result = phase_result(facts, records, figures);
        report.phases.push(result);
    }
}

/// The journal's record lines, in order. Lines of another shape (periodic summaries) are
/// skipped silently; a torn last line or an unreadable line is skipped with a note.
struct JournalLines<'n, R> {
    reader: R,
    line_number: usize,
    notes: &'n mut Vec<String>,
}

impl<'n, R: BufRead> JournalLines<'n, R> {
    fn new(reader: R, notes: &'n mut Vec<String>) -> Self {
        JournalLines {
            reader,
            line_number: 0,
            notes,
        }
    }
}

impl<R: BufRead> Iterator for JournalLines<'_, R> {
    type Item = Result<JournalEntry, String>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut line = Vec::new();
        loop {
            line.clear();
            match self.reader.read_until(b'\n', &mut line) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(format!("cannot read: {e}"))),
            }
            self.line_number += 1;
            let complete = line.ends_with(b"\n");
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let value: serde_json::Value = match serde_json::from_slice(&line) {
                Ok(value) => value,
                Err(_) if !complete => {
                    self.notes.push(format!(
                        "line {}: torn by the kill ({} bytes without a newline), skipped",
                        self.line_number,
                        line.len()
                    ));
                    continue;
                }
                Err(e) => {
                    self.notes.push(format!(
                        "line {}: not JSON ({e}), skipped",
                        self.line_number
                    ));
                    continue;
                }
            };
            if !is_record(&value) {
                continue;
            }
            match serde_json::from_value::<JournalEntry>(value) {
                Ok(entry) => return Some(Ok(entry)),
                Err(e) => self.notes.push(format!(
                    "line {}: not a request record ({e}), skipped",
                    self.line_number
                )),
            }
        }
    }
}

/// Request records carry their window, id and end-to-end time; other lines do not.
fn is_record(value: &serde_json::Value) -> bool {
    ["phase", "window", "request_id", "e2e_ms"]
        .iter()
        .all(|key| value.get(key).is_some())
}
