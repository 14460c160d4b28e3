//! The store's tables, their version and the migrations between versions: a new store is
//! built by running every migration in order, an older one by running the ones it lacks,
//! and a store written by a newer servebench is refused untouched.

use super::super::HistoryError;
use super::sql::{Cell, Dialect, Driver, in_write_transaction};

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = 6;

/// The table that holds the version; its presence marks a servebench store.
const META: &str = "servebench_history";

/// The statements that take a store from version `n - 1` to `n`, for `n` = 1, 2, …
// SQL text, one statement list per version: splitting it would only scatter the schema.
#[allow(clippy::too_many_lines)]
fn migration(version: i64, dialect: Dialect) -> Vec<String> {
    match version {
        1 => vec![
            "CREATE TABLE runs (
                id TEXT PRIMARY KEY,
                run_id TEXT NOT NULL,
                record_key TEXT NOT NULL UNIQUE,
                plan TEXT NOT NULL,
                source TEXT NOT NULL,
                started_at TEXT NOT NULL,
                finished_at TEXT,
                complete BOOLEAN NOT NULL,
                stop_reason TEXT,
                tool TEXT NOT NULL,
                hostname TEXT,
                plan_sha256 TEXT,
                report_path TEXT,
                report_sha256 TEXT,
                records_path TEXT,
                records_sha256 TEXT,
                metadata TEXT NOT NULL,
                provenance TEXT,
                recorded_at TEXT NOT NULL,
                excluded TEXT
            )"
            .to_string(),
            "CREATE INDEX runs_by_plan ON runs (plan, started_at)".to_string(),
            "CREATE TABLE phases (
                run TEXT NOT NULL,
                ordinal BIGINT NOT NULL,
                phase TEXT NOT NULL,
                target TEXT NOT NULL,
                route TEXT NOT NULL,
                workload TEXT NOT NULL,
                concurrency BIGINT,
                rate_rps DOUBLE PRECISION,
                recheck_of TEXT,
                started_at TEXT NOT NULL,
                partial BOOLEAN NOT NULL,
                work_sha256 TEXT,
                deployment_sha256 TEXT NOT NULL,
                trust TEXT,
                trust_reasons TEXT NOT NULL,
                requests BIGINT NOT NULL,
                errors BIGINT NOT NULL,
                elapsed_s DOUBLE PRECISION NOT NULL,
                cached_token_ratio DOUBLE PRECISION,
                server_queue_share DOUBLE PRECISION,
                server_uptime_s DOUBLE PRECISION,
                split_requests BIGINT,
                split_client_queue_ms DOUBLE PRECISION,
                split_connect_ms DOUBLE PRECISION,
                split_tls_ms DOUBLE PRECISION,
                split_server_queue_ms DOUBLE PRECISION,
                split_server_prefill_ms DOUBLE PRECISION,
                split_server_decode_ms DOUBLE PRECISION,
                split_frontend_network_ms DOUBLE PRECISION,
                split_e2e_ms DOUBLE PRECISION,
                PRIMARY KEY (run, ordinal)
            )"
            .to_string(),
            "CREATE INDEX phases_by_name ON phases (phase, target)".to_string(),
            // The biggest table (one row per figure): kept in its key's order only.
            format!(
                "CREATE TABLE figures (
                    run TEXT NOT NULL,
                    ordinal BIGINT NOT NULL,
                    figure TEXT NOT NULL,
                    value DOUBLE PRECISION NOT NULL,
                    lo DOUBLE PRECISION,
                    hi DOUBLE PRECISION,
                    note TEXT,
                    PRIMARY KEY (run, ordinal, figure)
                ){}",
                dialect.clustered()
            ),
            "CREATE INDEX figures_by_name ON figures (figure, run)".to_string(),
            "CREATE TABLE errors (
                run TEXT NOT NULL,
                ordinal BIGINT NOT NULL,
                cause TEXT NOT NULL,
                kind TEXT NOT NULL,
                status BIGINT,
                count BIGINT NOT NULL,
                example TEXT NOT NULL,
                PRIMARY KEY (run, ordinal, cause)
            )"
            .to_string(),
        ],
        // Version 2: the alerts the trend analysis raises and people acknowledge, and tags
        // that baselines pick runs by.
        2 => vec![
            "ALTER TABLE runs ADD COLUMN tags TEXT NOT NULL DEFAULT '[]'".to_string(),
            format!(
                "CREATE TABLE alerts (
                id {},
                plan TEXT NOT NULL,
                phase TEXT NOT NULL,
                target TEXT NOT NULL,
                figure TEXT NOT NULL,
                opened_by TEXT NOT NULL,
                change_at TEXT NOT NULL,
                before_value DOUBLE PRECISION NOT NULL,
                after_value DOUBLE PRECISION NOT NULL,
                state TEXT NOT NULL,
                resolved_by TEXT,
                note TEXT
            )",
                dialect.serial_key()
            ),
        ],
        // Version 3: each run's capacity searches, one row per search.
        3 => vec![
            "CREATE TABLE searches (
                run TEXT NOT NULL,
                ordinal BIGINT NOT NULL,
                search TEXT NOT NULL,
                target TEXT NOT NULL,
                load_kind TEXT NOT NULL,
                work_sha256 TEXT,
                deployment_sha256 TEXT NOT NULL,
                capacity DOUBLE PRECISION,
                interval_lo DOUBLE PRECISION,
                interval_hi DOUBLE PRECISION,
                bracket_lo DOUBLE PRECISION,
                bracket_hi DOUBLE PRECISION,
                stop_reason TEXT NOT NULL,
                answer TEXT NOT NULL,
                objective TEXT NOT NULL,
                goodput DOUBLE PRECISION,
                probes BIGINT NOT NULL,
                partial BOOLEAN NOT NULL,
                PRIMARY KEY (run, ordinal)
            )"
            .to_string(),
            "CREATE INDEX searches_by_name ON searches (search, target)".to_string(),
        ],
        // Version 4: one alert per change (the series it moved kept as JSON), the plan's
        // `history:` section with each run. The per-figure alerts are grouped by
        // `regroup_alerts` into the new table, which then takes the old one's name.
        4 => vec![
            "ALTER TABLE runs ADD COLUMN history TEXT".to_string(),
            format!(
                "CREATE TABLE alerts_v4 (
                id {},
                plan TEXT NOT NULL,
                target TEXT NOT NULL,
                opened_by TEXT NOT NULL,
                change_at TEXT NOT NULL,
                moved TEXT NOT NULL,
                state TEXT NOT NULL,
                resolved_by TEXT,
                closed_at TEXT,
                superseded_by BIGINT,
                note TEXT,
                former_ids TEXT NOT NULL DEFAULT '[]'
            )",
                match dialect {
                    // Numbers never reused: an old number stays the alert's it was grouped into.
                    Dialect::Sqlite => "INTEGER PRIMARY KEY AUTOINCREMENT",
                    Dialect::Postgres => dialect.serial_key(),
                }
            ),
        ],
        5 => version_5(),
        // Version 6: kept reports compressed, about a tenth of their JSON (the rows move
        // in `compress_kept_reports`).
        6 => vec![format!(
            "CREATE TABLE kept_reports (
                run TEXT PRIMARY KEY,
                encoding TEXT NOT NULL,
                report {} NOT NULL
            )",
            dialect.bytes()
        )],
        _ => Vec::new(),
    }
}

