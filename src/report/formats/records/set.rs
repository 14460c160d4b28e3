//! A run's records as one addressable set: `requests/`, closed Parquet parts listed with
//! their row counts and hashes in `requests/_manifest.json`, or an older run's single
//! `requests.parquet`. Readers go through [`RecordsSet`] and see one stream of rows.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{REQUESTS_FILE, RecordRow, read_records};

/// The folder of closed parts in a run directory.
pub const PARTS_DIR: &str = "requests";
/// The list of closed parts inside [`PARTS_DIR`]; rewritten atomically as each part closes.
pub const MANIFEST_FILE: &str = "_manifest.json";

/// The file name of part `index` (`part-000007.parquet`).
pub fn part_file_name(index: usize) -> String {
    format!("part-{index:06}.parquet")
}

/// `requests/_manifest.json`: every closed part, in record order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub parts: Vec<PartEntry>,
}

/// One closed part: its file (relative to the manifest), rows and sha256.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartEntry {
    pub file: String,
    pub rows: u64,
    pub sha256: String,
}

impl Manifest {
    /// The manifest in `parts_dir`, or an empty one when there is none yet.
    pub fn read(parts_dir: &Path) -> Result<Manifest, String> {
        let path = parts_dir.join(MANIFEST_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| format!("{}: not a records manifest: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Manifest::default()),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// Replace the manifest in `parts_dir` atomically: a reader sees the old list or the new.
    pub fn write(&self, parts_dir: &Path) -> Result<(), String> {
        let path = parts_dir.join(MANIFEST_FILE);
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|e| format!("cannot serialize {}: {e}", path.display()))?;
        text.push('\n');
        crate::report::write_atomic(&path, &text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    pub fn rows(&self) -> u64 {
        self.parts.iter().map(|p| p.rows).sum()
    }
}

/// Where a run directory's records are.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordsSet {
    /// `requests/_manifest.json` and the parts it lists.
    Parts {
        manifest: PathBuf,
        parts: Vec<PathBuf>,
    },
    /// An older run's one `requests.parquet`.
    Single(PathBuf),
}

impl RecordsSet {
    /// The records of the run directory `dir`, if it has any: its parts when it has a
    /// manifest, else its `requests.parquet`.
    pub fn in_dir(dir: &Path) -> Result<Option<RecordsSet>, String> {
        let parts_dir = dir.join(PARTS_DIR);
        let manifest = parts_dir.join(MANIFEST_FILE);
        if manifest.is_file() {
            let parts = Manifest::read(&parts_dir)?
                .parts
                .iter()
                .map(|p| parts_dir.join(&p.file))
                .collect();
            return Ok(Some(RecordsSet::Parts { manifest, parts }));
        }
        let single = dir.join(REQUESTS_FILE);
        Ok(single.is_file().then_some(RecordsSet::Single(single)))
    }

    /// The records beside a report.json.
    pub fn beside(report_path: &Path) -> Result<Option<RecordsSet>, String> {
        match report_path.parent() {
            Some(dir) => Self::in_dir(if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            }),
            None => Ok(None),
        }
    }

    /// The one file that names the set: the manifest (which holds each part's hash), or the
    /// single file. The results history stores this path and its hash.
    pub fn address(&self) -> &Path {
        match self {
            RecordsSet::Parts { manifest, .. } => manifest,
            RecordsSet::Single(path) => path,
        }
    }

    /// The Parquet files, in record order.
    pub fn files(&self) -> Vec<PathBuf> {
        match self {
            RecordsSet::Parts { parts, .. } => parts.clone(),
            RecordsSet::Single(path) => vec![path.clone()],
        }
    }

    /// Every row of every file, in record order.
    pub fn rows(&self) -> impl Iterator<Item = Result<RecordRow, String>> + use<> {
        read_files(self.files())
    }
}

/// Every row of `files`, one after another; a file that cannot be opened ends the stream
/// with its error.
pub fn read_files(files: Vec<PathBuf>) -> impl Iterator<Item = Result<RecordRow, String>> {
    files.into_iter().flat_map(|file| {
        let rows: Box<dyn Iterator<Item = Result<RecordRow, String>>> = match read_records(&file) {
            Ok(rows) => Box::new(rows),
            Err(e) => Box::new(std::iter::once(Err(e))),
        };
        rows
    })
}

/// sha256 of a file, hex.
pub fn sha256_file(path: &Path) -> Result<String, String> {
    let mut file =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut block = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut block)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&block[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::RequestRecord;
    use crate::report::formats::records::{PartsWriter, Window, write_records};

    fn row(index: u64) -> RecordRow {
        RecordRow {
            phase: "p".to_string(),
            window: Window::Measured,
            shard: None,
            record: RequestRecord {
                request_index: index,
                e2e_ms: index as f64,
                ..RequestRecord::default()
            },
        }
    }

    fn indices(set: &RecordsSet) -> Vec<u64> {
        set.rows()
            .map(|r| r.unwrap().record.request_index)
            .collect()
    }

    #[test]
    fn parts_close_every_n_rows_and_read_back_as_one_set() {
        let dir = tempfile::tempdir().unwrap();
        let closed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = closed.clone();
        let on_closed = Box::new(move |index| seen.lock().unwrap().push(index));
        let mut writer = PartsWriter::open(dir.path(), Some(4), on_closed).unwrap();
        for index in 0..10 {
            writer.push(row(index)).unwrap();
        }
        // Two parts are closed and readable before the writer finishes.
        let set = RecordsSet::in_dir(dir.path()).unwrap().unwrap();
        assert_eq!(indices(&set), (0..8).collect::<Vec<_>>());
        assert_eq!(writer.finish().unwrap(), 10);
        assert_eq!(*closed.lock().unwrap(), [0, 1, 2]);
        let set = RecordsSet::in_dir(dir.path()).unwrap().unwrap();
        assert_eq!(indices(&set), (0..10).collect::<Vec<_>>());
        let manifest = Manifest::read(&dir.path().join(PARTS_DIR)).unwrap();
        let rows: Vec<u64> = manifest.parts.iter().map(|p| p.rows).collect();
        assert_eq!(rows, [4, 4, 2]);
        for (part, file) in manifest.parts.iter().zip(set.files()) {
            assert_eq!(sha256_file(&file).unwrap(), part.sha256);
        }
        assert!(set.address().ends_with("requests/_manifest.json"));
    }

    #[test]
    fn a_writer_continues_after_the_parts_already_closed() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = PartsWriter::open(dir.path(), Some(3), Box::new(|_| {})).unwrap();
        for index in 0..3 {
            first.push(row(index)).unwrap();
        }
        drop(first); // as a kill leaves it: one part closed
        let mut again = PartsWriter::open(dir.path(), None, Box::new(|_| {})).unwrap();
        assert_eq!(again.closed_parts(), 1);
        again.push(row(3)).unwrap();
        again.close_part().unwrap();
        again.close_part().unwrap(); // nothing waiting: no empty part
        assert_eq!(again.finish().unwrap(), 4);
        let set = RecordsSet::in_dir(dir.path()).unwrap().unwrap();
        assert_eq!(indices(&set), [0, 1, 2, 3]);
        assert_eq!(set.files().len(), 2);
    }

    #[test]
    fn an_older_run_directory_reads_its_one_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(RecordsSet::in_dir(dir.path()).unwrap(), None);
        let single = dir.path().join(REQUESTS_FILE);
        write_records(&single, (0..3).map(row)).unwrap();
        let set = RecordsSet::in_dir(dir.path()).unwrap().unwrap();
        assert_eq!(set, RecordsSet::Single(single.clone()));
        assert_eq!(set.address(), single);
        assert_eq!(indices(&set), [0, 1, 2]);
        let beside = RecordsSet::beside(&dir.path().join("report.json")).unwrap();
        assert_eq!(beside, Some(set));
    }
}
