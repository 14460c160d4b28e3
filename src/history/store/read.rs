//! Reading the store back: runs, one run's rows, series keys and points, alerts, tables
//! (a search's rows and capacity series come from `searches`).

use std::collections::BTreeMap;

use foldhash::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::super::HistoryError;
use super::super::kept;
use super::super::record::{ErrorRow, FigureRow, PhaseRow, RunRow, RunRows, RunSource, SplitRow};
use super::super::searches::is_capacity;
use super::super::series::{Alert, AlertState, Conditions, Moved, PhaseFacts, Point, SeriesKey};
use super::model::{RunFilter, RunSummary, StoredRun, Table};
use super::row::{
    PointFacts, normalize_time, phase_facts, plan_filter, point, trust_name, trust_named,
};
use super::schema::{TABLES, order_by};
use super::sql::{Cell, Driver};
use crate::metrics::trust::TrustVerdict;
use crate::plan::model::HistorySettings;

/// A stored value that should be there and is not: the store was changed by hand.
fn damaged(driver: &dyn Driver, what: &str) -> HistoryError {
    HistoryError::Corrupt {
        location: driver.location().to_string(),
        detail: format!("a stored {what} is missing or of the wrong type"),
    }
}

const SUMMARY_COLUMNS: &str = "r.id, r.run_id, r.plan, r.source, r.started_at, r.finished_at,
    r.complete, r.excluded, r.tool, r.recorded_at,
    (SELECT COUNT(*) FROM phases p WHERE p.run = r.id), r.tags, r.metadata, r.provenance,
    r.hostname";

fn summary(driver: &dyn Driver, row: &[Cell]) -> Result<RunSummary, HistoryError> {
    let text = |i: usize| row[i].string().ok_or_else(|| damaged(driver, "run field"));
    Ok(RunSummary {
        id: text(0)?,
        run_id: text(1)?,
        plan: text(2)?,
        source: RunSource::named(&text(3)?).ok_or_else(|| damaged(driver, "run source"))?,
        started_at: text(4)?,
        finished_at: row[5].string(),
        complete: row[6].bool().ok_or_else(|| damaged(driver, "run flag"))?,
        excluded: row[7].string(),
        tool: text(8)?,
        recorded_at: text(9)?,
        phases: row[10].int().unwrap_or(0),
        tags: serde_json::from_str(&text(11)?).map_err(|_| damaged(driver, "run's tags"))?,
        provenance: labels(&text(12)?, row[13].text(), row[14].text(), &text(8)?),
    })
}

/// `value`'s leaves as labels under `prefix`, by their key paths (`host.os`); nulls left out.
pub(super) fn flatten(prefix: &str, value: &Value, out: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        Value::Null => {}
        Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// A run's provenance as flat labels: the plan's labels under `labels.`, the stored
/// provenance by its key paths, the host and the tool.
fn labels(
    metadata: &str,
    provenance: Option<&str>,
    hostname: Option<&str>,
    tool: &str,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    flatten("labels", &json(metadata), &mut out);
    if let Some(p) = provenance {
        flatten("", &json(p), &mut out);
    }
    if let Some(host) = hostname {
        out.insert("host.hostname".to_string(), host.to_string());
    }
    out.insert("tool".to_string(), tool.to_string());
    out
}

pub fn runs(driver: &dyn Driver, filter: &RunFilter) -> Result<Vec<RunSummary>, HistoryError> {
    let mut conditions = Vec::new();
    let mut params = Vec::new();
    if let Some(plan) = &filter.plan {
        params.push(Cell::from(plan));
        conditions.push(format!("r.plan = ${}", params.len()));
    }
    if let Some(since) = &filter.since {
        let since = normalize_time(since).ok_or_else(|| {
            HistoryError::Invalid(format!("--since {since:?} is not an RFC 3339 time"))
        })?;
        params.push(Cell::from(since));
        conditions.push(format!("r.started_at >= ${}", params.len()));
    }
    if let Some(complete) = filter.complete {
        params.push(Cell::from(complete));
        conditions.push(format!("r.complete = ${}", params.len()));
    }
    let filter_sql = if conditions.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conditions.join(" AND "))
    };
    let limit = filter.limit.map_or(String::new(), |n| format!("LIMIT {n}"));
    let rows = driver.query(
        &format!(
            "SELECT {SUMMARY_COLUMNS} FROM runs r {filter_sql}
             ORDER BY r.started_at DESC, r.id DESC {limit}"
        ),
        &params,
    )?;
    let mut runs = rows
        .iter()
        .map(|r| summary(driver, r))
        .collect::<Result<Vec<_>, _>>()?;
    runs.reverse();
    Ok(runs)
}

