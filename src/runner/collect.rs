//! A window's records in bounded memory. Up to `keep` records are held as they are; past
//! that the collector tallies every record ([`metrics::PhaseTally`]), keeps a seeded uniform
//! sample (reservoir) of `keep` records, and appends each distribution's values to column
//! files in a hidden directory of the run directory (one per figure, and one per figure
//! sessions give by turn, its values tagged with their turn), read back at the end for exact
//! percentiles and removed.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::client::RequestRecord;
use crate::figure::Figure;
use crate::metrics::{Column, PhaseTally, Rescan, turn_figures};
use crate::plan::{PercentileMethod, Slo};
use crate::report::Measured;

/// Records a phase keeps in full unless `run --keep-records` says otherwise.
pub const DEFAULT_KEEP_RECORDS: usize = 5_000;

/// What a window's collector needs to know.
#[derive(Debug, Clone)]
pub struct CollectSettings {
    /// Records kept; a window with more keeps a sample of this many.
    pub keep: usize,
    pub seed: u64,
    /// Where the hidden column directory goes (the run directory).
    pub dir: PathBuf,
    /// Names the column directory.
    pub label: String,
    pub slo: Option<Slo>,
}

/// A window's records as they arrive.
pub struct PhaseCollector {
    settings: CollectSettings,
    held: Vec<RequestRecord>,
    sampled: Option<Box<Sampled>>,
    errors: u64,
    peak_in_flight: u64,
    /// A column write failed: the columns no longer hold every value.
    broken: bool,
}

/// The bounded state, once the window outgrew `keep`.
struct Sampled {
    tally: PhaseTally,
    columns: ColumnFiles,
    rng: ChaCha8Rng,
}

impl PhaseCollector {
    pub fn new(settings: CollectSettings) -> Self {
        PhaseCollector {
            settings,
            held: Vec::new(),
            sampled: None,
            errors: 0,
            peak_in_flight: 0,
            broken: false,
        }
    }

    /// Records seen so far.
    pub fn requests(&self) -> u64 {
        match &self.sampled {
            Some(s) => s.tally.requests(),
            None => self.held.len() as u64,
        }
    }

    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// Note the requests in flight now: a sampled window judges the connection warning by
    /// the most ever seen, having no full set of records to sweep.
    pub fn note_in_flight(&mut self, in_flight: u64) {
        self.peak_in_flight = self.peak_in_flight.max(in_flight);
    }

    pub fn add(&mut self, record: RequestRecord) -> io::Result<()> {
        self.errors += u64::from(record.error.is_some());
        match self.sampled.as_deref_mut() {
            Some(s) => {
                let seen = s.tally.requests();
                if let Err(e) = s.add(&record) {
                    self.broken = true;
                    return Err(e);
                }
                offer(&mut self.held, self.settings.keep, &mut s.rng, seen, record);
                Ok(())
            }
            None => {
                self.held.push(record);
                if self.held.len() > self.settings.keep
                    && let Err(e) = self.start_sampling()
                {
                    self.broken = true;
                    return Err(e);
                }
                Ok(())
            }
        }
    }

    /// Past `keep` records: tally those held and thin them to a sample.
    fn start_sampling(&mut self) -> io::Result<()> {
        let dir = self.settings.dir.join(format!(
            ".columns-{}-{}",
            sanitize(&self.settings.label),
            std::process::id()
        ));
        let mut sampled = Sampled {
            tally: PhaseTally::new(self.settings.slo.as_ref()),
            columns: ColumnFiles::create(dir)?,
            rng: ChaCha8Rng::seed_from_u64(self.settings.seed ^ 0x5341_4d50),
        };
        let held = std::mem::take(&mut self.held);
        let keep = self.settings.keep;
        for record in held {
            let seen = sampled.tally.requests();
            sampled.add(&record)?;
            offer(&mut self.held, keep, &mut sampled.rng, seen, record);
        }
        self.sampled = Some(Box::new(sampled));
        Ok(())
    }

    /// The window's records, and its figures when it was sampled.
    pub fn finish(
        mut self,
        method: PercentileMethod,
        connection_reuse: bool,
    ) -> io::Result<Measured> {
        self.held.sort_by_key(|r| r.request_index);
        if self.broken {
            return Err(io::Error::other(
                "a column file could not be written: the phase's figures would be incomplete",
            ));
        }
        let Some(sampled) = self.sampled else {
            return Ok(Measured::All(self.held));
        };
        let Sampled { tally, columns, .. } = *sampled;
        let paths = columns.close()?;
        let peak = self.peak_in_flight as usize;
        let figures = tally.finish(
            method,
            connection_reuse,
            || peak,
            |c| Ok::<_, io::Error>(ColumnReader::new(&paths, c)),
        );
        drop(paths);
        Ok(Measured::Sampled {
            sample: self.held,
            figures: Box::new(figures?),
        })
    }
}

impl Sampled {
    fn add(&mut self, record: &RequestRecord) -> io::Result<()> {
        let mut failed = None;
        let columns = &mut self.columns;
        self.tally.add(record, &mut |c, v| {
            if let Err(e) = columns.push(c, v) {
                failed.get_or_insert(e);
            }
        });
        failed.map_or(Ok(()), Err)
    }
}

/// Algorithm R: the first `keep` records are kept; after that the record numbered `seen`
/// (from 0) replaces a kept one with probability keep / (seen + 1).
fn offer(
    held: &mut Vec<RequestRecord>,
    keep: usize,
    rng: &mut ChaCha8Rng,
    seen: u64,
    record: RequestRecord,
) {
    if held.len() < keep {
        held.push(record);
        return;
    }
    let slot = rng.random_range(0..=seen) as usize;
    if let Some(kept) = held.get_mut(slot) {
        *kept = record;
    }
}

