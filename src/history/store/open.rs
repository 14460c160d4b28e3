//! Where the store is (`--history PATH|URL`, `SERVEBENCH_HISTORY`, or `runs/history.sqlite`
//! under the current directory) and opening it: the backend the location names, brought to the current schema.

use std::fmt;
use std::path::{Path, PathBuf};

use super::super::HistoryError;
use super::model::{Retention, RunFilter, RunSummary, Store, StoredRun, Table};
use super::postgres::{Postgres, redact};
use super::sql::Driver;
use super::sqlite::Sqlite;
use super::{read, schema, write};
use crate::history::kept::Kept;
use crate::history::record::RunRows;
use crate::history::series::{Alert, Point, RunId, SeriesKey};
use crate::plan::model::HistorySettings;

/// The environment variable that names the store when `--history` does not.
pub const HISTORY_ENV: &str = "SERVEBENCH_HISTORY";

/// The store's file name beside the runs.
pub const DEFAULT_FILE: &str = "history.sqlite";

/// A store's location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// A `postgres://` or `postgresql://` URL.
    Postgres(String),
}

impl Location {
    /// A URL with a PostgreSQL scheme, else a file path.
    pub fn parse(text: &str) -> Location {
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            Location::Postgres(text.to_string())
        } else {
            Location::Sqlite(PathBuf::from(text))
        }
    }

    /// `--history` when given, else `SERVEBENCH_HISTORY`, else `history.sqlite` in
    /// `runs_dir` (`runs/` under the current directory, for every command).
    pub fn resolve(flag: Option<&str>, runs_dir: &Path) -> Location {
        let from_env = std::env::var(HISTORY_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty());
        match flag.map(str::to_string).or(from_env) {
            Some(text) => Location::parse(&text),
            None => Location::Sqlite(runs_dir.join(DEFAULT_FILE)),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

/// Whether opening may create the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Recording: a missing SQLite file (and an empty database) is created.
    Create,
    /// Reading: a missing SQLite file is an error, not a new empty store.
    Existing,
}

/// Open the store at `location`, at the current schema version.
pub fn open(location: &Location, mode: OpenMode) -> Result<SqlStore, HistoryError> {
    open_at_version(location, mode, schema::SCHEMA_VERSION)
}

/// [`open`], migrating no further than `version` (tests build older stores with it).
pub fn open_at_version(
    location: &Location,
    mode: OpenMode,
    version: i64,
) -> Result<SqlStore, HistoryError> {
    let driver: Box<dyn Driver> = match location {
        Location::Sqlite(path) => Box::new(Sqlite::open(path, mode == OpenMode::Create)?),
        Location::Postgres(url) => Box::new(Postgres::connect(url)?),
    };
    schema::prepare_to(driver.as_ref(), version)?;
    let version = schema::stored_version(driver.as_ref())?.unwrap_or(version);
    Ok(SqlStore { driver, version })
}

/// A store on either backend: the one SQL text over a driver.
pub struct SqlStore {
    driver: Box<dyn Driver>,
    /// Its schema version: a store older than 6 (tests build them) keeps no reports, and
    /// one older than 5 no late bands.
    version: i64,
}

impl SqlStore {
    pub fn location(&self) -> &str {
        self.driver.location()
    }

    /// The store's driver, for tests that set up unusual states (an older or newer schema).
    pub fn driver(&self) -> &dyn Driver {
        self.driver.as_ref()
    }
}

impl Store for SqlStore {
    fn record_rows(&mut self, rows: &RunRows) -> Result<RunId, HistoryError> {
        self.record_kept(rows, &Kept::default())
    }

    fn record_kept(&mut self, rows: &RunRows, kept: &Kept) -> Result<RunId, HistoryError> {
        // A store built at an older version by a test keeps no report (before 6) and no
        // late bands (before 5).
        let bands_only;
        let kept = match self.version {
            6.. => Some(kept),
            5 => {
                bands_only = Kept {
                    report: None,
                    bands: kept.bands.clone(),
                };
                Some(&bands_only)
            }
            _ => None,
        };
        write::record(self.driver.as_ref(), rows, kept)
    }

    fn kept_report(&self, id: &str) -> Result<Option<String>, HistoryError> {
        if self.version < 6 {
            return Ok(None);
        }
        read::kept_report(self.driver.as_ref(), id)
    }

    fn runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, HistoryError> {
        read::runs(self.driver.as_ref(), filter)
    }

    fn run(&self, id: &str) -> Result<StoredRun, HistoryError> {
        read::run(self.driver.as_ref(), id)
    }

    fn plans(&self) -> Result<Vec<String>, HistoryError> {
        read::plans(self.driver.as_ref())
    }

    fn keys(&self, plan: Option<&str>) -> Result<Vec<SeriesKey>, HistoryError> {
        read::keys(self.driver.as_ref(), plan)
    }

    fn series(&self, key: &SeriesKey) -> Result<Vec<Point>, HistoryError> {
        read::series(self.driver.as_ref(), key)
    }

    fn plan_series(&self, plan: &str) -> Result<Vec<(SeriesKey, Vec<Point>)>, HistoryError> {
        read::plan_series(self.driver.as_ref(), plan)
    }

    fn exclude(&mut self, run: &str, reason: &str) -> Result<(), HistoryError> {
        write::exclude(self.driver.as_ref(), run, reason)
    }

    fn tag(&mut self, run: &str, tag: &str) -> Result<(), HistoryError> {
        write::tag(self.driver.as_ref(), run, tag)
    }

    fn alerts(&self, plan: Option<&str>) -> Result<Vec<Alert>, HistoryError> {
        read::alerts(self.driver.as_ref(), plan)
    }

    fn save_alerts(&mut self, alerts: &[Alert]) -> Result<Vec<i64>, HistoryError> {
        write::save_alerts(self.driver.as_ref(), alerts)
    }

    fn plan_history(&self, plan: &str) -> Result<Option<HistorySettings>, HistoryError> {
        read::plan_history(self.driver.as_ref(), plan)
    }

    fn retain(&mut self, policy: &Retention) -> Result<Vec<RunId>, HistoryError> {
        write::retain(self.driver.as_ref(), policy, self.version)
    }

    fn tables(&self) -> Result<Vec<Table>, HistoryError> {
        read::tables(self.driver.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_url_names_postgres_and_anything_else_a_file() {
        assert_eq!(
            Location::parse("postgresql://u@h/db"),
            Location::Postgres("postgresql://u@h/db".into())
        );
        assert_eq!(
            Location::parse("POSTGRES://u@h/db"),
            Location::Postgres("POSTGRES://u@h/db".into())
        );
        assert_eq!(
            Location::parse("runs/history.sqlite"),
            Location::Sqlite("runs/history.sqlite".into())
        );
        // A password never reaches a message.
        let shown = Location::parse("postgres://bench:s3cret@db:5432/b").to_string();
        assert_eq!(shown, "postgres://bench:***@db:5432/b");
    }

    #[test]
    fn the_flag_wins_then_the_default_beside_the_runs() {
        // The variable is read from the process environment, so only the flag and the
        // default are checked here (the CLI tests cover the variable in a child process).
        if std::env::var_os(HISTORY_ENV).is_some() {
            return;
        }
        assert_eq!(
            Location::resolve(Some("x.sqlite"), Path::new("runs")),
            Location::Sqlite("x.sqlite".into())
        );
        assert_eq!(
            Location::resolve(None, Path::new("out")),
            Location::Sqlite(Path::new("out").join(DEFAULT_FILE))
        );
    }
}