pub fn run(driver: &dyn Driver, id: &str) -> Result<StoredRun, HistoryError> {
    let summaries = driver.query(
        &format!("SELECT {SUMMARY_COLUMNS} FROM runs r WHERE r.id = $1"),
        &[Cell::from(id)],
    )?;
    let Some(summary) = summaries.first() else {
        return Err(HistoryError::UnknownRun(id.to_string()));
    };
    let summary = self::summary(driver, summary)?;
    let rows = driver.query(
        "SELECT id, recorded_at, excluded, run_id, record_key, plan, source, started_at,
            finished_at, complete, stop_reason, tool, hostname, plan_sha256, report_path,
            report_sha256, records_path, records_sha256, metadata, provenance, history
         FROM runs WHERE id = $1",
        &[Cell::from(id)],
    )?;
    let Some(r) = rows.first() else {
        return Err(HistoryError::UnknownRun(id.to_string()));
    };
    let text = |i: usize| r[i].string().ok_or_else(|| damaged(driver, "run field"));
    let run = RunRow {
        run_id: text(3)?,
        record_key: text(4)?,
        plan: text(5)?,
        source: RunSource::named(&text(6)?).ok_or_else(|| damaged(driver, "run source"))?,
        started_at: text(7)?,
        finished_at: r[8].string(),
        complete: r[9].bool().ok_or_else(|| damaged(driver, "run flag"))?,
        stop_reason: r[10].string(),
        tool: text(11)?,
        hostname: r[12].string(),
        plan_sha256: r[13].string(),
        report_path: r[14].string(),
        report_sha256: r[15].string(),
        records_path: r[16].string(),
        records_sha256: r[17].string(),
        metadata: text(18)?,
        provenance: r[19].string(),
        history: r[20].string(),
    };
    let phases = phases(driver, id)?;
    let searches = super::searches::of_run(driver, id)?;
    Ok(StoredRun {
        summary,
        report_path: run.report_path.as_ref().map(std::path::PathBuf::from),
        rows: RunRows {
            run,
            phases,
            searches,
        },
    })
}

fn phases(driver: &dyn Driver, run: &str) -> Result<Vec<PhaseRow>, HistoryError> {
    let rows = driver.query(
        "SELECT ordinal, phase, target, route, workload, concurrency, rate_rps, recheck_of,
            started_at, partial, work_sha256, deployment_sha256, trust, trust_reasons, requests,
            errors, elapsed_s, cached_token_ratio, server_queue_share, server_uptime_s,
            split_requests, split_client_queue_ms, split_connect_ms, split_tls_ms,
            split_server_queue_ms, split_server_prefill_ms, split_server_decode_ms,
            split_frontend_network_ms, split_e2e_ms, late_share
         FROM phases WHERE run = $1 ORDER BY ordinal",
        &[Cell::from(run)],
    )?;
    let mut figures = figures_by_phase(driver, run)?;
    let mut errors = errors_by_phase(driver, run)?;
    rows.iter()
        .map(|r| {
            let bad = || damaged(driver, "phase field");
            let text = |i: usize| r[i].string().ok_or_else(bad);
            let real = |i: usize| r[i].real().ok_or_else(bad);
            let ordinal = r[0].int().ok_or_else(bad)?;
            let split = match r[20].int() {
                Some(requests) => Some(SplitRow {
                    requests,
                    client_queue_ms: r[21].real(),
                    connect_ms: real(22)?,
                    tls_ms: real(23)?,
                    server_queue_ms: r[24].real(),
                    server_prefill_ms: real(25)?,
                    server_decode_ms: real(26)?,
                    frontend_network_ms: real(27)?,
                    e2e_ms: real(28)?,
                }),
                None => None,
            };
            Ok(PhaseRow {
                phase: text(1)?,
                target: text(2)?,
                route: text(3)?,
                workload: text(4)?,
                concurrency: r[5].int(),
                rate_rps: r[6].real(),
                recheck_of: r[7].string(),
                started_at: text(8)?,
                partial: r[9].bool().ok_or_else(bad)?,
                work_sha256: r[10].string(),
                deployment_sha256: text(11)?,
                trust: match r[12].text() {
                    Some(name) => Some(trust_named(name).ok_or_else(bad)?),
                    None => None,
                },
                trust_reasons: text(13)?,
                requests: r[14].int().ok_or_else(bad)?,
                errors: r[15].int().ok_or_else(bad)?,
                elapsed_s: real(16)?,
                conditions: Conditions {
                    cached_token_ratio: r[17].real(),
                    server_queue_share: r[18].real(),
                    server_uptime_s: r[19].real(),
                    late_share: r[29].real(),
                },
                split,
                figures: figures.remove(&ordinal).unwrap_or_default(),
                errors_by_cause: errors.remove(&ordinal).unwrap_or_default(),
            })
        })
        .collect()
}

