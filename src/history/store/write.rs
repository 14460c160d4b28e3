//! Writing to the store: a run's rows in one transaction, exclusions, alerts, retention.

use std::collections::BTreeMap;

use super::super::kept::{self, Kept};
use super::super::record::{PhaseRow, RunRows};
use super::super::series::{Alert, AlertState, RunId};
use super::super::{HistoryError, hook};
use super::model::Retention;
use super::row::{normalize_time, trust_name};
use super::sql::{Cell, Driver, in_write_transaction};

/// Figures written by one INSERT (9 parameters each, well under either database's limit).
const FIGURES_PER_STATEMENT: usize = 100;

/// Record `rows`, with what is `kept` beside them, in one transaction; a retry of the same
/// recording returns its id.
pub fn record(
    driver: &dyn Driver,
    rows: &RunRows,
    kept: Option<&Kept>,
) -> Result<RunId, HistoryError> {
    let run = &rows.run;
    let started_at = normalize_time(&run.started_at).ok_or_else(|| {
        HistoryError::Invalid(format!(
            "run {}: started_at {:?} is not an RFC 3339 time",
            run.run_id, run.started_at
        ))
    })?;
    in_write_transaction(driver, || {
        let existing = driver.query(
            "SELECT id FROM runs WHERE record_key = $1",
            &[Cell::from(&run.record_key)],
        )?;
        if let Some(id) = existing.first().and_then(|r| r[0].string()) {
            return Ok(id);
        }
        let id = unique_id(driver, &run.run_id)?;
        driver.execute(
            "INSERT INTO runs (id, run_id, record_key, plan, source, started_at, finished_at,
                complete, stop_reason, tool, hostname, plan_sha256, report_path, report_sha256,
                records_path, records_sha256, metadata, provenance, recorded_at, excluded)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                $17, $18, $19, NULL)",
            &[
                Cell::from(&id),
                Cell::from(&run.run_id),
                Cell::from(&run.record_key),
                Cell::from(&run.plan),
                Cell::from(run.source.name()),
                Cell::from(started_at.clone()),
                Cell::from(run.finished_at.clone()),
                Cell::from(run.complete),
                Cell::from(run.stop_reason.clone()),
                Cell::from(&run.tool),
                Cell::from(run.hostname.clone()),
                Cell::from(run.plan_sha256.clone()),
                Cell::from(run.report_path.clone()),
                Cell::from(run.report_sha256.clone()),
                Cell::from(run.records_path.clone()),
                Cell::from(run.records_sha256.clone()),
                Cell::from(&run.metadata),
                Cell::from(run.provenance.clone()),
                Cell::from(now()),
            ],
        )?;
        // Set apart, so a run without the section records into a store of any version.
        if let Some(history) = &run.history {
            driver.execute(
                "UPDATE runs SET history = $1 WHERE id = $2",
                &[Cell::from(history), Cell::from(&id)],
            )?;
        }
        let no_bands = BTreeMap::new();
        for (ordinal, phase) in rows.phases.iter().enumerate() {
            // `None` for a store older than version 5 (no late share or band columns).
            let bands = kept.map(|k| k.bands.get(ordinal).unwrap_or(&no_bands));
            insert_phase(driver, &id, ordinal as i64, phase, bands)?;
        }
        super::searches::insert(driver, &id, &rows.searches)?;
        if let Some(report) = kept.and_then(|k| k.report.as_ref()) {
            driver.execute(
                "INSERT INTO kept_reports (run, encoding, report) VALUES ($1, $2, $3)",
                &[
                    Cell::from(&id),
                    Cell::from(kept::ENCODING),
                    Cell::from(kept::pack(report)),
                ],
            )?;
        }
        hook::pause_at(hook::PausePoint::InCommit);
        Ok(id)
    })
}

