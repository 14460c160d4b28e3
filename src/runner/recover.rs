//! `servebench recover`: a run directory whose process was killed (SIGKILL, power loss) made
//! whole again. Finished phases come from the last report.json written after a phase; the
//! interrupted phase from its records (in closed parts and the journal) and its latest
//! journaled facts, built by the same builder as a live phase. The journal's records that no
//! closed part holds become parts of their own, one per journal file, as the live run would
//! have closed them; an older run's single journal becomes the run's parts.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::client::RequestRecord;
use crate::report::formats::records::{Manifest, PARTS_DIR, PartsWriter, RecordRow, RecordsSet};
use crate::report::{
    Figures, IMPORT_PROMPT_TOLERANCE, PhaseFacts, PhaseHeader, Report, WarmupResult, phase_result,
    read_report, relate_phases,
};

use super::collect::{CollectSettings, PhaseCollector};
use super::output::{self, FactsStage, JOURNAL_FILE, REPORT_FILE, Window};

/// What recovery rebuilt, and what it skipped on the way.
#[derive(Debug)]
pub struct Recovered {
    pub report: Report,
    /// The run never wrote its final report; false when only the records were rebuilt.
    pub killed: bool,
    /// Each phase rebuilt from its records, with its measured request count.
    pub rebuilt_phases: Vec<(String, usize)>,
    /// Rows in all the run's parts.
    pub rows: u64,
    /// Rows the journal held that no closed part did (now parts of their own).
    pub journal_rows: u64,
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

/// An interrupted phase's records and its latest facts. Its measured records go to the same
/// bounded collector a live window uses: a long phase keeps a sample and exact figures.
struct Interrupted {
    name: String,
    measured: PhaseCollector,
    warmup: WarmupResult,
    facts: Option<FactsEntry>,
}

/// What every rebuilt phase's collector is made from.
struct Rebuild<'a> {
    dir: &'a Path,
    report: &'a Report,
    keep_records: usize,
}

impl Rebuild<'_> {
    fn collector(&self, phase: &str) -> PhaseCollector {
        PhaseCollector::new(CollectSettings {
            keep: self.keep_records,
            seed: super::phase_seed(self.report.plan.seed, phase),
            dir: self.dir.to_path_buf(),
            label: format!("recover-{}", std::process::id()),
            slo: self.report.plan.slo.clone(),
        })
    }
}

/// One journal file and the part its records make.
struct JournalFile {
    path: PathBuf,
    part: usize,
}

/// The journal files of `dir`, in record order: the segments kept until their parts close
/// (`journal-000007.jsonl`), then the open `journal.jsonl`, whose part follows both the last
/// closed part and the last segment.
fn journal_files(dir: &Path, closed_parts: usize) -> Result<Vec<JournalFile>, String> {
    let mut files = Vec::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let name = entry.file_name();
        let part = name
            .to_str()
            .and_then(|n| n.strip_prefix("journal-")?.strip_suffix(".jsonl"))
            .and_then(|n| n.parse::<usize>().ok());
        if let Some(part) = part {
            files.push(JournalFile {
                path: entry.path(),
                part,
            });
        }
    }
    files.sort_by_key(|f| f.part);
    let open = dir.join(JOURNAL_FILE);
    if open.is_file() {
        let part = files.last().map_or(0, |f| f.part + 1).max(closed_parts);
        files.push(JournalFile { path: open, part });
    }
    Ok(files)
}