type ByPhase<T> = std::collections::BTreeMap<i64, Vec<T>>;

/// A run's figures by phase, in the order they were recorded.
fn figures_by_phase(driver: &dyn Driver, run: &str) -> Result<ByPhase<FigureRow>, HistoryError> {
    let mut by_phase = ByPhase::new();
    for r in driver.query(
        "SELECT ordinal, figure, value, lo, hi, note FROM figures WHERE run = $1",
        &[Cell::from(run)],
    )? {
        let bad = || damaged(driver, "figure");
        by_phase
            .entry(r[0].int().ok_or_else(bad)?)
            .or_insert_with(Vec::new)
            .push(FigureRow {
                figure: r[1].string().ok_or_else(bad)?,
                value: r[2].real().ok_or_else(bad)?,
                interval: r[3].real().zip(r[4].real()),
                note: r[5].string(),
            });
    }
    // Rows come back in key order; the figure table's order reads better.
    let order = crate::report::model::figure_path::figure_path_names();
    let rank = |name: &str| order.iter().position(|n| n == name).unwrap_or(usize::MAX);
    for figures in by_phase.values_mut() {
        figures.sort_by(|a, b| {
            rank(&a.figure)
                .cmp(&rank(&b.figure))
                .then(a.figure.cmp(&b.figure))
        });
    }
    Ok(by_phase)
}

fn errors_by_phase(driver: &dyn Driver, run: &str) -> Result<ByPhase<ErrorRow>, HistoryError> {
    let mut by_phase = ByPhase::new();
    for r in driver.query(
        "SELECT ordinal, cause, kind, status, count, example FROM errors WHERE run = $1
         ORDER BY ordinal, count DESC, cause",
        &[Cell::from(run)],
    )? {
        let bad = || damaged(driver, "error row");
        by_phase
            .entry(r[0].int().ok_or_else(bad)?)
            .or_insert_with(Vec::new)
            .push(ErrorRow {
                cause: r[1].string().ok_or_else(bad)?,
                kind: r[2].string().ok_or_else(bad)?,
                status: r[3].int(),
                count: r[4].int().ok_or_else(bad)?,
                example: r[5].string().ok_or_else(bad)?,
            });
    }
    Ok(by_phase)
}

/// Every plan with a run, in name order.
pub fn plans(driver: &dyn Driver) -> Result<Vec<String>, HistoryError> {
    let rows = driver.query("SELECT DISTINCT plan FROM runs ORDER BY 1", &[])?;
    rows.iter()
        .map(|r| r[0].string().ok_or_else(|| damaged(driver, "run's plan")))
        .collect()
}

/// Every series' key: each figure of each phase, and each search's capacity, in key order.
pub fn keys(driver: &dyn Driver, plan: Option<&str>) -> Result<Vec<SeriesKey>, HistoryError> {
    let mut keys = figure_keys(driver, plan)?;
    keys.extend(super::searches::keys(driver, plan)?);
    keys.sort();
    Ok(keys)
}

