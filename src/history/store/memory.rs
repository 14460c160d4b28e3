//! A `Store` held in memory, saved to and loaded from one JSON file: the backend the trend
//! tests and benchmarks fill point by point.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{HistoryError, RunFilter, RunSummary, Store, StoredRun};
use crate::history::series::{Alert, Point, RunId, SeriesKey};
use crate::report::Report;

/// Runs, series and alerts in memory.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MemoryStore {
    runs: Vec<StoredRun>,
    series: BTreeMap<String, (SeriesKey, Vec<Point>)>,
    alerts: Vec<Alert>,
}

fn key_text(key: &SeriesKey) -> String {
    format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{}",
        key.plan, key.phase, key.target, key.figure
    )
}

impl MemoryStore {
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// Add a run (its points come with `push_point`).
    pub fn add_run(&mut self, run: StoredRun) {
        self.runs.push(run);
    }

    /// Append a point to a series; points must arrive in run order.
    pub fn push_point(&mut self, key: &SeriesKey, point: Point) {
        self.series
            .entry(key_text(key))
            .or_insert_with(|| (key.clone(), Vec::new()))
            .1
            .push(point);
    }

    pub fn load(path: &Path) -> Result<MemoryStore, HistoryError> {
        let file_error = |message: String| HistoryError::File {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
        serde_json::from_str(&text).map_err(|e| file_error(format!("not a history file: {e}")))
    }

    pub fn save(&self, path: &Path) -> Result<(), HistoryError> {
        let file_error = |message: String| HistoryError::File {
            path: path.to_path_buf(),
            message,
        };
        let text = serde_json::to_string(self).map_err(|e| file_error(e.to_string()))?;
        crate::report::write_atomic(path, &text).map_err(|e| file_error(e.to_string()))
    }
}

impl Store for MemoryStore {
    fn record(&mut self, _: &Report, _: Option<&Path>) -> Result<RunId, HistoryError> {
        Err(HistoryError::Unsupported(
            "record reports (fill it with add_run and push_point)",
        ))
    }

    fn runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, HistoryError> {
        Ok(self
            .runs
            .iter()
            .filter(|r| filter.plan.as_ref().is_none_or(|p| *p == r.summary.plan))
            .map(|r| r.summary.clone())
            .collect())
    }

    fn run(&self, id: &str) -> Result<StoredRun, HistoryError> {
        self.runs
            .iter()
            .find(|r| r.summary.id == id)
            .cloned()
            .ok_or_else(|| HistoryError::UnknownRun(id.to_string()))
    }

    fn keys(&self, plan: Option<&str>) -> Result<Vec<SeriesKey>, HistoryError> {
        let mut keys: Vec<SeriesKey> = self
            .series
            .values()
            .map(|(k, _)| k.clone())
            .filter(|k| plan.is_none_or(|p| p == k.plan))
            .collect();
        keys.sort();
        Ok(keys)
    }

    fn series(&self, key: &SeriesKey) -> Result<Vec<Point>, HistoryError> {
        let excluded: BTreeMap<&str, &str> = self
            .runs
            .iter()
            .filter_map(|r| Some((r.summary.id.as_str(), r.summary.excluded.as_deref()?)))
            .collect();
        let mut points = self
            .series
            .get(&key_text(key))
            .map(|(_, p)| p.clone())
            .unwrap_or_default();
        for p in &mut points {
            if let Some(reason) = excluded.get(p.run.as_str()) {
                p.excluded = Some(reason.to_string());
            }
        }
        Ok(points)
    }

    fn exclude(&mut self, run: &str, reason: &str) -> Result<(), HistoryError> {
        let stored = self
            .runs
            .iter_mut()
            .find(|r| r.summary.id == run)
            .ok_or_else(|| HistoryError::UnknownRun(run.to_string()))?;
        stored.summary.excluded = Some(reason.to_string());
        Ok(())
    }

    fn alerts(&self, plan: Option<&str>) -> Result<Vec<Alert>, HistoryError> {
        Ok(self
            .alerts
            .iter()
            .filter(|a| plan.is_none_or(|p| p == a.key.plan))
            .cloned()
            .collect())
    }

    fn save_alerts(&mut self, alerts: &[Alert]) -> Result<(), HistoryError> {
        for alert in alerts {
            if let Some(old) = self
                .alerts
                .iter_mut()
                .find(|a| a.id == alert.id && a.id != 0)
            {
                *old = alert.clone();
            } else if alert.id == 0 {
                let id = self.alerts.iter().map(|a| a.id).max().unwrap_or(0) + 1;
                self.alerts.push(Alert {
                    id,
                    ..alert.clone()
                });
            } else {
                return Err(HistoryError::UnknownAlert(alert.id));
            }
        }
        Ok(())
    }
}
