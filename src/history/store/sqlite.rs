//! The default backend: one SQLite file, in WAL mode with a busy timeout, each recording one
//! `BEGIN IMMEDIATE` transaction, so concurrent recorders (separate CI jobs) queue.

use std::path::Path;
use std::time::Duration;

use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{Connection, ErrorCode, OpenFlags};

use super::super::HistoryError;
use super::sql::{Cell, CellRef, Column, ColumnKind, Dialect, Driver};

/// How long a recorder waits for another one's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Sqlite {
    connection: Connection,
    location: String,
}

impl rusqlite::ToSql for Cell {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Cell::Null => ToSqlOutput::Owned(Value::Null),
            Cell::Int(n) => ToSqlOutput::Owned(Value::Integer(*n)),
            Cell::Real(x) => ToSqlOutput::Owned(Value::Real(*x)),
            Cell::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Cell::Bool(b) => ToSqlOutput::Owned(Value::Integer(i64::from(*b))),
            Cell::Bytes(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

impl Sqlite {
    /// Open the store at `path`; `create` makes the file (and its directory) when missing,
    /// otherwise a missing file is an error. An existing file is never truncated or replaced.
    pub fn open(path: &Path, create: bool) -> Result<Sqlite, HistoryError> {
        let location = path.display().to_string();
        let open_error = |detail: String| HistoryError::Open {
            location: location.clone(),
            detail,
        };
        if !path.exists() {
            if !create {
                return Err(open_error(
                    "no history store here (a run records into it; or give --history)".into(),
                ));
            }
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| open_error(format!("cannot create {}: {e}", dir.display())))?;
            }
        } else if path.is_dir() {
            return Err(open_error("is a directory; name a file".into()));
        } else if !create && std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
            // A reader never turns a file into a store.
            return Err(open_error(
                "is an empty file, not a history store (a run records into it; or give --history)"
                    .into(),
            ));
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let connection =
            Connection::open_with_flags(path, flags).map_err(|e| open_error(e.to_string()))?;
        let store = Sqlite {
            connection,
            location,
        };
        store
            .connection
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| store.error(e))?;
        // The first statement that reads the file: a file that is not SQLite fails here.
        let mode: String = store
            .connection
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(|e| store.error(e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(HistoryError::Open {
                location: store.location.clone(),
                detail: format!("cannot use write-ahead logging (journal mode {mode})"),
            });
        }
        Ok(store)
    }

    fn error(&self, e: rusqlite::Error) -> HistoryError {
        let location = self.location.clone();
        match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => HistoryError::Corrupt {
                location,
                detail: "is not a SQLite database, so not a servebench history store".into(),
            },
            Some(ErrorCode::DatabaseCorrupt) => HistoryError::Corrupt {
                location,
                detail: format!("the SQLite file is damaged ({e})"),
            },
            _ => HistoryError::Database {
                location,
                detail: e.to_string(),
            },
        }
    }
}

fn cell(value: ValueRef<'_>) -> CellRef<'_> {
    match value {
        ValueRef::Null => CellRef::Null,
        ValueRef::Integer(n) => CellRef::Int(n),
        ValueRef::Real(x) => CellRef::Real(x),
        ValueRef::Text(t) => CellRef::Text(String::from_utf8_lossy(t)),
        ValueRef::Blob(b) => CellRef::Bytes(b),
    }
}

impl Driver for Sqlite {
    fn location(&self) -> &str {
        &self.location
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&self, sql: &str, params: &[Cell]) -> Result<u64, HistoryError> {
        let mut statement = self
            .connection
            .prepare_cached(sql)
            .map_err(|e| self.error(e))?;
        let changed = statement
            .execute(rusqlite::params_from_iter(params))
            .map_err(|e| self.error(e))?;
        Ok(changed as u64)
    }

    fn each_row(
        &self,
        sql: &str,
        params: &[Cell],
        row: &mut dyn FnMut(&[CellRef<'_>]) -> Result<(), HistoryError>,
    ) -> Result<(), HistoryError> {
        let mut statement = self
            .connection
            .prepare_cached(sql)
            .map_err(|e| self.error(e))?;
        let width = statement.column_count();
        let mut rows = statement
            .query(rusqlite::params_from_iter(params))
            .map_err(|e| self.error(e))?;
        while let Some(r) = rows.next().map_err(|e| self.error(e))? {
            let mut cells = Vec::with_capacity(width);
            for i in 0..width {
                cells.push(cell(r.get_ref(i).map_err(|e| self.error(e))?));
            }
            row(&cells)?;
        }
        Ok(())
    }

    fn table(&self, sql: &str) -> Result<(Vec<Column>, Vec<Vec<Cell>>), HistoryError> {
        let columns: Vec<Column> = {
            let statement = self.connection.prepare(sql).map_err(|e| self.error(e))?;
            statement
                .columns()
                .iter()
                .map(|c| Column {
                    name: c.name().to_string(),
                    kind: ColumnKind::of_declared(c.decl_type().unwrap_or("TEXT")),
                })
                .collect()
        };
        let rows = self
            .query(sql, &[])?
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .zip(&columns)
                    .map(|(value, column)| column.kind.normalize(value))
                    .collect()
            })
            .collect();
        Ok((columns, rows))
    }

    fn batch(&self, sql: &str) -> Result<(), HistoryError> {
        self.connection
            .execute_batch(sql)
            .map_err(|e| self.error(e))
    }

    fn begin_write(&self) -> Result<(), HistoryError> {
        self.batch("BEGIN IMMEDIATE")
    }
}