fn figure_keys(driver: &dyn Driver, plan: Option<&str>) -> Result<Vec<SeriesKey>, HistoryError> {
    let (filter, params) = plan_filter("r.plan", plan);
    let rows = driver.query(
        &format!(
            "SELECT DISTINCT r.plan, p.phase, p.target, f.figure
             FROM figures f
             JOIN phases p ON p.run = f.run AND p.ordinal = f.ordinal
             JOIN runs r ON r.id = f.run
             {filter}
             ORDER BY 1, 2, 3, 4"
        ),
        &params,
    )?;
    rows.iter()
        .map(|r| {
            let text = |i: usize| r[i].string().ok_or_else(|| damaged(driver, "series key"));
            Ok(SeriesKey {
                plan: text(0)?,
                phase: text(1)?,
                target: text(2)?,
                figure: text(3)?,
            })
        })
        .collect()
}

pub fn series(driver: &dyn Driver, key: &SeriesKey) -> Result<Vec<Point>, HistoryError> {
    if is_capacity(&key.figure) {
        return super::searches::series(driver, key);
    }
    let rows = driver.query(
        "SELECT r.id, r.started_at, f.value, f.lo, f.hi, p.work_sha256, p.deployment_sha256,
            p.trust, p.partial, r.complete, r.excluded, p.cached_token_ratio,
            p.server_queue_share, p.server_uptime_s, p.late_share, f.band_lo, f.band_hi
         FROM figures f
         JOIN phases p ON p.run = f.run AND p.ordinal = f.ordinal
         JOIN runs r ON r.id = f.run
         WHERE r.plan = $1 AND p.phase = $2 AND p.target = $3 AND f.figure = $4
         ORDER BY r.started_at, r.id, p.ordinal",
        &[
            Cell::from(&key.plan),
            Cell::from(&key.phase),
            Cell::from(&key.target),
            Cell::from(&key.figure),
        ],
    )?;
    let bad = || damaged(driver, "series point");
    rows.iter()
        .map(|r| figure_point(r, &bad, Arc::new(figure_facts(r, &bad)?)))
        .collect()
}

/// A phase's facts from a row of the series queries (columns 0-15).
fn figure_facts(r: &[Cell], bad: &dyn Fn() -> HistoryError) -> Result<PhaseFacts, HistoryError> {
    let facts = PointFacts {
        client_bound: r[7].text() == Some(trust_name(TrustVerdict::ClientBound)),
        conditions: Conditions {
            cached_token_ratio: r[11].real(),
            server_queue_share: r[12].real(),
            server_uptime_s: r[13].real(),
            late_share: r[14].real(),
        },
    };
    phase_facts(r, bad, facts)
}

/// A phase figure's point from a row of the series queries (columns 0-16), its phase's
/// facts given.
fn figure_point(
    r: &[Cell],
    bad: &dyn Fn() -> HistoryError,
    phase: Arc<PhaseFacts>,
) -> Result<Point, HistoryError> {
    let mut point = point(r, bad, phase)?;
    point.late_band = r[15].real().zip(r[16].real());
    Ok(point)
}