/// Version 5: what a baseline gate needs without the run's files (the report with
/// a bounded sample of each phase's records), and what decides whether a
/// client-bound run's percentile still enters trends: the client's late share per
/// phase and each percentile's band of quantiles at q ± that share.
fn version_5() -> Vec<String> {
    vec![
        "CREATE TABLE reports (
            run TEXT PRIMARY KEY,
            report TEXT NOT NULL
        )"
        .to_string(),
        "ALTER TABLE phases ADD COLUMN late_share DOUBLE PRECISION".to_string(),
        "ALTER TABLE figures ADD COLUMN band_lo DOUBLE PRECISION".to_string(),
        "ALTER TABLE figures ADD COLUMN band_hi DOUBLE PRECISION".to_string(),
    ]
}

/// Version 5's kept reports, moved into version 6's table compressed, one at a time (a
/// large store holds gigabytes of them).
fn compress_kept_reports(driver: &dyn Driver) -> Result<(), HistoryError> {
    let runs = driver.query("SELECT run FROM reports ORDER BY run", &[])?;
    for run in runs.iter().filter_map(|r| r[0].string()) {
        let rows = driver.query(
            "SELECT report FROM reports WHERE run = $1",
            &[Cell::from(&run)],
        )?;
        let Some(report) = rows.first().and_then(|r| r[0].string()) else {
            continue;
        };
        driver.execute(
            "INSERT INTO kept_reports (run, encoding, report) VALUES ($1, $2, $3)",
            &[
                Cell::from(&run),
                Cell::from(crate::history::kept::ENCODING),
                Cell::from(crate::history::kept::pack(&report)),
            ],
        )?;
    }
    driver.execute("DROP TABLE reports", &[])?;
    Ok(())
}