fn insert_phase(
    driver: &dyn Driver,
    run: &str,
    ordinal: i64,
    p: &PhaseRow,
    bands: Option<&BTreeMap<String, (f64, f64)>>,
) -> Result<(), HistoryError> {
    let split = p.split.as_ref();
    driver.execute(
        "INSERT INTO phases (run, ordinal, phase, target, route, workload, concurrency, rate_rps,
            recheck_of, started_at, partial, work_sha256, deployment_sha256, trust, trust_reasons,
            requests, errors, elapsed_s, cached_token_ratio, server_queue_share, server_uptime_s,
            split_requests, split_client_queue_ms, split_connect_ms, split_tls_ms,
            split_server_queue_ms, split_server_prefill_ms, split_server_decode_ms,
            split_frontend_network_ms, split_e2e_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
            $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30)",
        &[
            Cell::from(run),
            Cell::from(ordinal),
            Cell::from(&p.phase),
            Cell::from(&p.target),
            Cell::from(&p.route),
            Cell::from(&p.workload),
            Cell::from(p.concurrency),
            Cell::from(p.rate_rps),
            Cell::from(p.recheck_of.clone()),
            Cell::from(&p.started_at),
            Cell::from(p.partial),
            Cell::from(p.work_sha256.clone()),
            Cell::from(&p.deployment_sha256),
            Cell::from(p.trust.map(trust_name)),
            Cell::from(&p.trust_reasons),
            Cell::from(p.requests),
            Cell::from(p.errors),
            Cell::from(p.elapsed_s),
            Cell::from(p.conditions.cached_token_ratio),
            Cell::from(p.conditions.server_queue_share),
            Cell::from(p.conditions.server_uptime_s),
            Cell::from(split.map(|s| s.requests)),
            Cell::from(split.and_then(|s| s.client_queue_ms)),
            Cell::from(split.map(|s| s.connect_ms)),
            Cell::from(split.map(|s| s.tls_ms)),
            Cell::from(split.and_then(|s| s.server_queue_ms)),
            Cell::from(split.map(|s| s.server_prefill_ms)),
            Cell::from(split.map(|s| s.server_decode_ms)),
            Cell::from(split.map(|s| s.frontend_network_ms)),
            Cell::from(split.map(|s| s.e2e_ms)),
        ],
    )?;
    // Set apart, as `history` is, so rows record into a store older than version 5.
    if let (Some(_), Some(share)) = (bands, p.conditions.late_share) {
        driver.execute(
            "UPDATE phases SET late_share = $1 WHERE run = $2 AND ordinal = $3",
            &[Cell::from(share), Cell::from(run), Cell::from(ordinal)],
        )?;
    }
    insert_figures(driver, run, ordinal, p, bands)?;
    for e in &p.errors_by_cause {
        driver.execute(
            "INSERT INTO errors (run, ordinal, cause, kind, status, count, example)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                Cell::from(run),
                Cell::from(ordinal),
                Cell::from(&e.cause),
                Cell::from(&e.kind),
                Cell::from(e.status),
                Cell::from(e.count),
                Cell::from(&e.example),
            ],
        )?;
    }
    Ok(())
}

/// A phase's figures, each percentile with its late band when it has one.
fn insert_figures(
    driver: &dyn Driver,
    run: &str,
    ordinal: i64,
    p: &PhaseRow,
    bands: Option<&BTreeMap<String, (f64, f64)>>,
) -> Result<(), HistoryError> {
    let (columns, band_columns) = match bands {
        Some(_) => (9, ", band_lo, band_hi"),
        None => (7, ""),
    };
    // Many rows per statement: one round trip per hundred figures, not one per figure.
    for chunk in p.figures.chunks(FIGURES_PER_STATEMENT) {
        let mut values = Vec::with_capacity(chunk.len());
        let mut params = Vec::with_capacity(chunk.len() * columns);
        for f in chunk {
            let n = params.len();
            let marks: Vec<String> = (n + 1..=n + columns).map(|i| format!("${i}")).collect();
            values.push(format!("({})", marks.join(", ")));
            params.extend([
                Cell::from(run),
                Cell::from(ordinal),
                Cell::from(&f.figure),
                Cell::from(f.value),
                Cell::from(f.interval.map(|i| i.0)),
                Cell::from(f.interval.map(|i| i.1)),
                Cell::from(f.note.clone()),
            ]);
            if let Some(bands) = bands {
                let band = bands.get(&f.figure);
                params.extend([Cell::from(band.map(|b| b.0)), Cell::from(band.map(|b| b.1))]);
            }
        }
        driver.execute(
            &format!(
                "INSERT INTO figures (run, ordinal, figure, value, lo, hi, note{band_columns})
                 VALUES {}",
                values.join(", ")
            ),
            &params,
        )?;
    }
    Ok(())
}

/// `run_id`, or `run_id-2`, `-3`, … when another recording already holds it.
fn unique_id(driver: &dyn Driver, run_id: &str) -> Result<String, HistoryError> {
    let taken: Vec<String> = driver
        .query(
            "SELECT id FROM runs WHERE id = $1 OR id LIKE $2",
            &[Cell::from(run_id), Cell::from(format!("{run_id}-%"))],
        )?
        .into_iter()
        .filter_map(|r| r[0].string())
        .collect();
    let free = |id: &String| !taken.contains(id);
    Ok(std::iter::once(run_id.to_string())
        .chain((2..).map(|n| format!("{run_id}-{n}")))
        .find(free)
        .unwrap_or_default())
}

pub fn exclude(driver: &dyn Driver, run: &str, reason: &str) -> Result<(), HistoryError> {
    in_write_transaction(driver, || {
        let changed = driver.execute(
            "UPDATE runs SET excluded = $1 WHERE id = $2",
            &[Cell::from(reason), Cell::from(run)],
        )?;
        if changed == 0 {
            return Err(HistoryError::UnknownRun(run.to_string()));
        }
        Ok(())
    })
}

