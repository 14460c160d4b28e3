//! Writing a run's records as closed parts: each part a complete Parquet file, listed in the
//! manifest (with its rows and hash) the moment its footer is written, so every closed part
//! is readable whatever happens to the process afterwards.

use std::path::{Path, PathBuf};

use super::set::{Manifest, PARTS_DIR, PartEntry, part_file_name, sha256_file};
use super::{ROW_GROUP_ROWS, RecordRow, RecordsWriter};

/// Rows per part in a live run: four full row groups. The journal holds at most about this
/// many records (its open tail), about 47 MB at the soak's 720 bytes a line.
pub const DEFAULT_PART_ROWS: u64 = 65_536;

/// Called with a part's index once it is closed and listed (the journal drops its copy).
pub type OnClosed = Box<dyn FnMut(usize) + Send>;

/// Appends rows to the open part, closing it every `part_rows` rows (or when asked).
pub struct PartsWriter {
    parts_dir: PathBuf,
    manifest: Manifest,
    part_rows: Option<u64>,
    open: Option<RecordsWriter>,
    open_rows: u64,
    on_closed: OnClosed,
}

impl PartsWriter {
    /// Continue the parts in `run_dir/requests/` after those its manifest lists (none for a
    /// new run). `part_rows: None` closes parts only when [`close_part`](Self::close_part)
    /// is called.
    pub fn open(
        run_dir: &Path,
        part_rows: Option<u64>,
        on_closed: OnClosed,
    ) -> Result<Self, String> {
        let parts_dir = run_dir.join(PARTS_DIR);
        std::fs::create_dir_all(&parts_dir)
            .map_err(|e| format!("cannot create {}: {e}", parts_dir.display()))?;
        let manifest = Manifest::read(&parts_dir)?;
        // A new run lists its (empty) set at once, so readers find it from the start.
        if !parts_dir.join(super::set::MANIFEST_FILE).exists() {
            manifest.write(&parts_dir)?;
        }
        Ok(PartsWriter {
            parts_dir,
            manifest,
            part_rows: part_rows.map(|n| n.max(1)),
            open: None,
            open_rows: 0,
            on_closed,
        })
    }

    /// Parts closed so far (the next part's index).
    pub fn closed_parts(&self) -> usize {
        self.manifest.parts.len()
    }

    pub fn push(&mut self, row: RecordRow) -> Result<(), String> {
        let writer = match &mut self.open {
            Some(writer) => writer,
            None => {
                let path = self.parts_dir.join(part_file_name(self.closed_parts()));
                let group_rows = self
                    .part_rows
                    .map_or(ROW_GROUP_ROWS, |n| (n as usize).min(ROW_GROUP_ROWS));
                self.open
                    .insert(RecordsWriter::with_group_rows(&path, group_rows)?)
            }
        };
        writer.push(row)?;
        self.open_rows += 1;
        if self.part_rows.is_some_and(|n| self.open_rows >= n) {
            self.close_part()?;
        }
        Ok(())
    }

    /// Write the open part's footer, hash it and list it in the manifest; nothing when no
    /// row is waiting.
    pub fn close_part(&mut self) -> Result<(), String> {
        let Some(writer) = self.open.take() else {
            return Ok(());
        };
        let index = self.closed_parts();
        let file = part_file_name(index);
        let rows = writer.finish()?;
        self.open_rows = 0;
        let sha256 = sha256_file(&self.parts_dir.join(&file))?;
        self.manifest.parts.push(PartEntry { file, rows, sha256 });
        self.manifest.write(&self.parts_dir)?;
        (self.on_closed)(index);
        Ok(())
    }

    /// Close the last part; the rows of every part listed.
    pub fn finish(mut self) -> Result<u64, String> {
        self.close_part()?;
        Ok(self.manifest.rows())
    }
}