/// Every series of `plan`, in key order. The plan's phases are read once, then its figures
/// without a join (matched to their phase in memory), then each capacity search: a trend
/// over a thousand runs reads one row per figure, not one query per series or a phase's
/// facts once per figure.
pub fn plan_series(
    driver: &dyn Driver,
    plan: &str,
) -> Result<Vec<(SeriesKey, Vec<Point>)>, HistoryError> {
    let bad = || damaged(driver, "series point");
    let phases = PlanPhases::read(driver, plan, &bad)?;
    let mut series = SeriesByKey::default();
    // The figures table is kept in run and phase order, so a phase's rows follow each other.
    let mut last: Option<(String, i64, Option<usize>)> = None;
    driver.each_row(
        "SELECT run, ordinal, figure, value, lo, hi, band_lo, band_hi FROM figures
         WHERE run IN (SELECT id FROM runs WHERE plan = $1)",
        &[Cell::from(plan)],
        &mut |r| {
            let run = r[0].text().ok_or_else(bad)?;
            let ordinal = r[1].int().ok_or_else(bad)?;
            let at = match &last {
                Some((last_run, last_ordinal, at))
                    if last_run == run && *last_ordinal == ordinal =>
                {
                    *at
                }
                _ => {
                    let at = phases.find(run, ordinal);
                    last = Some((run.to_string(), ordinal, at));
                    at
                }
            };
            // A figure without its phase's row is no series' point (as a join would drop it).
            let Some(at) = at else { return Ok(()) };
            let phase = &phases.list[at];
            let mut point = Point::new(
                phase.facts.clone(),
                r[3].real().ok_or_else(bad)?,
                r[4].real().zip(r[5].real()),
            );
            point.late_band = r[6].real().zip(r[7].real());
            let runs = phases.runs_of[phase.name];
            series
                .of(phase.name, r[2].text().ok_or_else(bad)?, runs)
                .push((phase.order, point));
            Ok(())
        },
    )?;
    let mut out = series.in_run_order(plan, &phases.names);
    for key in super::searches::keys(driver, Some(plan))? {
        let points = super::searches::series(driver, &key)?;
        out.push((key, points));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// A plan's phases, each with its facts, its (phase, target) and its place in run order.
struct PlanPhases {
    list: Vec<PlanPhase>,
    /// Each run's phases by ordinal.
    by_run: HashMap<String, Vec<(i64, usize)>>,
    /// The (phase, target) names, indexed by `PlanPhase::name`.
    names: Vec<(String, String)>,
    /// How many phases have each name: the most points a series of it can have.
    runs_of: Vec<usize>,
}

struct PlanPhase {
    facts: Arc<PhaseFacts>,
    name: usize,
    /// Rank by run start, run and ordinal: the order of a series' points.
    order: usize,
}

impl PlanPhases {
    fn read(
        driver: &dyn Driver,
        plan: &str,
        bad: &dyn Fn() -> HistoryError,
    ) -> Result<PlanPhases, HistoryError> {
        // Columns 0-1 and 5-14 as `figure_facts` reads them; 2-4 name the phase.
        let rows = driver.query(
            "SELECT r.id, r.started_at, p.phase, p.target, p.ordinal, p.work_sha256,
                p.deployment_sha256, p.trust, p.partial, r.complete, r.excluded,
                p.cached_token_ratio, p.server_queue_share, p.server_uptime_s, p.late_share
             FROM phases p JOIN runs r ON r.id = p.run
             WHERE r.plan = $1",
            &[Cell::from(plan)],
        )?;
        let mut names: Vec<(String, String)> = Vec::new();
        let mut name_index: HashMap<(String, String), usize> = HashMap::default();
        let mut by_run: HashMap<String, Vec<(i64, usize)>> = HashMap::default();
        let mut list = Vec::with_capacity(rows.len());
        let mut ordinals = Vec::with_capacity(rows.len());
        for r in &rows {
            let facts = figure_facts(r, bad)?;
            let name = (
                r[2].string().ok_or_else(bad)?,
                r[3].string().ok_or_else(bad)?,
            );
            let ordinal = r[4].int().ok_or_else(bad)?;
            let name = *name_index.entry(name.clone()).or_insert_with(|| {
                names.push(name);
                names.len() - 1
            });
            by_run
                .entry(facts.run.clone())
                .or_default()
                .push((ordinal, list.len()));
            ordinals.push(ordinal);
            list.push(PlanPhase {
                facts: Arc::new(facts),
                name,
                order: 0,
            });
        }
        let mut in_order: Vec<usize> = (0..list.len()).collect();
        in_order.sort_by(|&a, &b| {
            let (fa, fb) = (&list[a].facts, &list[b].facts);
            (&fa.started_at, &fa.run, ordinals[a]).cmp(&(&fb.started_at, &fb.run, ordinals[b]))
        });
        for (order, at) in in_order.into_iter().enumerate() {
            list[at].order = order;
        }
        let mut runs_of = vec![0; names.len()];
        for phase in &list {
            runs_of[phase.name] += 1;
        }
        Ok(PlanPhases {
            list,
            by_run,
            names,
            runs_of,
        })
    }

    fn find(&self, run: &str, ordinal: i64) -> Option<usize> {
        let phases = self.by_run.get(run)?;
        phases
            .iter()
            .find(|(o, _)| *o == ordinal)
            .map(|(_, at)| *at)
    }
}

/// A plan's series as their rows arrive, each point with its phase's place in run order.
#[derive(Default)]
struct SeriesByKey {
    figures: HashMap<String, usize>,
    index: HashMap<(usize, usize), usize>,
    series: Vec<NamedPoints>,
}

/// A series as it is read: its phase's name (an index), its figure, and its points each with
/// its phase's place in run order.
type NamedPoints = (usize, String, Vec<(usize, Point)>);

impl SeriesByKey {
    /// The points of figure `figure` of the phase named `name` (an index into the plan's
    /// names), room made for `runs` of them when the series is new.
    fn of(&mut self, name: usize, figure: &str, runs: usize) -> &mut Vec<(usize, Point)> {
        let figure_at = match self.figures.get(figure) {
            Some(&at) => at,
            None => {
                let at = self.figures.len();
                self.figures.insert(figure.to_string(), at);
                at
            }
        };
        let at = *self.index.entry((name, figure_at)).or_insert_with(|| {
            self.series
                .push((name, figure.to_string(), Vec::with_capacity(runs)));
            self.series.len() - 1
        });
        &mut self.series[at].2
    }

    /// Each series' points by run start, run and phase order.
    fn in_run_order(self, plan: &str, names: &[(String, String)]) -> Vec<(SeriesKey, Vec<Point>)> {
        self.series
            .into_iter()
            .map(|(name, figure, mut points)| {
                points.sort_unstable_by_key(|(order, _)| *order);
                let (phase, target) = &names[name];
                let key = SeriesKey {
                    plan: plan.to_string(),
                    phase: phase.clone(),
                    target: target.clone(),
                    figure,
                };
                (key, points.into_iter().map(|(_, p)| p).collect())
            })
            .collect()
    }
}

/// The report kept with run `id`, when it was recorded at schema v5 or later.
pub fn kept_report(driver: &dyn Driver, id: &str) -> Result<Option<String>, HistoryError> {
    let rows = driver.query(
        "SELECT encoding, report FROM kept_reports WHERE run = $1",
        &[Cell::from(id)],
    )?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    match (row[0].text(), row[1].bytes()) {
        (Some(kept::ENCODING), Some(bytes)) => kept::unpack(bytes)
            .map(Some)
            .ok_or_else(|| damaged(driver, "kept report")),
        _ => Err(damaged(driver, "kept report")),
    }
}

pub fn alerts(driver: &dyn Driver, plan: Option<&str>) -> Result<Vec<Alert>, HistoryError> {
    let (filter, params) = plan_filter("plan", plan);
    let rows = driver.query(
        &format!(
            "SELECT id, plan, target, opened_by, change_at, moved, state, resolved_by,
                closed_at, superseded_by, note, former_ids
             FROM alerts {filter} ORDER BY id"
        ),
        &params,
    )?;
    rows.iter()
        .map(|r| {
            let bad = || damaged(driver, "alert");
            let text = |i: usize| r[i].string().ok_or_else(bad);
            let state = match r[6].text() {
                Some("open") => AlertState::Open,
                Some("acknowledged") => AlertState::Acknowledged,
                Some("resolved") => AlertState::Resolved,
                Some("superseded") => AlertState::Superseded,
                _ => return Err(bad()),
            };
            let moved: Vec<Moved> = serde_json::from_str(&text(5)?).map_err(|_| bad())?;
            let former_ids: Vec<i64> =
                serde_json::from_str(r[11].text().unwrap_or("[]")).map_err(|_| bad())?;
            Ok(Alert {
                id: r[0].int().ok_or_else(bad)?,
                plan: text(1)?,
                target: text(2)?,
                opened_by: text(3)?,
                change_at: text(4)?,
                moved,
                state,
                resolved_by: r[7].string(),
                closed_at: r[8].string(),
                superseded_by: r[9].int(),
                note: r[10].string(),
                former_ids,
            })
        })
        .collect()
}

/// The `history:` section of the plan of `plan`'s newest run.
pub fn plan_history(
    driver: &dyn Driver,
    plan: &str,
) -> Result<Option<HistorySettings>, HistoryError> {
    let rows = driver.query(
        "SELECT history FROM runs WHERE plan = $1 ORDER BY started_at DESC, id DESC LIMIT 1",
        &[Cell::from(plan)],
    )?;
    let text = rows.first().and_then(|r| r[0].string());
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}

/// Every table, rows in key order.
pub fn tables(driver: &dyn Driver) -> Result<Vec<Table>, HistoryError> {
    TABLES
        .iter()
        .map(|name| {
            let (columns, rows) =
                driver.table(&format!("SELECT * FROM {name} ORDER BY {}", order_by(name)))?;
            Ok(Table {
                name,
                columns,
                rows,
            })
        })
        .collect()
}

/// A stored JSON text as a value (`null` when it does not parse).
pub fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}
