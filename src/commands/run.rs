//! `servebench run`: build the runtime, run the plan, map the outcome to an exit code.

use std::path::PathBuf;

use super::ExpandArgs;
use crate::exit::Exit;
use crate::runner::{RunError, RunOptions};
use crate::scheduler::progress::ProgressMode;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Plan file (YAML, TOML or JSON), or a report.json to repeat.
    pub plan: PathBuf,
    #[command(flatten)]
    pub expand: ExpandArgs,
    /// Directory for report.json, the records (requests/) and the journal [default:
    /// runs/<plan>-<UTC time>/].
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// The old spelling of --output.
    #[arg(long, value_name = "DIR", hide = true, conflicts_with = "output")]
    pub out: Option<PathBuf>,
    /// Run only these phases, in plan order (the name `report --phase` and `history
    /// series --phase` take).
    #[arg(long = "phase", value_name = "PHASE", num_args = 1..)]
    pub phase: Vec<String>,
    /// The old spelling of --phase.
    #[arg(long, value_name = "PHASE", num_args = 1.., hide = true, conflicts_with = "phase")]
    pub only: Vec<String>,
    /// Print the schedule without sending anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Print only warnings, errors and the `report:` line: no progress, phase lines or
    /// notes.
    #[arg(long, short)]
    pub quiet: bool,
    /// Skip measuring this machine's client ceiling before the first phase.
    #[arg(long)]
    pub no_calibrate: bool,
    /// Let idle CPUs sleep deeply: do not hold /dev/cpu_dma_latency at 0 µs during the run.
    #[arg(long)]
    pub no_latency_hint: bool,
    /// Keep the client's threads polling instead of sleeping between events: finer timings
    /// where wakeups are slow, at the cost of a busy core per runtime worker.
    #[arg(long)]
    pub busy_poll: bool,
    /// Run shard I of N (0-based): this machine's share of every phase's load.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<crate::shard::ShardSpec>,
    /// Start phase k at this RFC 3339 time plus its planned offset, so shards stay aligned.
    #[arg(long, value_name = "RFC3339", value_parser = crate::shard::parse_start_at)]
    pub start_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Salt the prompts with this value instead of a fresh one, so a rerun sends what the
    /// run with this salt sent (and may meet the server's cache of it).
    #[arg(long, value_name = "VALUE", value_parser = parse_salt)]
    pub salt: Option<String>,
    /// Records each phase's report keeps; a longer phase keeps a seeded sample of this many
    /// (its figures still cover every request).
    #[arg(long, value_name = "N", default_value_t = crate::runner::collect::DEFAULT_KEEP_RECORDS as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub keep_records: u64,
    /// How often a rolling summary line goes to the journal.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_interval)]
    pub summary_every: std::time::Duration,
    /// Records per closed Parquet part in requests/; the journal holds at most about this
    /// many records (those no closed part holds yet).
    #[arg(long, value_name = "N", default_value_t = crate::report::formats::records::DEFAULT_PART_ROWS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub part_rows: u64,
    /// Record the finished run here: a SQLite file or a postgres:// URL [default:
    /// $SERVEBENCH_HISTORY, else runs/history.sqlite under the current directory, wherever
    /// -o puts the run].
    #[arg(long, value_name = "PATH|URL", conflicts_with = "no_history")]
    pub history: Option<String>,
    /// Do not record the run in the history.
    #[arg(long)]
    pub no_history: bool,
}

fn parse_salt(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err("must not be empty".to_string());
    }
    Ok(text.to_string())
}

fn parse_interval(text: &str) -> Result<std::time::Duration, String> {
    let d = humantime::parse_duration(text).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err("must be longer than zero".to_string());
    }
    Ok(d)
}

