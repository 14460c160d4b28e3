//! A `Store` held in memory: the double the trend tests and benchmarks fill, by recording
//! rows as a real store does or point by point. It keeps no file and cannot export.

use std::collections::BTreeMap;

use super::model::{Retention, RunFilter, RunSummary, Store, StoredRun, Table};
use super::read::flatten;
use crate::history::HistoryError;
use crate::history::record::RunRows;
use crate::history::searches::CAPACITY;
use std::sync::Arc;

use crate::history::series::{Alert, PhaseFacts, Point, RunId, SeriesKey};
use crate::metrics::trust::TrustVerdict;
use crate::plan::model::HistorySettings;

/// Runs, series and alerts in memory.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    runs: Vec<StoredRun>,
    series: BTreeMap<SeriesKey, Vec<Point>>,
    alerts: Vec<Alert>,
}

impl MemoryStore {
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// Append a point to a series without a run behind it; points must arrive in run order.
    pub fn push_point(&mut self, key: &SeriesKey, point: Point) {
        self.series.entry(key.clone()).or_default().push(point);
    }

    fn stored(&mut self, run: &str) -> Result<&mut StoredRun, HistoryError> {
        self.runs
            .iter_mut()
            .find(|r| r.summary.id == run)
            .ok_or_else(|| HistoryError::UnknownRun(run.to_string()))
    }
}

/// A run's summary as the SQL stores derive it (provenance labels from the run's JSON).
fn summary(id: &str, rows: &RunRows) -> RunSummary {
    let run = &rows.run;
    let mut provenance = BTreeMap::new();
    if let Some(text) = &run.provenance {
        flatten("", &super::json(text), &mut provenance);
    }
    RunSummary {
        id: id.to_string(),
        run_id: run.run_id.clone(),
        plan: run.plan.clone(),
        source: run.source,
        started_at: run.started_at.clone(),
        finished_at: run.finished_at.clone(),
        complete: run.complete,
        excluded: None,
        phases: rows.phases.len() as i64,
        tool: run.tool.clone(),
        recorded_at: run.started_at.clone(),
        tags: Vec::new(),
        provenance,
    }
}

impl Store for MemoryStore {
    fn record_rows(&mut self, rows: &RunRows) -> Result<RunId, HistoryError> {
        if let Some(old) = self
            .runs
            .iter()
            .find(|r| r.rows.run.record_key == rows.run.record_key)
        {
            return Ok(old.summary.id.clone());
        }
        let id = rows.run.run_id.clone();
        for phase in &rows.phases {
            let facts = Arc::new(PhaseFacts {
                run: id.clone(),
                started_at: rows.run.started_at.clone(),
                work: phase.work_sha256.clone().unwrap_or_default(),
                deployment: phase.deployment_sha256.clone(),
                client_bound: phase.trust == Some(TrustVerdict::ClientBound),
                partial: phase.partial || !rows.run.complete,
                excluded: None,
                conditions: phase.conditions,
            });
            for figure in &phase.figures {
                let key = SeriesKey {
                    plan: rows.run.plan.clone(),
                    phase: phase.phase.clone(),
                    target: phase.target.clone(),
                    figure: figure.figure.clone(),
                };
                self.push_point(
                    &key,
                    Point::new(facts.clone(), figure.value, figure.interval),
                );
            }
        }
        for search in &rows.searches {
            let Some(capacity) = search.capacity else {
                continue;
            };
            let key = SeriesKey {
                plan: rows.run.plan.clone(),
                phase: search.search.clone(),
                target: search.target.clone(),
                figure: CAPACITY.to_string(),
            };
            self.push_point(
                &key,
                Point {
                    search: Some(search.answer),
                    ..Point::new(
                        Arc::new(PhaseFacts {
                            run: id.clone(),
                            started_at: rows.run.started_at.clone(),
                            work: search.work_sha256.clone().unwrap_or_default(),
                            deployment: search.deployment_sha256.clone(),
                            client_bound: false,
                            partial: search.partial || !rows.run.complete,
                            excluded: None,
                            conditions: Default::default(),
                        }),
                        capacity,
                        search.closed_interval(),
                    )
                },
            );
        }
        self.runs.push(StoredRun {
            summary: summary(&id, rows),
            report_path: rows.run.report_path.as_ref().map(Into::into),
            rows: rows.clone(),
        });
        Ok(id)
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
        Ok(self
            .series
            .keys()
            .filter(|k| plan.is_none_or(|p| p == k.plan))
            .cloned()
            .collect())
    }

    fn series(&self, key: &SeriesKey) -> Result<Vec<Point>, HistoryError> {
        let excluded: BTreeMap<&str, &str> = self
            .runs
            .iter()
            .filter_map(|r| Some((r.summary.id.as_str(), r.summary.excluded.as_deref()?)))
            .collect();
        let mut points = self.series.get(key).cloned().unwrap_or_default();
        for p in &mut points {
            if let Some(reason) = excluded.get(p.run.as_str()) {
                p.facts_mut().excluded = Some(reason.to_string());
            }
        }
        Ok(points)
    }

    fn exclude(&mut self, run: &str, reason: &str) -> Result<(), HistoryError> {
        self.stored(run)?.summary.excluded = Some(reason.to_string());
        Ok(())
    }

    fn tag(&mut self, run: &str, tag: &str) -> Result<(), HistoryError> {
        let plan = self.stored(run)?.summary.plan.clone();
        for r in self.runs.iter_mut().filter(|r| r.summary.plan == plan) {
            r.summary.tags.retain(|t| t != tag);
        }
        self.stored(run)?.summary.tags.push(tag.to_string());
        Ok(())
    }

    fn alerts(&self, plan: Option<&str>) -> Result<Vec<Alert>, HistoryError> {
        Ok(self
            .alerts
            .iter()
            .filter(|a| plan.is_none_or(|p| p == a.plan))
            .cloned()
            .collect())
    }

    fn save_alerts(&mut self, alerts: &[Alert]) -> Result<Vec<i64>, HistoryError> {
        let mut ids = Vec::with_capacity(alerts.len());
        for alert in alerts {
            if let Some(old) = self
                .alerts
                .iter_mut()
                .find(|a| a.id == alert.id && a.id != 0)
            {
                *old = alert.clone();
                ids.push(alert.id);
            } else if alert.id == 0 {
                let id = self.alerts.iter().map(|a| a.id).max().unwrap_or(0) + 1;
                self.alerts.push(Alert {
                    id,
                    ..alert.clone()
                });
                ids.push(id);
            } else {
                return Err(HistoryError::UnknownAlert(alert.id));
            }
        }
        Ok(ids)
    }

    fn plan_history(&self, plan: &str) -> Result<Option<HistorySettings>, HistoryError> {
        Ok(self
            .runs
            .iter()
            .filter(|r| r.summary.plan == plan)
            .max_by(|a, b| a.summary.started_at.cmp(&b.summary.started_at))
            .and_then(|r| r.rows.run.history.as_deref())
            .and_then(|t| serde_json::from_str(t).ok()))
    }

    fn retain(&mut self, _: &Retention) -> Result<Vec<RunId>, HistoryError> {
        Err(HistoryError::Unsupported("apply retention in memory"))
    }

    fn tables(&self) -> Result<Vec<Table>, HistoryError> {
        Err(HistoryError::Unsupported("export from memory"))
    }
}