/// Version 3's per-figure alerts as one alert per (plan, target, change run): numbered as
/// the group's lowest number (the others kept as its former numbers), acknowledged when
/// every unresolved member was, resolved when every member was, the reasons kept.
fn regroup_alerts(driver: &dyn Driver) -> Result<(), HistoryError> {
    let rows = driver.query(
        "SELECT id, plan, target, change_at, phase, figure, opened_by, before_value,
            after_value, state, resolved_by, note
         FROM alerts ORDER BY id",
        &[],
    )?;
    let last_number = rows.iter().filter_map(|r| r[0].int()).max();
    for ((plan, target, change_at), members) in alert_groups(rows) {
        insert_group(driver, &plan, &target, &change_at, &members)?;
    }
    driver.execute("DROP TABLE alerts", &[])?;
    driver.execute("ALTER TABLE alerts_v4 RENAME TO alerts", &[])?;
    // New alerts are numbered after every old number, former ones included, so an old
    // number never names two alerts.
    if let Some(last) = last_number {
        number_after(driver, last)?;
    }
    Ok(())
}

type AlertRow = Vec<Cell>;

/// Version 3's alert rows by (plan, target, change run), in order of their first number.
fn alert_groups(rows: Vec<AlertRow>) -> Vec<((String, String, String), Vec<AlertRow>)> {
    let mut groups: Vec<((String, String, String), Vec<AlertRow>)> = Vec::new();
    for row in rows {
        let key = (
            row[1].string().unwrap_or_default(),
            row[2].string().unwrap_or_default(),
            row[3].string().unwrap_or_default(),
        );
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(row),
            None => groups.push((key, vec![row])),
        }
    }
    groups
}

/// One group as a version 4 alert: the lowest number, the others kept as former numbers.
fn insert_group(
    driver: &dyn Driver,
    plan: &str,
    target: &str,
    change_at: &str,
    members: &[AlertRow],
) -> Result<(), HistoryError> {
    let moved: Vec<serde_json::Value> = members
        .iter()
        .map(|r| {
            serde_json::json!({
                "phase": r[4].string(),
                "figure": r[5].string(),
                "change_at": change_at,
                "before": r[7].real(),
                "after": r[8].real(),
            })
        })
        .collect();
    let mut notes: Vec<String> = members.iter().filter_map(|r| r[11].string()).collect();
    notes.dedup();
    let ids: Vec<i64> = members.iter().filter_map(|r| r[0].int()).collect();
    let resolved_by = members.iter().find_map(|r| r[10].string());
    driver.execute(
        "INSERT INTO alerts_v4 (id, plan, target, opened_by, change_at, moved, state,
            resolved_by, note, former_ids)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        &[
            Cell::from(ids[0]),
            Cell::from(plan),
            Cell::from(target),
            Cell::from(members[0][6].string().unwrap_or_default()),
            Cell::from(change_at),
            Cell::from(serde_json::Value::from(moved).to_string()),
            Cell::from(group_state(members)),
            Cell::from(resolved_by),
            Cell::from((!notes.is_empty()).then(|| notes.join("; "))),
            Cell::from(serde_json::Value::from(ids[1..].to_vec()).to_string()),
        ],
    )?;
    Ok(())
}

/// Resolved when every member was, acknowledged when every unresolved member was.
fn group_state(members: &[AlertRow]) -> &'static str {
    let state_of = |r: &AlertRow| r[9].string().unwrap_or_default();
    let unresolved: Vec<&AlertRow> = members
        .iter()
        .filter(|r| state_of(r) != "resolved")
        .collect();
    if unresolved.is_empty() {
        "resolved"
    } else if unresolved.iter().all(|r| state_of(r) == "acknowledged") {
        "acknowledged"
    } else {
        "open"
    }
}

/// New alert numbers start after `last`.
fn number_after(driver: &dyn Driver, last: i64) -> Result<(), HistoryError> {
    match driver.dialect() {
        Dialect::Postgres => {
            driver.query(
                "SELECT setval(pg_get_serial_sequence('alerts', 'id'), $1)",
                &[Cell::from(last)],
            )?;
        }
        Dialect::Sqlite => {
            driver.execute(
                "UPDATE sqlite_sequence SET seq = $1 WHERE name = 'alerts'",
                &[Cell::from(last)],
            )?;
        }
    }
    Ok(())
}

