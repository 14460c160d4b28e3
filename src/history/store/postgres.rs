//! The team backend: one PostgreSQL database (`--history postgres://…`), each recording one
//! transaction that first takes a transaction-scoped advisory lock, so recorders queue and a
//! retried recording finds its first copy.
//!
//! The asynchronous client runs on a runtime of its own, one `block_on` per statement: a
//! plan's million figure rows stream in one call rather than one runtime entry per row.

use std::error::Error as _;

use bytes::BytesMut;
use futures_util::TryStreamExt;
use tokio::runtime::Runtime;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, NoTls, Row};

use super::super::HistoryError;
use super::sql::{Cell, CellRef, Column, ColumnKind, Dialect, Driver};

/// The advisory lock every write transaction takes (an arbitrary constant: "servebench").
const WRITE_LOCK: i64 = 0x7365_7276_6562_656e;

pub struct Postgres {
    // Declared before the runtime, so the client (and its connection task) go first.
    client: Client,
    runtime: Runtime,
    location: String,
}

impl ToSql for Cell {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Cell::Null => Ok(IsNull::Yes),
            Cell::Int(n) if *ty == Type::INT4 => i32::try_from(*n)?.to_sql(ty, out),
            Cell::Int(n) if *ty == Type::FLOAT8 => (*n as f64).to_sql(ty, out),
            Cell::Int(n) => n.to_sql(ty, out),
            Cell::Real(x) => x.to_sql(ty, out),
            Cell::Text(s) => s.as_str().to_sql(ty, out),
            Cell::Bool(b) => b.to_sql(ty, out),
            Cell::Bytes(b) => b.as_slice().to_sql(ty, out),
        }
    }

    // Each value checks its own type in `to_sql`; a mismatch is an error from there.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl Postgres {
    pub fn connect(url: &str) -> Result<Postgres, HistoryError> {
        let location = redact(url);
        let open_error = |detail: String| HistoryError::Open {
            location: location.clone(),
            detail,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| open_error(format!("cannot start the database client: {e}")))?;
        let (client, connection) = runtime
            .block_on(tokio_postgres::connect(url, NoTls))
            .map_err(|e| open_error(describe(&e)))?;
        // The connection is driven while a statement's `block_on` runs; a broken one fails
        // the statement waiting on it, which reports it.
        runtime.spawn(connection);
        Ok(Postgres {
            client,
            runtime,
            location,
        })
    }

    fn error(&self, e: tokio_postgres::Error) -> HistoryError {
        HistoryError::Database {
            location: self.location.clone(),
            detail: describe(&e),
        }
    }
}

/// The server's message when there is one (the error's own text is only "db error").
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => match e.source() {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        },
    }
}

/// The URL with any password replaced, for messages.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split(':').next().unwrap_or_default();
            let hidden = if user_info.contains(':') { ":***" } else { "" };
            format!("{scheme}://{user}{hidden}@{host}{tail}")
        }
        None => url.to_string(),
    }
}

fn kind(ty: &Type) -> ColumnKind {
    match *ty {
        Type::BOOL => ColumnKind::Bool,
        Type::INT2 | Type::INT4 | Type::INT8 => ColumnKind::Int,
        Type::FLOAT4 | Type::FLOAT8 | Type::NUMERIC => ColumnKind::Real,
        _ => ColumnKind::Text,
    }
}

fn cells(row: &Row) -> Result<Vec<CellRef<'_>>, tokio_postgres::Error> {
    let mut cells = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        cells.push(
            match *column.type_() {
                Type::BOOL => row.try_get::<_, Option<bool>>(i)?.map(CellRef::Bool),
                Type::INT2 => row
                    .try_get::<_, Option<i16>>(i)?
                    .map(|n| CellRef::Int(n.into())),
                Type::INT4 => row
                    .try_get::<_, Option<i32>>(i)?
                    .map(|n| CellRef::Int(n.into())),
                Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(CellRef::Int),
                Type::FLOAT4 => row
                    .try_get::<_, Option<f32>>(i)?
                    .map(|x| CellRef::Real(x.into())),
                Type::FLOAT8 => row.try_get::<_, Option<f64>>(i)?.map(CellRef::Real),
                Type::BYTEA => row.try_get::<_, Option<&[u8]>>(i)?.map(CellRef::Bytes),
                _ => row
                    .try_get::<_, Option<&str>>(i)?
                    .map(|s| CellRef::Text(s.into())),
            }
            .unwrap_or(CellRef::Null),
        );
    }
    Ok(cells)
}

impl Driver for Postgres {
    fn location(&self) -> &str {
        &self.location
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&self, sql: &str, params: &[Cell]) -> Result<u64, HistoryError> {
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        self.runtime
            .block_on(self.client.execute(sql, &refs))
            .map_err(|e| self.error(e))
    }

    fn each_row(
        &self,
        sql: &str,
        params: &[Cell],
        row: &mut dyn FnMut(&[CellRef<'_>]) -> Result<(), HistoryError>,
    ) -> Result<(), HistoryError> {
        let refs = params.iter().map(|p| p as &(dyn ToSql + Sync));
        self.runtime.block_on(async {
            let rows = self
                .client
                .query_raw(sql, refs)
                .await
                .map_err(|e| self.error(e))?;
            futures_util::pin_mut!(rows);
            while let Some(r) = rows.try_next().await.map_err(|e| self.error(e))? {
                row(&cells(&r).map_err(|e| self.error(e))?)?;
            }
            Ok(())
        })
    }

    fn table(&self, sql: &str) -> Result<(Vec<Column>, Vec<Vec<Cell>>), HistoryError> {
        let (statement, rows) = self
            .runtime
            .block_on(async {
                let statement = self.client.prepare(sql).await?;
                let rows = self.client.query(&statement, &[]).await?;
                Ok((statement, rows))
            })
            .map_err(|e| self.error(e))?;
        let columns = statement
            .columns()
            .iter()
            .map(|c| Column {
                name: c.name().to_string(),
                kind: kind(c.type_()),
            })
            .collect();
        let rows = rows
            .iter()
            .map(|row| Ok(cells(row)?.iter().map(CellRef::owned).collect()))
            .collect::<Result<_, _>>()
            .map_err(|e| self.error(e))?;
        Ok((columns, rows))
    }

    fn batch(&self, sql: &str) -> Result<(), HistoryError> {
        self.runtime
            .block_on(self.client.batch_execute(sql))
            .map_err(|e| self.error(e))
    }

    fn begin_write(&self) -> Result<(), HistoryError> {
        self.batch("BEGIN")?;
        self.execute("SELECT pg_advisory_xact_lock($1)", &[Cell::Int(WRITE_LOCK)])
            .map(drop)
    }
}
