//! The results history across runs: recording a finished report into a store, the series
//! of each figure, change points and alerts over them, baselines as code, the trend report,
//! and imports of other tools' results.
//!
//! Reads `report::model` (and the pure `figure` and `metrics` functions); called by
//! `commands` after a run or by `servebench history …`, never by the runner or anything
//! below it. [`record`] turns a report into rows (a search's with [`searches`]), [`store`] keeps them (SQLite or
//! PostgreSQL), [`import`] turns other tools' result files into the same rows, [`series`]
//! is the model the trend analysis ([`trend`], [`update`], [`baseline`], [`render`]) reads.

pub mod baseline;
mod error;
pub mod gate;
pub mod hook;
pub mod import;
pub mod kept;
pub mod plans;
pub mod record;
pub mod render;
pub mod searches;
pub mod series;
pub mod store;
pub mod synthetic;
pub mod trend;
pub mod update;

pub use error::HistoryError;
pub use plans::require_plan;
pub use series::{Alert, AlertState, Conditions, Moved, Point, RunId, SeriesKey};
pub use store::{Location, OpenMode, RunFilter, Store, open};
pub use update::{Updated, update};
