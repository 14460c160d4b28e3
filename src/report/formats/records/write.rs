//! Writing `requests.parquet` in row groups, so memory stays bounded however long the run.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use parquet::schema::parser::parse_message_type;

use super::RecordRow;
use super::columns::{COLUMNS, Cell, Column, Kind, message_type};

/// Rows buffered before a row group is written: the buffer is the writer's whole memory
/// (about 0.6 KB a row), so a run's RSS stops growing once one group is full.
pub const ROW_GROUP_ROWS: usize = 16_384;

/// Writes rows to `.<name>.partial` beside `path` (hidden, so folder readers skip it),
/// renamed to `path` once the footer is written: a records file that exists is complete.
pub struct RecordsWriter {
    writer: SerializedFileWriter<File>,
    buffer: Vec<RecordRow>,
    path: PathBuf,
    partial: PathBuf,
    rows: u64,
    group_rows: usize,
}

impl RecordsWriter {
    pub fn create(path: &Path) -> Result<Self, String> {
        Self::with_group_rows(path, ROW_GROUP_ROWS)
    }

    /// A writer whose row groups hold `group_rows` rows (tests cross group boundaries).
    pub fn with_group_rows(path: &Path, group_rows: usize) -> Result<Self, String> {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let partial = path.with_file_name(format!(".{name}.partial"));
        let file = File::create(&partial)
            .map_err(|e| format!("cannot create {}: {e}", partial.display()))?;
        let schema = parse_message_type(&message_type())
            .map_err(|e| format!("requests.parquet schema: {e}"))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build();
        let writer = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props))
            .map_err(|e| format!("cannot start {}: {e}", partial.display()))?;
        Ok(RecordsWriter {
            writer,
            buffer: Vec::new(),
            path: path.to_path_buf(),
            partial,
            rows: 0,
            group_rows: group_rows.max(1),
        })
    }

    pub fn push(&mut self, row: RecordRow) -> Result<(), String> {
        self.buffer.push(row);
        if self.buffer.len() >= self.group_rows {
            self.flush_group()?;
        }
        Ok(())
    }

    /// Write the last row group and the footer; the number of rows written.
    pub fn finish(mut self) -> Result<u64, String> {
        self.flush_group()?;
        self.writer
            .close()
            .map_err(|e| format!("cannot finish {}: {e}", self.partial.display()))?;
        std::fs::rename(&self.partial, &self.path)
            .map_err(|e| format!("cannot rename to {}: {e}", self.path.display()))?;
        Ok(self.rows)
    }

    fn flush_group(&mut self) -> Result<(), String> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let err = |e: parquet::errors::ParquetError| format!("requests.parquet: {e}");
        let mut group = self.writer.next_row_group().map_err(err)?;
        let mut columns = COLUMNS.iter();
        while let Some(mut writer) = group.next_column().map_err(err)? {
            let column = columns.next().ok_or("requests.parquet: too many columns")?;
            write_column(&mut writer, column, &self.buffer).map_err(err)?;
            writer.close().map_err(err)?;
        }
        group.close().map_err(err)?;
        self.rows += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }
}

/// One column of a row group: its non-null values, and definition levels when nullable.
fn write_column(
    writer: &mut SerializedColumnWriter<'_>,
    column: &Column,
    rows: &[RecordRow],
) -> parquet::errors::Result<()> {
    let cells: Vec<Cell> = rows.iter().map(column.get).collect();
    let levels: Vec<i16> = cells.iter().map(|c| i16::from(*c != Cell::Null)).collect();
    let levels = column.optional.then_some(levels.as_slice());
    match column.kind {
        Kind::F64 => {
            let values = values(&cells, |c| match c {
                Cell::F64(v) => Some(*v),
                _ => None,
            });
            writer
                .typed::<DoubleType>()
                .write_batch(&values, levels, None)?;
        }
        Kind::I64 => {
            let values = values(&cells, |c| match c {
                Cell::I64(v) => Some(*v),
                _ => None,
            });
            writer
                .typed::<Int64Type>()
                .write_batch(&values, levels, None)?;
        }
        Kind::Str => {
            let values = values(&cells, |c| match c {
                Cell::Str(s) => Some(ByteArray::from(s.as_str())),
                _ => None,
            });
            writer
                .typed::<ByteArrayType>()
                .write_batch(&values, levels, None)?;
        }
        Kind::Bool => {
            let values = values(&cells, |c| match c {
                Cell::Bool(b) => Some(*b),
                _ => None,
            });
            writer
                .typed::<BoolType>()
                .write_batch(&values, levels, None)?;
        }
    }
    Ok(())
}

fn values<T>(cells: &[Cell], value: impl Fn(&Cell) -> Option<T>) -> Vec<T> {
    cells.iter().filter_map(value).collect()
}

/// Write `rows` to `path` in one go (recovery rebuilds the file this way); the row count.
pub fn write_records(
    path: &Path,
    rows: impl IntoIterator<Item = RecordRow>,
) -> Result<u64, String> {
    let mut writer = RecordsWriter::create(path)?;
    for row in rows {
        writer.push(row)?;
    }
    writer.finish()
}
