//! The results history across runs: the series model, the store, change points and alerts
//! over series, baselines as code and the trend report.
//!
//! It reads `report::model` (and the pure `figure` and `metrics` functions) and is called by
//! `commands/`, never by the runner or anything below it.

pub mod baseline;
pub mod render;
pub mod series;
pub mod store;
pub mod trend;

pub use series::{Alert, AlertState, Conditions, Point, RunId, SeriesKey};
pub use store::{HistoryError, Store};
pub mod synthetic;
pub mod update;

pub use update::update;
