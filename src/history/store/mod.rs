//! The `Store` trait every history backend implements, and the run records it hands out.
//!
//! The trend code is written against this trait only; `memory` is a backend held in memory
//! (and in a JSON file between commands) that the trends' tests and benchmarks fill directly.

mod memory;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use memory::MemoryStore;

use super::series::{Alert, Point, RunId, SeriesKey};
use crate::report::Report;

/// Why a history operation failed.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("no run `{0}` in the history")]
    UnknownRun(String),
    #[error("no alert {0} in the history")]
    UnknownAlert(i64),
    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },
    #[error("this history backend cannot {0}")]
    Unsupported(&'static str),
}

/// Which runs `Store::runs` lists.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFilter {
    pub plan: Option<String>,
}

/// One stored run, as listings show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: RunId,
    pub plan: String,
    /// RFC 3339.
    pub started_at: String,
    /// False for a partial or killed run.
    pub complete: bool,
    pub excluded: Option<String>,
    /// Names a baseline may use for this run (`v1.2`).
    pub tags: Vec<String>,
    /// Provenance flattened to labels (`host.cpu`, `target.default.engine_version`, …): a
    /// label whose value differs from the run before is a provenance change.
    pub provenance: BTreeMap<String, String>,
}

/// One run with where its report lives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRun {
    pub summary: RunSummary,
    pub report_path: Option<PathBuf>,
}

/// A results store: runs, the series drawn from them, and alerts.
pub trait Store {
    /// Record one finished report (one transaction; a partial or killed run is stored as
    /// not complete and never enters trends as complete). Returns the run's id.
    fn record(
        &mut self,
        report: &Report,
        report_path: Option<&Path>,
    ) -> Result<RunId, HistoryError>;
    fn runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, HistoryError>;
    fn run(&self, id: &str) -> Result<StoredRun, HistoryError>;
    fn keys(&self, plan: Option<&str>) -> Result<Vec<SeriesKey>, HistoryError>;
    /// The points of one series, oldest first, every point (excluded, partial and
    /// client-bound ones included and marked: callers decide).
    fn series(&self, key: &SeriesKey) -> Result<Vec<Point>, HistoryError>;
    fn exclude(&mut self, run: &str, reason: &str) -> Result<(), HistoryError>;
    fn alerts(&self, plan: Option<&str>) -> Result<Vec<Alert>, HistoryError>;
    /// Insert or update alerts (the trends code computes them; the store keeps them). An
    /// alert with id 0 is new: the store gives it the next id.
    fn save_alerts(&mut self, alerts: &[Alert]) -> Result<(), HistoryError>;
}
