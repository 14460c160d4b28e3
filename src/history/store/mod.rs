//! The results store: the [`Store`] trait, its SQLite (default) and PostgreSQL backends over
//! one SQL text (the `searches` table in a module of its own), the versioned schema and its
//! migrations, and export; `memory` (with the `testing` feature) is a store held in memory
//! that the trend tests and benchmarks fill point by point.

mod export;
#[cfg(any(test, feature = "testing"))]
mod memory;
mod model;
mod open;
mod postgres;
mod read;
mod row;
pub mod schema;
mod searches;
pub mod sql;
mod sqlite;
mod write;

pub use super::HistoryError;
pub use export::{ExportFormat, export};
#[cfg(any(test, feature = "testing"))]
pub use memory::MemoryStore;
pub use model::{Retention, RunFilter, RunSummary, Store, StoredRun, Table};
pub use open::{DEFAULT_FILE, HISTORY_ENV, Location, OpenMode, SqlStore, open, open_at_version};
pub use read::json;
pub use row::{normalize_time, trust_name};
