//! The results history across runs: recording a finished report into a store, the series
//! of each figure, alerts, and imports of other tools' results.
//!
//! Reads `report::model` (and the pure `figure` and `metrics` functions); called by
//! `commands` after a run or by `servebench history …`, never by the runner or anything
//! below it. [`record`] turns a report into rows, [`store`] keeps them (SQLite or
//! PostgreSQL), [`import`] turns other tools' result files into the same rows, [`series`]
//! is the model the trend analysis reads.

mod error;
pub mod hook;
pub mod import;
pub mod record;
pub mod series;
pub mod store;

pub use error::HistoryError;
pub use series::{Alert, AlertState, Conditions, Point, RunId, SeriesKey};
pub use store::{Location, OpenMode, RunFilter, Store, open};
