//! Export: one file per table (`runs`, `phases`, `figures`, `errors`, `searches`, `alerts`),
//! as Parquet (typed columns and NULLs, what DuckDB, pandas and polars read directly) or CSV
//! (numbers in Rust's shortest round-trip form, so they read back bit for bit).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use parquet::schema::parser::parse_message_type;

use super::super::HistoryError;
use super::model::Table;
use super::sql::{Cell, ColumnKind};

/// The form of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Parquet,
    Csv,
}

impl ExportFormat {
    fn extension(self) -> &'static str {
        match self {
            ExportFormat::Parquet => "parquet",
            ExportFormat::Csv => "csv",
        }
    }
}

/// Write each table to `dir/<table>.<ext>` (each file written beside and renamed into
/// place); the files written.
pub fn export(
    tables: &[Table],
    dir: &Path,
    format: ExportFormat,
) -> Result<Vec<PathBuf>, HistoryError> {
    let failed = |path: &Path, detail: String| HistoryError::File {
        path: path.to_path_buf(),
        message: detail,
    };
    std::fs::create_dir_all(dir).map_err(|e| failed(dir, format!("cannot create: {e}")))?;
    let mut written = Vec::new();
    for table in tables {
        let path = dir.join(format!("{}.{}", table.name, format.extension()));
        let partial = path.with_extension(format!("{}.partial", format.extension()));
        match format {
            ExportFormat::Parquet => write_parquet(table, &partial),
            ExportFormat::Csv => write_csv(table, &partial),
        }
        .map_err(|e| failed(&path, e))?;
        std::fs::rename(&partial, &path)
            .map_err(|e| failed(&path, format!("cannot rename into place: {e}")))?;
        written.push(path);
    }
    Ok(written)
}

fn write_csv(table: &Table, path: &Path) -> Result<(), String> {
    let mut writer = csv::Writer::from_path(path).map_err(|e| e.to_string())?;
    writer
        .write_record(table.columns.iter().map(|c| c.name.as_str()))
        .map_err(|e| e.to_string())?;
    for row in &table.rows {
        writer
            .write_record(row.iter().map(csv_field))
            .map_err(|e| e.to_string())?;
    }
    writer.flush().map_err(|e| e.to_string())
}

/// A value as CSV holds it: NULL is an empty field.
pub fn csv_field(cell: &Cell) -> String {
    match cell {
        Cell::Null => String::new(),
        Cell::Int(n) => n.to_string(),
        Cell::Real(x) => x.to_string(),
        Cell::Text(s) => s.clone(),
        Cell::Bool(b) => b.to_string(),
        Cell::Bytes(b) => hex::encode(b),
    }
}

fn message_type(table: &Table) -> String {
    let mut text = format!("message {} {{\n", table.name);
    for column in &table.columns {
        let physical = match column.kind {
            ColumnKind::Text => "BYTE_ARRAY",
            ColumnKind::Int => "INT64",
            ColumnKind::Real => "DOUBLE",
            ColumnKind::Bool => "BOOLEAN",
        };
        let logical = if column.kind == ColumnKind::Text {
            " (STRING)"
        } else {
            ""
        };
        text.push_str(&format!(
            "  OPTIONAL {physical} {}{logical};\n",
            column.name
        ));
    }
    text.push('}');
    text
}

fn write_parquet(table: &Table, path: &Path) -> Result<(), String> {
    let err = |e: parquet::errors::ParquetError| e.to_string();
    let file = File::create(path).map_err(|e| e.to_string())?;
    let schema = parse_message_type(&message_type(table)).map_err(err)?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer =
        SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props)).map_err(err)?;
    let mut group = writer.next_row_group().map_err(err)?;
    let mut index = 0;
    while let Some(mut column) = group.next_column().map_err(err)? {
        let kind = table.columns[index].kind;
        let cells: Vec<&Cell> = table.rows.iter().map(|row| &row[index]).collect();
        write_column(&mut column, kind, &cells).map_err(err)?;
        column.close().map_err(err)?;
        index += 1;
    }
    group.close().map_err(err)?;
    writer.close().map_err(err)?;
    Ok(())
}

/// One column: its non-null values and a definition level per row.
fn write_column(
    writer: &mut SerializedColumnWriter<'_>,
    kind: ColumnKind,
    cells: &[&Cell],
) -> parquet::errors::Result<()> {
    let levels: Vec<i16> = cells.iter().map(|c| i16::from(**c != Cell::Null)).collect();
    let levels = Some(levels.as_slice());
    match kind {
        ColumnKind::Real => {
            let values: Vec<f64> = cells.iter().filter_map(|c| c.real()).collect();
            writer
                .typed::<DoubleType>()
                .write_batch(&values, levels, None)?;
        }
        ColumnKind::Int => {
            let values: Vec<i64> = cells.iter().filter_map(|c| c.int()).collect();
            writer
                .typed::<Int64Type>()
                .write_batch(&values, levels, None)?;
        }
        ColumnKind::Text => {
            let values: Vec<ByteArray> = cells
                .iter()
                .filter_map(|c| c.text().map(ByteArray::from))
                .collect();
            writer
                .typed::<ByteArrayType>()
                .write_batch(&values, levels, None)?;
        }
        ColumnKind::Bool => {
            let values: Vec<bool> = cells.iter().filter_map(|c| c.bool()).collect();
            writer
                .typed::<BoolType>()
                .write_batch(&values, levels, None)?;
        }
    }
    Ok(())
}