/// The store's version: `None` for an empty database.
pub(super) fn stored_version(driver: &dyn Driver) -> Result<Option<i64>, HistoryError> {
    let tables = user_tables(driver)?;
    if tables.is_empty() {
        return Ok(None);
    }
    if !tables.iter().any(|t| t == META) {
        return Err(HistoryError::Corrupt {
            location: driver.location().to_string(),
            detail: format!(
                "holds tables ({}) but is not a servebench history store",
                tables.join(", ")
            ),
        });
    }
    let rows = driver.query(
        &format!("SELECT value FROM {META} WHERE key = 'schema_version'"),
        &[],
    )?;
    let version = rows
        .first()
        .and_then(|r| r.first())
        .and_then(Cell::text)
        .and_then(|v| v.parse::<i64>().ok());
    match version {
        Some(v) => Ok(Some(v)),
        None => Err(HistoryError::Corrupt {
            location: driver.location().to_string(),
            detail: "the history store has no readable schema version".to_string(),
        }),
    }
}

fn user_tables(driver: &dyn Driver) -> Result<Vec<String>, HistoryError> {
    let sql = match driver.dialect() {
        Dialect::Sqlite => {
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        }
        Dialect::Postgres => {
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1"
        }
    };
    Ok(driver
        .query(sql, &[])?
        .into_iter()
        .filter_map(|r| r.first().and_then(Cell::string))
        .collect())
}

/// Bring the store to [`SCHEMA_VERSION`] (creating it when empty); refuse a newer one.
/// Each step runs in the write transaction, so concurrent openers migrate once.
pub fn prepare(driver: &dyn Driver) -> Result<(), HistoryError> {
    prepare_to(driver, SCHEMA_VERSION)
}

/// [`prepare`] up to `target` (tests build older stores with it).
pub fn prepare_to(driver: &dyn Driver, target: i64) -> Result<(), HistoryError> {
    let newer = |found| HistoryError::NewerSchema {
        location: driver.location().to_string(),
        found,
        supported: SCHEMA_VERSION,
    };
    // Checked before taking the write lock: a reader of a current store never waits.
    match stored_version(driver)? {
        Some(v) if v > SCHEMA_VERSION => return Err(newer(v)),
        Some(v) if v >= target => return Ok(()),
        _ => {}
    }
    in_write_transaction(driver, || {
        let current = stored_version(driver)?;
        if let Some(v) = current
            && v > SCHEMA_VERSION
        {
            return Err(newer(v));
        }
        if current.is_none() {
            driver.execute(
                &format!("CREATE TABLE {META} (key TEXT PRIMARY KEY, value TEXT NOT NULL)"),
                &[],
            )?;
            driver.execute(
                &format!("INSERT INTO {META} (key, value) VALUES ('schema_version', '0')"),
                &[],
            )?;
            driver.execute(
                &format!("INSERT INTO {META} (key, value) VALUES ('created_by', $1)"),
                &[Cell::from(format!(
                    "servebench {}",
                    env!("CARGO_PKG_VERSION")
                ))],
            )?;
        }
        for version in current.unwrap_or(0) + 1..=target {
            for statement in migration(version, driver.dialect()) {
                driver.execute(&statement, &[])?;
            }
            if version == 4 {
                regroup_alerts(driver)?;
            }
            if version == 6 {
                compress_kept_reports(driver)?;
            }
        }
        driver.execute(
            &format!("UPDATE {META} SET value = $1 WHERE key = 'schema_version'"),
            &[Cell::from(target.max(current.unwrap_or(0)).to_string())],
        )?;
        Ok(())
    })
}

/// Mark the store as written by version `version` (tests of the newer-store refusal).
pub fn set_version(driver: &dyn Driver, version: i64) -> Result<(), HistoryError> {
    driver.execute(
        &format!("UPDATE {META} SET value = $1 WHERE key = 'schema_version'"),
        &[Cell::from(version.to_string())],
    )?;
    Ok(())
}

/// Every table of the store, in the order an export writes them.
pub const TABLES: [&str; 6] = ["runs", "phases", "figures", "errors", "searches", "alerts"];

/// The key columns that order a table's rows in an export.
pub fn order_by(table: &str) -> &'static str {
    match table {
        "runs" => "started_at, id",
        "phases" => "run, ordinal",
        "figures" => "run, ordinal, figure",
        "errors" => "run, ordinal, cause",
        "searches" => "run, ordinal",
        _ => "id",
    }
}
