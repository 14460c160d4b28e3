//! What the store's one SQL text needs from a database: a value type both backends bind
//! and read, and a driver that runs statements and the one write transaction.
//!
//! Every statement is written once with `$1, $2, …` placeholders in order, which PostgreSQL
//! reads as positional parameters and SQLite as named ones numbered the same way.

use std::borrow::Cow;

use super::super::HistoryError;

/// One SQL value as the store binds and reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Bool(bool),
    /// A kept report, compressed (`BLOB`, `BYTEA`).
    Bytes(Vec<u8>),
}

impl Cell {
    pub fn text(&self) -> Option<&str> {
        match self {
            Cell::Text(s) => Some(s),
            _ => None,
        }
    }

    pub fn string(&self) -> Option<String> {
        self.text().map(str::to_string)
    }

    pub fn int(&self) -> Option<i64> {
        self.borrowed().int()
    }

    pub fn real(&self) -> Option<f64> {
        self.borrowed().real()
    }

    pub fn bool(&self) -> Option<bool> {
        self.borrowed().bool()
    }

    fn borrowed(&self) -> CellRef<'_> {
        match self {
            Cell::Null => CellRef::Null,
            Cell::Int(n) => CellRef::Int(*n),
            Cell::Real(x) => CellRef::Real(*x),
            Cell::Text(s) => CellRef::Text(Cow::Borrowed(s)),
            Cell::Bool(b) => CellRef::Bool(*b),
            Cell::Bytes(b) => CellRef::Bytes(b),
        }
    }

    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Cell::Bytes(b) => Some(b),
            _ => None,
        }
    }
}

/// One SQL value as a row being read holds it: a plan's million figure rows are read
/// without a string made for each text cell.
#[derive(Debug, Clone, PartialEq)]
pub enum CellRef<'a> {
    Null,
    Int(i64),
    Real(f64),
    /// Borrowed from the row; owned only when the database's bytes were not UTF-8.
    Text(Cow<'a, str>),
    Bool(bool),
    Bytes(&'a [u8]),
}

impl CellRef<'_> {
    pub fn text(&self) -> Option<&str> {
        match self {
            CellRef::Text(s) => Some(s),
            _ => None,
        }
    }

    pub fn int(&self) -> Option<i64> {
        match self {
            CellRef::Int(n) => Some(*n),
            _ => None,
        }
    }

    pub fn real(&self) -> Option<f64> {
        match self {
            CellRef::Real(x) => Some(*x),
            // SQLite hands back a whole-valued REAL written as an integer in some cases.
            CellRef::Int(n) => Some(*n as f64),
            _ => None,
        }
    }

    /// SQLite keeps booleans as 0 and 1.
    pub fn bool(&self) -> Option<bool> {
        match self {
            CellRef::Bool(b) => Some(*b),
            CellRef::Int(n) => Some(*n != 0),
            _ => None,
        }
    }

    pub fn owned(&self) -> Cell {
        match self {
            CellRef::Null => Cell::Null,
            CellRef::Int(n) => Cell::Int(*n),
            CellRef::Real(x) => Cell::Real(*x),
            CellRef::Text(s) => Cell::Text(s.to_string()),
            CellRef::Bool(b) => Cell::Bool(*b),
            CellRef::Bytes(b) => Cell::Bytes(b.to_vec()),
        }
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Cell::Text(s.to_string())
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Self {
        Cell::Text(s)
    }
}

impl From<&String> for Cell {
    fn from(s: &String) -> Self {
        Cell::Text(s.clone())
    }
}

impl From<i64> for Cell {
    fn from(n: i64) -> Self {
        Cell::Int(n)
    }
}

impl From<f64> for Cell {
    fn from(x: f64) -> Self {
        Cell::Real(x)
    }
}

impl From<Vec<u8>> for Cell {
    fn from(b: Vec<u8>) -> Self {
        Cell::Bytes(b)
    }
}

impl From<bool> for Cell {
    fn from(b: bool) -> Self {
        Cell::Bool(b)
    }
}

impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(value: Option<T>) -> Self {
        value.map_or(Cell::Null, Into::into)
    }
}

/// A column's name and type.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub kind: ColumnKind,
}

/// The four kinds of value the store holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    Text,
    Int,
    Real,
    Bool,
}

