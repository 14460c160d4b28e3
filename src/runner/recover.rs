//! `servebench recover`: a run directory whose process was killed (SIGKILL, power loss) made
//! whole again. Finished phases come from the last report.json written after a phase; the
//! interrupted phase from its journal lines (its latest facts and its records), built by the
//! same builder as a live phase; `requests.parquet` is rebuilt from every journal line.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::Deserialize;

use crate::client::RequestRecord;
use crate::report::formats::records::{RecordRow, RecordsWriter};
use crate::report::{
    Figures, IMPORT_PROMPT_TOLERANCE, Measured, PhaseFacts, Report, WarmupResult, phase_result,
    read_report, relate_phases,
};

use super::output::{self, FactsStage, JOURNAL_FILE, REPORT_FILE, REQUESTS_FILE, Window};

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

/// A journal line holding a phase's facts as known at one stage.
#[derive(Deserialize)]
struct FactsEntry {
    phase_facts: PhaseFacts,
    stage: FactsStage,
}

/// A journal line recovery reads.
enum JournalItem {
    Record(Box<JournalEntry>),
    Facts(Box<FactsEntry>),
}

/// An interrupted phase's records and its latest facts, as the journal holds them.
#[derive(Default)]
struct Interrupted {
    name: String,
    measured: Vec<RequestRecord>,
    warmup: WarmupResult,
    facts: Option<FactsEntry>,
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
    for item in JournalLines::new(BufReader::new(journal), &mut notes) {
        let item = item.map_err(|e| format!("{}: {e}", journal_path.display()))?;
        let entry = match item {
            JournalItem::Facts(facts) => {
                let name = facts.phase_facts.phase.clone();
                if !finished.contains(&name) {
                    interrupted_phase(&mut interrupted, &name).facts = Some(*facts);
                }
                continue;
            }
            JournalItem::Record(entry) => *entry,
        };
        if !finished.contains(&entry.phase) {
            let phase = interrupted_phase(&mut interrupted, &entry.phase);
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
        relate_phases(&mut report);
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

/// The interrupted phase named `name`, added in journal order when first seen.
fn interrupted_phase<'a>(phases: &'a mut Vec<Interrupted>, name: &str) -> &'a mut Interrupted {
    let index = match phases.iter().position(|p| p.name == name) {
        Some(index) => index,
        None => {
            phases.push(Interrupted {
                name: name.to_string(),
                ..Interrupted::default()
            });
            phases.len() - 1
        }
    };
    &mut phases[index]
}

/// Each interrupted phase as a phase result, built by the one builder from its latest
/// journaled facts; partial unless its measured window ended. A journal without facts (an
/// older run's) places a phase at the previous phase's end and the run's start time.
fn add_interrupted(report: &mut Report, phases: Vec<Interrupted>) {
    for phase in phases {
        let mut records = phase.measured;
        records.sort_by_key(|r| r.request_index);
        let facts = match phase.facts {
            Some(FactsEntry { phase_facts, stage }) => PhaseFacts {
                partial: phase_facts.partial || stage == FactsStage::Started,
                ..phase_facts
            },
            None => PhaseFacts {
                phase: phase.name,
                started_at: report.started_at.clone(),
                start_offset_seconds: report.phases.last().map_or(0.0, |p| p.end_offset_seconds),
                partial: true,
                warmup: phase.warmup,
                prompt_tolerance: IMPORT_PROMPT_TOLERANCE,
                connection_reuse: true,
                ..PhaseFacts::default()
            },
        };
        let figures = Figures {
            method: report.plan.percentile_method,
            slo: report.plan.slo.as_ref(),
            previous: report.phases.last(),
        };
        let result = phase_result(facts, Measured::All(records), figures);
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
    type Item = Result<JournalItem, String>;

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
            if value.get("phase_facts").is_some() {
                match serde_json::from_value::<FactsEntry>(value) {
                    Ok(facts) => return Some(Ok(JournalItem::Facts(Box::new(facts)))),
                    Err(e) => self.notes.push(format!(
                        "line {}: not a phase's facts ({e}), skipped",
                        self.line_number
                    )),
                }
                continue;
            }
            if !is_record(&value) {
                continue;
            }
            match serde_json::from_value::<JournalEntry>(value) {
                Ok(entry) => return Some(Ok(JournalItem::Record(Box::new(entry)))),
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