fn sanitize(label: &str) -> String {
    label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// Append-only files of little-endian f64: one per figure, one per by-turn figure whose
/// values each follow their turn as a little-endian u64, and one per figure of a model mix
/// (opened on its first value) whose values follow their model's number the same way.
struct ColumnFiles {
    dir: ColumnDir,
    writers: Vec<BufWriter<File>>,
    turn_writers: Vec<Option<BufWriter<File>>>,
    model_writers: Vec<Option<BufWriter<File>>>,
    archetype_writers: Vec<Option<BufWriter<File>>>,
}

/// The column directory, removed when dropped (also on an error).
struct ColumnDir(PathBuf);

impl ColumnDir {
    fn path(&self, figure: Figure) -> PathBuf {
        self.0.join(format!("{}.f64", figure.name()))
    }

    fn turns_path(&self, figure: Figure) -> PathBuf {
        self.0.join(format!("turns-{}.f64", figure.name()))
    }

    fn models_path(&self, figure: Figure) -> PathBuf {
        self.0.join(format!("models-{}.f64", figure.name()))
    }

    fn archetypes_path(&self, figure: Figure) -> PathBuf {
        self.0.join(format!("archetypes-{}.f64", figure.name()))
    }
}

impl Drop for ColumnDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn writer(path: PathBuf) -> io::Result<BufWriter<File>> {
    File::create(path).map(|f| BufWriter::with_capacity(1 << 16, f))
}

impl ColumnFiles {
    fn create(dir: PathBuf) -> io::Result<Self> {
        fs::create_dir_all(&dir)?;
        let dir = ColumnDir(dir);
        let writers = Figure::all()
            .map(|c| writer(dir.path(c)))
            .collect::<io::Result<_>>()?;
        let mut turn_writers: Vec<Option<BufWriter<File>>> = Figure::all().map(|_| None).collect();
        for spec in turn_figures() {
            turn_writers[spec.figure.index()] = Some(writer(dir.turns_path(spec.figure))?);
        }
        Ok(ColumnFiles {
            dir,
            writers,
            turn_writers,
            model_writers: Figure::all().map(|_| None).collect(),
            archetype_writers: Figure::all().map(|_| None).collect(),
        })
    }

    fn push(&mut self, column: Column, value: f64) -> io::Result<()> {
        match column {
            Column::Phase(figure) => self.writers[figure.index()].write_all(&value.to_le_bytes()),
            Column::Turn(turn, figure) => {
                let Some(w) = self.turn_writers[figure.index()].as_mut() else {
                    return Err(io::Error::other(format!(
                        "`{}` is not a figure by turn",
                        figure.name()
                    )));
                };
                w.write_all(&turn.to_le_bytes())?;
                w.write_all(&value.to_le_bytes())
            }
            Column::Model(model, figure) => {
                let w = match &mut self.model_writers[figure.index()] {
                    Some(w) => w,
                    slot => slot.insert(writer(self.dir.models_path(figure))?),
                };
                w.write_all(&u64::from(model).to_le_bytes())?;
                w.write_all(&value.to_le_bytes())
            }
            Column::Archetype(archetype, figure) => {
                let w = match &mut self.archetype_writers[figure.index()] {
                    Some(w) => w,
                    slot => slot.insert(writer(self.dir.archetypes_path(figure))?),
                };
                w.write_all(&u64::from(archetype).to_le_bytes())?;
                w.write_all(&value.to_le_bytes())
            }
        }
    }

    fn close(mut self) -> io::Result<ColumnDir> {
        for w in self
            .writers
            .iter_mut()
            .chain(self.turn_writers.iter_mut().flatten())
            .chain(self.model_writers.iter_mut().flatten())
            .chain(self.archetype_writers.iter_mut().flatten())
        {
            w.flush()?;
        }
        Ok(self.dir)
    }
}

/// A column, scanned from the start on each pass: a figure's file, or one turn's (one
/// model's) values in a by-turn (by-model) file.
struct ColumnReader {
    path: PathBuf,
    turn: Option<u64>,
}

impl ColumnReader {
    fn new(dir: &ColumnDir, column: Column) -> Self {
        match column {
            Column::Phase(figure) => ColumnReader {
                path: dir.path(figure),
                turn: None,
            },
            Column::Turn(turn, figure) => ColumnReader {
                path: dir.turns_path(figure),
                turn: Some(turn),
            },
            Column::Model(model, figure) => ColumnReader {
                path: dir.models_path(figure),
                turn: Some(u64::from(model)),
            },
            Column::Archetype(archetype, figure) => ColumnReader {
                path: dir.archetypes_path(figure),
                turn: Some(u64::from(archetype)),
            },
        }
    }
}

impl Rescan for ColumnReader {
    type Error = io::Error;
    fn scan(&mut self, each: &mut dyn FnMut(f64)) -> io::Result<()> {
        let mut reader = BufReader::with_capacity(1 << 16, File::open(&self.path)?);
        let entry = if self.turn.is_some() { 16 } else { 8 };
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let mut filled = 0;
            while filled < buf.len() {
                match reader.read(&mut buf[filled..])? {
                    0 => break,
                    n => filled += n,
                }
            }
            for chunk in buf[..filled].chunks_exact(entry) {
                let (tag, value) = chunk.split_at(entry - 8);
                let word = |bytes: &[u8]| {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(bytes);
                    b
                };
                if self.turn.is_none_or(|t| u64::from_le_bytes(word(tag)) == t) {
                    each(f64::from_le_bytes(word(value)));
                }
            }
            if filled < buf.len() {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests;