/// Rebuild `dir`'s records from its journal and, when the run was killed (its report never
/// got a `finished_at`), its report files, marked partial; a rebuilt phase keeps at most
/// `keep_records` records (a seeded sample) and its figures cover every one.
pub fn recover(dir: &Path, keep_records: usize) -> Result<Recovered, String> {
    let mut report = read_report(&dir.join(REPORT_FILE)).map_err(|e| e.to_string())?;
    let killed = report.span.finished_at.is_none();
    let shard = report.shard.as_ref().map(|s| s.index);
    let finished: HashSet<String> = report
        .phases
        .iter()
        .map(|p| p.header.phase.clone())
        .collect();
    let closed_parts = Manifest::read(&dir.join(PARTS_DIR))?.parts.len();
    let files = journal_files(dir, closed_parts)?;
    if files.is_empty() && closed_parts == 0 {
        return Err(format!(
            "{}: no {JOURNAL_FILE} and no closed parts",
            dir.display()
        ));
    }
    let mut interrupted: Vec<Interrupted> = Vec::new();
    let rebuild = Rebuild {
        dir,
        report: &report,
        keep_records,
    };
    // A killed run's unfinished phases take their records from the closed parts too.
    if killed && let Some(set) = RecordsSet::in_dir(dir)? {
        for row in set.rows() {
            let row = row?;
            if !finished.contains(&row.phase) {
                add_record(
                    &mut interrupted,
                    &rebuild,
                    &row.phase,
                    row.window,
                    row.record,
                )?;
            }
        }
    }
    let replay = Replay {
        finished: &finished,
        rebuild: &rebuild,
        closed_parts,
        shard,
    };
    let mut writer = PartsWriter::open(dir, None, Box::new(|_| {}))?;
    let (journal_rows, notes) = replay.files(&files, &mut interrupted, &mut writer)?;
    let rows = writer.finish()?;
    drop_closed_records(&files)?;
    let rebuilt_phases = interrupted
        .iter()
        .filter(|_| killed)
        .map(|p| (p.name.clone(), p.measured.requests() as usize))
        .collect();
    // A run that ended (finished, failed or interrupted) wrote its own final report: only
    // its records are rebuilt.
    if killed {
        add_interrupted(&mut report, interrupted)?;
        relate_phases(&mut report);
        report.span.partial = true;
        report.span.stop_reason = Some(format!(
            "killed; recovered from {JOURNAL_FILE} by `servebench recover`"
        ));
        output::write_report(dir, &report)?;
    }
    Ok(Recovered {
        report,
        killed,
        rebuilt_phases,
        rows,
        journal_rows,
        notes,
    })
}

/// What replaying the journal needs: the phases the report already holds, where the rest
/// are rebuilt, and which journal files still hold records no closed part has.
struct Replay<'a> {
    finished: &'a HashSet<String>,
    rebuild: &'a Rebuild<'a>,
    closed_parts: usize,
    shard: Option<u32>,
}

impl Replay<'_> {
    /// Every journal file in order: unfinished phases' facts and records into `interrupted`,
    /// records no closed part holds into `writer`. The records written, and the notes on
    /// lines that could not be read.
    fn files(
        &self,
        files: &[JournalFile],
        interrupted: &mut Vec<Interrupted>,
        writer: &mut PartsWriter,
    ) -> Result<(u64, Vec<String>), String> {
        let (finished, rebuild, shard) = (self.finished, self.rebuild, self.shard);
        let mut notes = Vec::new();
        let mut journal_rows = 0;
        for file in files {
            // A segment whose part closed before the kill is read for its facts only.
            let tail = file.part >= self.closed_parts;
            let name = file.path.display();
            let reader = File::open(&file.path).map_err(|e| format!("cannot open {name}: {e}"))?;
            let mut file_notes = Vec::new();
            for item in JournalLines::new(BufReader::new(reader), &mut file_notes) {
                let entry = match item.map_err(|e| format!("{name}: {e}"))? {
                    JournalItem::Facts(facts) => {
                        let phase = facts.phase_facts.header.phase.clone();
                        if !finished.contains(&phase) {
                            interrupted_phase(interrupted, rebuild, &phase).facts = Some(*facts);
                        }
                        continue;
                    }
                    JournalItem::Record(_) if !tail => continue,
                    JournalItem::Record(entry) => *entry,
                };
                if !finished.contains(&entry.phase) {
                    let (phase, window) = (&entry.phase, entry.window);
                    add_record(interrupted, rebuild, phase, window, entry.record.clone())?;
                }
                writer.push(RecordRow {
                    phase: entry.phase,
                    window: entry.window,
                    shard,
                    record: entry.record,
                })?;
                journal_rows += 1;
            }
            notes.extend(file_notes.into_iter().map(|n| format!("{name}: {n}")));
            if tail {
                writer.close_part()?;
            }
        }
        Ok((journal_rows, notes))
    }
}

