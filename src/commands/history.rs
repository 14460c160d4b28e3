//! `servebench history`: the results store across runs. The subcommand enum, where the store
//! is, and the output every subcommand shares; one file per subcommand under `history/`.

mod ack;
mod baseline;
mod export;
mod gate;
mod import;
mod list;
pub(super) mod record;
mod retain;
mod series;
mod show;
mod trend;

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};

use crate::exit::Exit;
use crate::history::{HistoryError, Location, OpenMode, Store, store::SqlStore};

pub use ack::AckArgs;
pub use baseline::BaselineArgs;
pub use export::ExportArgs;
pub use gate::GateArgs;
pub use import::ImportArgs;
pub use list::ListArgs;
pub use record::RecordArgs;
pub use retain::RetainArgs;
pub use series::SeriesArgs;
pub use show::ShowArgs;
pub use trend::TrendArgs;

/// Where the runs go by default (`runs/<run id>/`), and so the default store beside them.
pub const RUNS_DIR: &str = "runs";

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The store: a SQLite file or a postgres:// URL [default: $SERVEBENCH_HISTORY, else
    /// runs/history.sqlite].
    #[arg(long, global = true, value_name = "PATH|URL")]
    pub history: Option<String>,
    #[command(subcommand)]
    pub command: HistoryCommand,
}

#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// List recorded runs, oldest first.
    List(ListArgs),
    /// Show one run: where and what it ran, its phases and errors.
    Show(ShowArgs),
    /// Print one figure's series for a phase: every run's value, interval and marks.
    Series(SeriesArgs),
    /// Record servebench reports (a run records its own unless --no-history).
    Record(RecordArgs),
    /// Import servebench reports, the seeds' formats, AIPerf exports and vLLM bench serve
    /// results.
    Import(ImportArgs),
    /// Write every table to a directory, as Parquet or CSV files.
    Export(ExportArgs),
    /// Mark a run as excluded from trends, with a reason.
    Exclude(ExcludeArgs),
    /// Name a run (`v1.2`, `before-upgrade`) so a baseline can pick it; the name moves from
    /// whichever run of the plan held it.
    Tag(TagArgs),
    /// Delete old runs: keep the newest N per plan and/or drop those before a time.
    Retain(RetainArgs),
    /// Render the trend report: open alerts, provenance changes and each series' changes
    /// (markdown for a PR comment, or one offline HTML file with a chart per figure).
    Trend(TrendArgs),
    /// Exit 5 while an alert is open, or 1 when the latest run fails the gates against a
    /// named baseline.
    Gate(GateArgs),
    /// Acknowledge alerts (by number, or every open one of a plan with --plan P --all) with a
    /// reason: they stay listed but no longer fail the gate.
    Ack(AckArgs),
    /// List the baselines of a baselines file and the run each names.
    Baseline(BaselineArgs),
}

#[derive(Debug, Args)]
pub struct ExcludeArgs {
    /// The run's id (see `history list`).
    pub run: String,
    /// Why the run does not belong in the trends.
    #[arg(long)]
    pub reason: String,
}

#[derive(Debug, Args)]
pub struct TagArgs {
    /// The run's id (see `history list`).
    pub run: String,
    /// The name.
    pub tag: String,
}

/// The output format of the listing subcommands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Md,
    Json,
}

impl HistoryCommand {
    /// The plan a reading subcommand's `--plan` names (an import's names the plan it
    /// creates, so it is not here).
    fn plan(&self) -> Option<&str> {
        match self {
            HistoryCommand::List(a) => a.plan.as_deref(),
            HistoryCommand::Series(a) => Some(&a.plan),
            HistoryCommand::Trend(a) => a.plan.as_deref(),
            HistoryCommand::Gate(a) => a.plan.as_deref(),
            HistoryCommand::Baseline(a) => Some(&a.plan),
            HistoryCommand::Ack(a) => a.plan.as_deref(),
            _ => None,
        }
    }
}

