//! The `Store` trait every backend implements, and what its queries take and return.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::super::kept::{self, Kept};
use super::super::record::{RunRows, RunSource};
use super::super::series::{Alert, Point, RunId, SeriesKey};
use super::super::{HistoryError, record};
use crate::plan::model::HistorySettings;
use crate::report::model::Report;

/// The results store: runs recorded one transaction each, series read back, alerts kept.
pub trait Store {
    /// Record one finished report (one transaction; a partial or killed run is stored as
    /// not complete and never enters trends as complete). Returns the run's id.
    fn record(
        &mut self,
        report: &Report,
        report_path: Option<&Path>,
    ) -> Result<RunId, HistoryError> {
        let rows = record::rows(report, report_path)?;
        self.record_kept(&rows, &kept::kept_from(report, report_path))
    }
    /// [`Store::record_rows`] with what a store of schema v5 keeps beside the rows, in the
    /// same transaction; a store that keeps no more records the rows alone.
    fn record_kept(&mut self, rows: &RunRows, _kept: &Kept) -> Result<RunId, HistoryError> {
        self.record_rows(rows)
    }
    /// The report kept with run `id` (JSON, records bounded), when its store keeps one:
    /// `None` for a run recorded before schema v5.
    fn kept_report(&self, _id: &str) -> Result<Option<String>, HistoryError> {
        Ok(None)
    }
    /// Record rows built from a report or an import, in one transaction. Recording the same
    /// rows again (a retry) returns the first recording's id and adds nothing.
    fn record_rows(&mut self, rows: &RunRows) -> Result<RunId, HistoryError>;
    fn runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, HistoryError>;
    fn run(&self, id: &str) -> Result<StoredRun, HistoryError>;
    /// Every plan with a run in the store, in name order.
    fn plans(&self) -> Result<Vec<String>, HistoryError> {
        let mut plans: Vec<String> = self
            .runs(&RunFilter::default())?
            .into_iter()
            .map(|r| r.plan)
            .collect();
        plans.sort();
        plans.dedup();
        Ok(plans)
    }
    fn keys(&self, plan: Option<&str>) -> Result<Vec<SeriesKey>, HistoryError>;
    /// The points of one series, oldest first, every point (excluded, partial and
    /// client-bound ones included and marked: callers decide).
    fn series(&self, key: &SeriesKey) -> Result<Vec<Point>, HistoryError>;
    /// Every series of `plan` with its points, in key order (the SQL stores read them in one
    /// pass).
    fn plan_series(&self, plan: &str) -> Result<Vec<(SeriesKey, Vec<Point>)>, HistoryError> {
        self.keys(Some(plan))?
            .into_iter()
            .map(|key| {
                let points = self.series(&key)?;
                Ok((key, points))
            })
            .collect()
    }
    fn exclude(&mut self, run: &str, reason: &str) -> Result<(), HistoryError>;
    /// Give a run a name a baseline can pick it by; a tag names one run per plan (tagging
    /// another run moves it).
    fn tag(&mut self, run: &str, tag: &str) -> Result<(), HistoryError>;
    fn alerts(&self, plan: Option<&str>) -> Result<Vec<Alert>, HistoryError>;
    /// Insert or update alerts (the trends code computes them; the store keeps them), in
    /// one transaction. An alert with id 0 is new and gets an id; the ids, in order.
    fn save_alerts(&mut self, alerts: &[Alert]) -> Result<Vec<i64>, HistoryError>;
    /// The `history:` section of the plan of `plan`'s newest run, when it has one.
    fn plan_history(&self, plan: &str) -> Result<Option<HistorySettings>, HistoryError>;
    /// Delete runs the policy does not keep, with their phases, figures and errors; the
    /// ids deleted.
    fn retain(&mut self, policy: &Retention) -> Result<Vec<RunId>, HistoryError>;
    /// Every row of every table, for export.
    fn tables(&self) -> Result<Vec<Table>, HistoryError>;
}

/// Which runs `runs` lists.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub plan: Option<String>,
    /// RFC 3339: runs that started at or after it.
    pub since: Option<String>,
    /// Only complete (`Some(true)`) or only partial (`Some(false)`) runs.
    pub complete: Option<bool>,
    /// The newest this many.
    pub limit: Option<usize>,
}

/// One run as `history list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub id: RunId,
    /// The report's own `run_id`.
    pub run_id: String,
    pub plan: String,
    pub source: RunSource,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub finished_at: Option<String>,
    /// False for a partial run.
    pub complete: bool,
    pub excluded: Option<String>,
    pub phases: i64,
    pub tool: String,
    pub recorded_at: String,
    /// Names a baseline may pick this run by (`history tag`).
    pub tags: Vec<String>,
    /// Where and against what it ran, flattened to labels (`host.os`, `labels.engine`,
    /// `tool.version`, …): a label that differs from the run before is a provenance change.
    pub provenance: BTreeMap<String, String>,
}

/// One run with everything stored about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredRun {
    pub summary: RunSummary,
    /// The report the run was recorded from.
    pub report_path: Option<PathBuf>,
    #[serde(flatten)]
    pub rows: RunRows,
}

/// Which runs `retain` keeps: a run goes when either rule drops it.
#[derive(Debug, Clone, Default)]
pub struct Retention {
    /// Per plan, the newest this many runs.
    pub keep_last: Option<usize>,
    /// RFC 3339: runs that started before it go.
    pub before: Option<String>,
    /// Report what would go without deleting it.
    pub dry_run: bool,
}

/// One table's columns and rows, as an export writes them.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub name: &'static str,
    pub columns: Vec<super::sql::Column>,
    pub rows: Vec<Vec<super::sql::Cell>>,
}