pub fn tag(driver: &dyn Driver, run: &str, tag: &str) -> Result<(), HistoryError> {
    in_write_transaction(driver, || {
        let rows = driver.query("SELECT plan FROM runs WHERE id = $1", &[Cell::from(run)])?;
        let plan = rows
            .first()
            .and_then(|r| r[0].string())
            .ok_or_else(|| HistoryError::UnknownRun(run.to_string()))?;
        // The tag leaves whichever run of the plan held it.
        for row in driver.query(
            "SELECT id, tags FROM runs WHERE plan = $1",
            &[Cell::from(&plan)],
        )? {
            let (Some(id), Some(tags)) = (row[0].string(), row[1].string()) else {
                continue;
            };
            let mut tags: Vec<String> = serde_json::from_str(&tags).unwrap_or_default();
            let had = tags.len();
            tags.retain(|t| t != tag);
            if id == run {
                tags.push(tag.to_string());
            } else if tags.len() == had {
                continue;
            }
            driver.execute(
                "UPDATE runs SET tags = $1 WHERE id = $2",
                &[
                    Cell::from(serde_json::json!(tags).to_string()),
                    Cell::from(&id),
                ],
            )?;
        }
        Ok(())
    })
}

pub fn save_alerts(driver: &dyn Driver, alerts: &[Alert]) -> Result<Vec<i64>, HistoryError> {
    in_write_transaction(driver, || {
        let mut ids = Vec::with_capacity(alerts.len());
        for a in alerts {
            let moved = serde_json::to_string(&a.moved).unwrap_or_else(|_| "[]".into());
            let former = serde_json::to_string(&a.former_ids).unwrap_or_else(|_| "[]".into());
            let values = [
                Cell::from(&a.plan),
                Cell::from(&a.target),
                Cell::from(&a.opened_by),
                Cell::from(&a.change_at),
                Cell::from(moved),
                Cell::from(alert_state_name(&a.state)),
                Cell::from(a.resolved_by.clone()),
                Cell::from(a.closed_at.clone()),
                Cell::from(a.superseded_by),
                Cell::from(a.note.clone()),
                Cell::from(former),
            ];
            let changed = if a.id == 0 {
                0
            } else {
                let mut params = values.to_vec();
                params.push(Cell::from(a.id));
                driver.execute(
                    "UPDATE alerts SET plan = $1, target = $2, opened_by = $3, change_at = $4,
                        moved = $5, state = $6, resolved_by = $7, closed_at = $8,
                        superseded_by = $9, note = $10, former_ids = $11
                     WHERE id = $12",
                    &params,
                )?
            };
            if changed == 0 {
                let rows = driver.query(
                    "INSERT INTO alerts (plan, target, opened_by, change_at, moved, state,
                        resolved_by, closed_at, superseded_by, note, former_ids)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
                    &values,
                )?;
                let id = rows.first().and_then(|r| r[0].int());
                ids.push(id.ok_or_else(|| HistoryError::Corrupt {
                    location: driver.location().to_string(),
                    detail: "an inserted alert got no number".into(),
                })?);
            } else {
                ids.push(a.id);
            }
        }
        Ok(ids)
    })
}

pub fn alert_state_name(state: &AlertState) -> &'static str {
    match state {
        AlertState::Open => "open",
        AlertState::Acknowledged => "acknowledged",
        AlertState::Resolved => "resolved",
        AlertState::Superseded => "superseded",
    }
}

/// Delete the runs `policy` drops (with their phases, figures, errors and searches); their
/// ids, oldest first.
/// `version` is the store's schema version (the kept reports' table is version 6's).
pub fn retain(
    driver: &dyn Driver,
    policy: &Retention,
    version: i64,
) -> Result<Vec<RunId>, HistoryError> {
    in_write_transaction(driver, || {
        let rows = driver.query(
            "SELECT id, plan, started_at FROM runs ORDER BY plan, started_at DESC, id DESC",
            &[],
        )?;
        let before = policy.before.as_deref().map(normalize_time).map(|t| {
            t.ok_or_else(|| HistoryError::Invalid("--before is not an RFC 3339 time".into()))
        });
        let before = before.transpose()?;
        let mut drop = Vec::new();
        let mut plan = String::new();
        let mut kept_in_plan = 0usize;
        for row in rows {
            let (Some(id), Some(p), Some(started)) =
                (row[0].string(), row[1].string(), row[2].string())
            else {
                continue;
            };
            if p != plan {
                plan = p;
                kept_in_plan = 0;
            }
            let too_many = policy.keep_last.is_some_and(|n| kept_in_plan >= n);
            let too_old = before.as_ref().is_some_and(|b| started < *b);
            if too_many || too_old {
                drop.push((started, id));
            } else {
                kept_in_plan += 1;
            }
        }
        drop.sort();
        if !policy.dry_run {
            for (_, id) in &drop {
                let tables = ["figures", "errors", "searches", "phases", "kept_reports"];
                for table in &tables[..if version >= 6 { 5 } else { 4 }] {
                    driver.execute(
                        &format!("DELETE FROM {table} WHERE run = $1"),
                        &[Cell::from(id)],
                    )?;
                }
                driver.execute("DELETE FROM runs WHERE id = $1", &[Cell::from(id)])?;
            }
        }
        Ok(drop.into_iter().map(|(_, id)| id).collect())
    })
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
