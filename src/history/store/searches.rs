//! The `searches` table: writing a run's capacity searches, reading them back with the run,
//! and reading each search's capacity as a series (plan, search, target, `capacity`).

use super::super::HistoryError;
use super::super::searches::{CAPACITY, SearchAnswer, SearchRow, load_name, load_named};
use super::super::series::{Conditions, Point, SeriesKey};
use super::row::{PointFacts, phase_facts, plan_filter, point};
use super::sql::{Cell, Driver};

/// Insert `run`'s searches (inside the recording's transaction).
pub fn insert(driver: &dyn Driver, run: &str, searches: &[SearchRow]) -> Result<(), HistoryError> {
    for (ordinal, s) in searches.iter().enumerate() {
        driver.execute(
            "INSERT INTO searches (run, ordinal, search, target, load_kind, work_sha256,
                deployment_sha256, capacity, interval_lo, interval_hi, bracket_lo, bracket_hi,
                stop_reason, answer, objective, goodput, probes, partial)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                $17, $18)",
            &[
                Cell::from(run),
                Cell::from(ordinal as i64),
                Cell::from(&s.search),
                Cell::from(&s.target),
                Cell::from(load_name(s.load)),
                Cell::from(s.work_sha256.clone()),
                Cell::from(&s.deployment_sha256),
                Cell::from(s.capacity),
                Cell::from(s.interval[0]),
                Cell::from(s.interval[1]),
                Cell::from(s.bracket[0]),
                Cell::from(s.bracket[1]),
                Cell::from(&s.stop_reason),
                Cell::from(s.answer.name()),
                Cell::from(&s.objective),
                Cell::from(s.goodput),
                Cell::from(s.probes),
                Cell::from(s.partial),
            ],
        )?;
    }
    Ok(())
}

fn damaged(driver: &dyn Driver) -> HistoryError {
    HistoryError::Corrupt {
        location: driver.location().to_string(),
        detail: "a stored search is missing a field or has one of the wrong type".to_string(),
    }
}

/// `run`'s searches, in the order they were recorded.
pub fn of_run(driver: &dyn Driver, run: &str) -> Result<Vec<SearchRow>, HistoryError> {
    let rows = driver.query(
        "SELECT search, target, load_kind, work_sha256, deployment_sha256, capacity,
            interval_lo, interval_hi, bracket_lo, bracket_hi, stop_reason, answer, objective,
            goodput, probes, partial
         FROM searches WHERE run = $1 ORDER BY ordinal",
        &[Cell::from(run)],
    )?;
    rows.iter()
        .map(|r| {
            let bad = || damaged(driver);
            let text = |i: usize| r[i].string().ok_or_else(bad);
            Ok(SearchRow {
                search: text(0)?,
                target: text(1)?,
                load: r[2].text().and_then(load_named).ok_or_else(bad)?,
                work_sha256: r[3].string(),
                deployment_sha256: text(4)?,
                capacity: r[5].real(),
                interval: [r[6].real(), r[7].real()],
                bracket: [r[8].real(), r[9].real()],
                stop_reason: text(10)?,
                answer: r[11].text().and_then(SearchAnswer::named).ok_or_else(bad)?,
                objective: text(12)?,
                goodput: r[13].real(),
                probes: r[14].int().ok_or_else(bad)?,
                partial: r[15].bool().ok_or_else(bad)?,
            })
        })
        .collect()
}

/// Every capacity series' key (of `plan`, or of every plan).
pub fn keys(driver: &dyn Driver, plan: Option<&str>) -> Result<Vec<SeriesKey>, HistoryError> {
    let (filter, params) = plan_filter("r.plan", plan);
    let rows = driver.query(
        &format!(
            "SELECT DISTINCT r.plan, s.search, s.target
             FROM searches s JOIN runs r ON r.id = s.run
             {filter}
             ORDER BY 1, 2, 3"
        ),
        &params,
    )?;
    rows.iter()
        .map(|r| {
            let text = |i: usize| r[i].string().ok_or_else(|| damaged(driver));
            Ok(SeriesKey {
                plan: text(0)?,
                phase: text(1)?,
                target: text(2)?,
                figure: CAPACITY.to_string(),
            })
        })
        .collect()
}

/// The capacities of one search across runs, oldest first: every search that found one
/// (lower bounds included, marked); a search with no passing probe has no value to draw.
pub fn series(driver: &dyn Driver, key: &SeriesKey) -> Result<Vec<Point>, HistoryError> {
    let rows = driver.query(
        "SELECT r.id, r.started_at, s.capacity, s.interval_lo, s.interval_hi, s.work_sha256,
            s.deployment_sha256, s.answer, s.partial, r.complete, r.excluded
         FROM searches s JOIN runs r ON r.id = s.run
         WHERE r.plan = $1 AND s.search = $2 AND s.target = $3 AND s.capacity IS NOT NULL
         ORDER BY r.started_at, r.id, s.ordinal",
        &[
            Cell::from(&key.plan),
            Cell::from(&key.phase),
            Cell::from(&key.target),
        ],
    )?;
    rows.iter()
        .map(|r| {
            let bad = || damaged(driver);
            let facts = PointFacts {
                client_bound: false,
                conditions: Conditions::default(),
            };
            let phase = std::sync::Arc::new(phase_facts(r, &bad, facts)?);
            let mut point = point(r, &bad, phase)?;
            point.search = Some(r[7].text().and_then(SearchAnswer::named).ok_or_else(bad)?);
            Ok(point)
        })
        .collect()
}
