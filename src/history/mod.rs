//! The results history across runs: recording a finished report into a store, the series
//! of each figure, alerts, and imports of other tools' results.
//!
//! Reads `report::model` (and the pure `figure` and `metrics` functions); called by
//! `commands` after a run or by `servebench history …`, never by the runner or anything
//! below it.

pub mod series;

pub use series::{Alert, AlertState, Conditions, Point, RunId, SeriesKey};