impl RunArgs {
    /// The runner's options for these arguments.
    pub fn options(&self) -> RunOptions {
        RunOptions {
            plan: self.plan.clone(),
            expand: self.expand.options(),
            out_dir: super::args::renamed(
                self.output.clone(),
                self.out.clone(),
                "--out",
                "-o/--output",
            ),
            only: super::args::renamed(
                (!self.phase.is_empty()).then(|| self.phase.clone()),
                (!self.only.is_empty()).then(|| self.only.clone()),
                "--only",
                "--phase",
            )
            .unwrap_or_default(),
            dry_run: self.dry_run,
            calibrate: !self.no_calibrate,
            latency_hint: !self.no_latency_hint,
            busy_poll: self.busy_poll,
            progress: if self.quiet {
                ProgressMode::Quiet
            } else {
                ProgressMode::Auto
            },
            shard: self.shard,
            start_at: self.start_at,
            salt: self.salt.clone(),
            long_run: crate::runner::LongRunOptions {
                keep_records: self.keep_records as usize,
                summary_every: self.summary_every,
                part_rows: self.part_rows,
            },
        }
    }
}

/// How to give a shard's prompts the salt the other shards use, when nothing shares one: a
/// shard run without `--salt` or `--start-at` draws its own (merge records each).
fn shard_salt_note(args: &RunArgs) -> Option<String> {
    let shard = args.shard.filter(|s| s.count > 1)?;
    if args.salt.is_some() || args.start_at.is_some() {
        return None;
    }
    Some(format!(
        "note: shard {}/{} draws its own prompt salt, so the shards' salts will differ \
         (merge records each); to share one, give every shard the same --salt VALUE, or the \
         same --start-at TIME",
        shard.index, shard.count
    ))
}

/// Phases that sent requests and had every one fail, without the plan expecting it.
fn failed_phases(report: Option<&crate::report::Report>) -> Vec<String> {
    let Some(report) = report else {
        return Vec::new();
    };
    let settings = crate::schedule::resolve(&report.plan).unwrap_or_default();
    let expected = |name: &str| {
        settings.iter().any(|s| {
            s.expect_errors && (s.name == name || name.starts_with(&format!("{}/", s.name)))
        })
    };
    report
        .phases
        .iter()
        .filter(|p| p.summary.requests > 0 && p.summary.errors == p.summary.requests)
        .filter(|p| !expected(&p.header.phase))
        .map(|p| p.header.phase.clone())
        .collect()
}

pub fn run(args: RunArgs) -> Exit {
    if let Some(note) = shard_salt_note(&args).filter(|_| !args.quiet) {
        eprintln!("{note}");
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return Exit::RunFailed;
        }
    };
    let outcome = runtime.block_on(crate::runner::run(args.options()));
    // Recorded after the runtime is done with; sharded runs record their merged report.
    if let Ok(crate::runner::RunOutcome {
        report: Some(report),
        report_path: Some(path),
        ..
    }) = &outcome
        && !args.no_history
        && args.shard.is_none()
    {
        super::history::record::after_run(args.history.as_deref(), report, path, args.quiet);
    }
    match outcome {
        // A target that went down ended the run; its partial report is written (and recorded
        // as partial, out of the trends).
        Ok(crate::runner::RunOutcome {
            target_down: Some(why),
            ..
        }) => {
            eprintln!("error: {why}; the report is partial");
            Exit::RunFailed
        }
        // An interrupted run wrote a partial report; it still did not finish.
        Ok(outcome) if outcome.interrupted => Exit::RunFailed,
        Ok(outcome) if !failed_phases(outcome.report.as_ref()).is_empty() => {
            let names = failed_phases(outcome.report.as_ref()).join("`, `");
            eprintln!(
                "error: every request failed in phase `{names}` (set `expect_errors: true` on a \
                 phase whose requests are meant to fail)"
            );
            Exit::RunFailed
        }
        // A search that stopped client-bound or indeterminate did not answer its question.
        Ok(outcome)
            if outcome
                .report
                .as_ref()
                .is_some_and(|r| r.searches.iter().any(|s| s.lower_bound)) =>
        {
            Exit::Inconclusive
        }
        Ok(_) => Exit::Success,
        Err(e) => {
            match &e {
                // Plan diagnostics carry their own `error:` lines.
                RunError::InvalidPlan(errors) => eprintln!("{errors}"),
                RunError::InvalidInput(_) | RunError::Failed(_) | RunError::TargetDown(_) => {
                    eprintln!("error: {e}")
                }
            }
            e.exit_code()
        }
    }
}