pub fn run(args: &HistoryArgs) -> Exit {
    let location = Location::resolve(args.history.as_deref(), Path::new(RUNS_DIR));
    // A plan the store holds no run of is a typo, not an empty history: a gate must not pass.
    if let Some(plan) = args.command.plan() {
        let known = open(&location, OpenMode::Existing)
            .and_then(|store| crate::history::require_plan(&store, plan, &location.to_string()));
        if let Err(e) = known {
            return fail(&e);
        }
    }
    match &args.command {
        HistoryCommand::List(a) => list::run(&location, a),
        HistoryCommand::Show(a) => show::run(&location, a),
        HistoryCommand::Series(a) => series::run(&location, a),
        HistoryCommand::Record(a) => record::run(&location, a),
        HistoryCommand::Import(a) => import::run(&location, a),
        HistoryCommand::Export(a) => export::run(&location, a),
        HistoryCommand::Exclude(a) => exclude(&location, a),
        HistoryCommand::Tag(a) => tag(&location, a),
        HistoryCommand::Retain(a) => retain::run(&location, a),
        HistoryCommand::Trend(a) => with_store(&location, |s| trend::run(a, s)),
        HistoryCommand::Gate(a) => with_store(&location, |s| gate::run(a, s)),
        HistoryCommand::Ack(a) => with_store(&location, |s| ack::run(a, s)),
        HistoryCommand::Baseline(a) => with_store(&location, |s| baseline::run(a, s)),
    }
}

/// Open the existing store at `location` and run `f` on it (each write it makes is its own
/// transaction).
fn with_store(location: &Location, f: impl FnOnce(&mut dyn Store) -> Exit) -> Exit {
    match open(location, OpenMode::Existing) {
        Ok(mut store) => f(&mut store),
        Err(e) => fail(&e),
    }
}

fn exclude(location: &Location, args: &ExcludeArgs) -> Exit {
    let result = open(location, OpenMode::Existing)
        .and_then(|mut store| store.exclude(&args.run, &args.reason));
    match result {
        Ok(()) => {
            eprintln!("excluded {}: {}", args.run, args.reason);
            Exit::Success
        }
        Err(e) => fail(&e),
    }
}

fn tag(location: &Location, args: &TagArgs) -> Exit {
    let result =
        open(location, OpenMode::Existing).and_then(|mut store| store.tag(&args.run, &args.tag));
    match result {
        Ok(()) => {
            eprintln!("tagged {} `{}`", args.run, args.tag);
            Exit::Success
        }
        Err(e) => fail(&e),
    }
}

fn open(location: &Location, mode: OpenMode) -> Result<SqlStore, HistoryError> {
    crate::history::open(location, mode)
}

/// Print `e`; the exit code for it: 2 for what the user asked or gave, 3 when the store
/// could not be used.
fn fail(e: &HistoryError) -> Exit {
    eprintln!("error: {e}");
    match e {
        HistoryError::UnknownRun(_)
        | HistoryError::UnknownPlan { .. }
        | HistoryError::UnknownAlert(_)
        | HistoryError::Invalid(_)
        | HistoryError::File { .. } => Exit::InvalidInput,
        HistoryError::Open { .. }
        | HistoryError::Corrupt { .. }
        | HistoryError::NewerSchema { .. }
        | HistoryError::Database { .. }
        | HistoryError::Unsupported(_) => Exit::RunFailed,
    }
}

/// `value` as pretty JSON with a final newline.
fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value)
        .map_or_else(|e| format!("{{\"error\": \"{e}\"}}"), |s| s + "\n")
}

/// A markdown table; cells have `|` escaped.
fn md_table(head: &[&str], rows: &[Vec<String>]) -> String {
    let escape = |s: &str| s.replace('|', "\\|");
    let mut out = format!("| {} |\n", head.join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(head.len())));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| escape(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// A time option's value (`--since`, `--started-at`): an RFC 3339 time, or a plain date for
/// its 00:00 UTC; as the store keeps times (UTC, milliseconds, `Z`).
fn time_arg(text: &str) -> Result<String, String> {
    crate::history::store::normalize_time(text)
        .or_else(|| {
            let date = chrono::NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").ok()?;
            let midnight = date.and_hms_opt(0, 0, 0)?.and_utc();
            Some(midnight.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        })
        .ok_or_else(|| {
            format!(
                "expected an RFC 3339 time (2026-12-06T09:00:00Z) or a date (2026-12-06, its \
                 00:00 UTC), found `{text}`"
            )
        })
}

/// The output file argument every subcommand takes.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    #[arg(long, value_enum, default_value = "md")]
    pub format: OutputFormat,
    /// Write here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::time_arg;

    #[test]
    fn a_time_option_takes_a_time_or_a_plain_date() {
        assert_eq!(time_arg("2026-12-06").unwrap(), "2026-12-06T00:00:00.000Z");
        assert_eq!(
            time_arg("2026-12-06T10:00:00+01:00").unwrap(),
            "2026-12-06T09:00:00.000Z"
        );
        assert!(time_arg("2026-13-06").unwrap_err().contains("or a date"));
        assert!(time_arg("yesterday").is_err());
    }
}
