//! Reading `requests.parquet` back, row by row.

use std::fs::File;
use std::path::Path;

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};

use crate::client::RequestRecord;

use super::columns::{COLUMNS, Cell, Column};
use super::{RecordRow, Window};

/// Every row of a `requests.parquet`, in file order. Columns the file has and this version
/// does not know are ignored; a missing required column fails the first row.
pub fn read_records(
    path: &Path,
) -> Result<impl Iterator<Item = Result<RecordRow, String>> + use<>, String> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| format!("cannot open {name}: {e}"))?;
    let reader =
        SerializedFileReader::new(file).map_err(|e| format!("{name}: not a Parquet file: {e}"))?;
    let fields = reader.metadata().file_metadata().schema().get_fields();
    let by_position: Vec<Option<&'static Column>> = fields
        .iter()
        .map(|f| COLUMNS.iter().find(|c| c.name == f.name()))
        .collect();
    if let Some(missing) = COLUMNS
        .iter()
        .find(|c| !c.optional && !fields.iter().any(|f| f.name() == c.name))
    {
        return Err(format!("{name}: no `{}` column", missing.name));
    }
    let rows = reader.into_iter().map(move |row| {
        let row = row.map_err(|e| format!("{name}: {e}"))?;
        decode(&row, &by_position).map_err(|e| format!("{name}: {e}"))
    });
    Ok(rows)
}

/// The measured records of each phase, in file order, grouped by phase name.
pub fn read_measured(path: &Path) -> Result<Vec<(String, Vec<RequestRecord>)>, String> {
    measured_by_phase(read_records(path)?)
}

/// The measured records among `rows`, in order, grouped by phase name.
pub fn measured_by_phase(
    rows: impl Iterator<Item = Result<RecordRow, String>>,
) -> Result<Vec<(String, Vec<RequestRecord>)>, String> {
    let mut phases: Vec<(String, Vec<RequestRecord>)> = Vec::new();
    for row in rows {
        let row = row?;
        if row.window != Window::Measured {
            continue;
        }
        match phases.iter_mut().find(|(name, _)| *name == row.phase) {
            Some((_, records)) => records.push(row.record),
            None => phases.push((row.phase, vec![row.record])),
        }
    }
    Ok(phases)
}

fn decode(row: &Row, by_position: &[Option<&'static Column>]) -> Result<RecordRow, String> {
    let mut out = RecordRow {
        phase: String::new(),
        window: Window::Measured,
        shard: None,
        record: RequestRecord::default(),
    };
    for ((_, field), column) in row.get_column_iter().zip(by_position) {
        let Some(column) = column else { continue };
        let cell = match field {
            Field::Null => Cell::Null,
            Field::Double(v) => Cell::F64(*v),
            Field::Long(v) => Cell::I64(*v),
            Field::Str(s) => Cell::Str(s.clone()),
            Field::Bool(b) => Cell::Bool(*b),
            other => return Err(format!("column `{}`: unexpected {other:?}", column.name)),
        };
        (column.set)(&mut out, cell).map_err(|e| format!("column `{}`: {e}", column.name))?;
    }
    Ok(out)
}