/// Which database a driver speaks to, for the few statements that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The column type of a compressed report.
    pub fn bytes(self) -> &'static str {
        match self {
            Dialect::Sqlite => "BLOB",
            Dialect::Postgres => "BYTEA",
        }
    }

    /// A column type for an id the database assigns.
    pub fn serial_key(self) -> &'static str {
        match self {
            Dialect::Sqlite => "INTEGER PRIMARY KEY",
            Dialect::Postgres => "BIGSERIAL PRIMARY KEY",
        }
    }

    /// What makes a table stored in its primary key's order, once (SQLite keeps a rowid
    /// table and a key index otherwise; PostgreSQL has no such choice).
    pub fn clustered(self) -> &'static str {
        match self {
            Dialect::Sqlite => " WITHOUT ROWID",
            Dialect::Postgres => "",
        }
    }
}

/// A connection to one store.
pub trait Driver {
    /// The store's path or URL (passwords removed), for messages.
    fn location(&self) -> &str;
    fn dialect(&self) -> Dialect;
    /// Run one statement; the rows it changed.
    fn execute(&self, sql: &str, params: &[Cell]) -> Result<u64, HistoryError>;
    /// A query's rows, all of them.
    fn query(&self, sql: &str, params: &[Cell]) -> Result<Vec<Vec<Cell>>, HistoryError> {
        let mut rows = Vec::new();
        self.each_row(sql, params, &mut |row| {
            rows.push(row.iter().map(CellRef::owned).collect());
            Ok(())
        })?;
        Ok(rows)
    }
    /// Hand each row of a query to `row` as it arrives, borrowed and none kept: a plan's
    /// thousand runs of figures are read without holding them twice.
    fn each_row(
        &self,
        sql: &str,
        params: &[Cell],
        row: &mut dyn FnMut(&[CellRef<'_>]) -> Result<(), HistoryError>,
    ) -> Result<(), HistoryError>;
    /// A whole query's columns with their declared types, and its rows with each value of
    /// that type (SQLite's 0/1 as booleans, whole REALs as reals).
    fn table(&self, sql: &str) -> Result<(Vec<Column>, Vec<Vec<Cell>>), HistoryError>;
    /// Run statements without parameters.
    fn batch(&self, sql: &str) -> Result<(), HistoryError>;
    /// Begin a write transaction that holds the store's write lock from its first
    /// statement (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: a transaction-scoped advisory lock),
    /// so concurrent recorders queue instead of failing or interleaving.
    fn begin_write(&self) -> Result<(), HistoryError>;
}

/// Run `body` in one write transaction: committed when it returns `Ok`, rolled back when it
/// fails (or when the process dies before the commit).
pub fn in_write_transaction<T>(
    driver: &dyn Driver,
    body: impl FnOnce() -> Result<T, HistoryError>,
) -> Result<T, HistoryError> {
    driver.begin_write()?;
    match body() {
        Ok(value) => {
            driver.batch("COMMIT")?;
            Ok(value)
        }
        Err(e) => {
            // The first error is the one to report; a failed rollback ends with the session.
            let _ = driver.batch("ROLLBACK");
            Err(e)
        }
    }
}

impl ColumnKind {
    /// The kind of a declared column type, as either database names it.
    pub fn of_declared(declared: &str) -> ColumnKind {
        let t = declared.to_ascii_uppercase();
        if t.contains("BOOL") {
            ColumnKind::Bool
        } else if t.contains("INT") || t.contains("SERIAL") {
            ColumnKind::Int
        } else if t.contains("DOUBLE") || t.contains("REAL") || t.contains("FLOAT") {
            ColumnKind::Real
        } else {
            ColumnKind::Text
        }
    }

    /// `cell` as a value of this kind.
    pub fn normalize(self, cell: Cell) -> Cell {
        match (self, cell) {
            (ColumnKind::Bool, Cell::Int(n)) => Cell::Bool(n != 0),
            (ColumnKind::Real, Cell::Int(n)) => Cell::Real(n as f64),
            // No exported table holds bytes; one found there was put there by hand.
            (ColumnKind::Text, Cell::Bytes(b)) => Cell::Text(hex::encode(b)),
            (_, cell) => cell,
        }
    }
}