/// Every journal record is now in a closed part: the segments go, and the open file keeps
/// only its other lines (facts, summaries), so recovering again adds nothing twice.
fn drop_closed_records(files: &[JournalFile]) -> Result<(), String> {
    for file in files {
        let name = file.path.display();
        if file.path.file_name().and_then(|n| n.to_str()) != Some(JOURNAL_FILE) {
            std::fs::remove_file(&file.path).map_err(|e| format!("cannot remove {name}: {e}"))?;
            continue;
        }
        let text = std::fs::read(&file.path).map_err(|e| format!("cannot read {name}: {e}"))?;
        let mut kept = String::new();
        for line in text.split(|b| *b == b'\n') {
            let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
                continue;
            };
            if !is_record(&value) {
                kept.push_str(&value.to_string());
                kept.push('\n');
            }
        }
        crate::report::write_atomic(&file.path, &kept)
            .map_err(|e| format!("cannot rewrite {name}: {e}"))?;
    }
    Ok(())
}

/// Count a record toward its unfinished phase: measured ones collected, warmup ones tallied.
fn add_record(
    phases: &mut Vec<Interrupted>,
    rebuild: &Rebuild<'_>,
    phase: &str,
    window: Window,
    record: RequestRecord,
) -> Result<(), String> {
    let phase = interrupted_phase(phases, rebuild, phase);
    match window {
        Window::Measured => phase
            .measured
            .add(record)
            .map_err(|e| format!("phase `{}`: cannot collect its records: {e}", phase.name))?,
        Window::Warmup => {
            phase.warmup.requests += 1;
            phase.warmup.errors += u64::from(record.error.is_some());
        }
    }
    Ok(())
}

/// The interrupted phase named `name`, added in journal order when first seen.
fn interrupted_phase<'a>(
    phases: &'a mut Vec<Interrupted>,
    rebuild: &Rebuild<'_>,
    name: &str,
) -> &'a mut Interrupted {
    let index = match phases.iter().position(|p| p.name == name) {
        Some(index) => index,
        None => {
            phases.push(Interrupted {
                name: name.to_string(),
                measured: rebuild.collector(name),
                warmup: WarmupResult::default(),
                facts: None,
            });
            phases.len() - 1
        }
    };
    &mut phases[index]
}

/// Each interrupted phase as a phase result, built by the one builder from its latest
/// journaled facts; partial unless its measured window ended. A journal without facts (an
/// older run's) places a phase at the previous phase's end and the run's start time.
fn add_interrupted(report: &mut Report, phases: Vec<Interrupted>) -> Result<(), String> {
    for phase in phases {
        let facts = match phase.facts {
            Some(FactsEntry { phase_facts, stage }) => PhaseFacts {
                partial: phase_facts.partial || stage == FactsStage::Started,
                ..phase_facts
            },
            None => PhaseFacts {
                header: PhaseHeader {
                    phase: phase.name,
                    started_at: report.span.started_at.clone(),
                    start_offset_seconds: report
                        .phases
                        .last()
                        .map_or(0.0, |p| p.end_offset_seconds),
                    ..PhaseHeader::default()
                },
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
        let name = facts.header.phase.clone();
        let measured = phase
            .measured
            .finish(report.plan.percentile_method, facts.connection_reuse)
            .map_err(|e| format!("phase `{name}`: cannot rebuild its figures: {e}"))?;
        let result = phase_result(facts, measured, figures);
        report.phases.push(result);
    }
    Ok(())
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
