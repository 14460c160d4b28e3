//! Command handling: argument types, dispatch, printing and exit codes for every verb.
//!
//! One file per verb. Domain modules return values and errors; only this module prints them
//! and turns them into exit codes ([`crate::exit`]).

mod args;
mod compare;
mod completions;
mod expand;
pub mod history;
mod init;
mod merge;
mod recover;
mod report;
mod run;
mod schema;
mod selftest;
mod sim;
mod validate;

use std::io::Write as _;
use std::path::Path;

use clap::{Parser, Subcommand};

pub use args::ExpandArgs;
pub use compare::{CompareArgs, CompareFormat};
pub use completions::CompletionsArgs;
pub use expand::{ExpandCommandArgs, ExpandFormat};
pub use history::{HistoryArgs, HistoryCommand};
pub use init::InitArgs;
pub use merge::MergeArgs;
pub use recover::RecoverArgs;
pub use report::ReportArgs;
pub use run::RunArgs;
pub use schema::{SchemaArgs, SchemaKind};
pub use selftest::SelftestCommandArgs;
pub use sim::SimArgs;
pub use validate::ValidateArgs;

use crate::exit::Exit;

#[derive(Debug, Parser)]
#[command(
    name = "servebench",
    version,
    about = "Benchmark plans for OpenAI-compatible LLM endpoints",
    after_help = Exit::help_text()
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check plans against the schema and the semantic rules; exit 2 on any problem.
    Validate(ValidateArgs),
    /// Write a starter plan for a server (or the simulator): model, tokenizer and metrics
    /// found by probing, a warmup, a short sweep and a recheck.
    Init(InitArgs),
    /// Print the concrete plan: variables, matrix, defaults and rechecks resolved.
    Expand(ExpandCommandArgs),
    /// Print the JSON schema of plans or reports.
    Schema(SchemaArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Run a plan (or re-run the plan embedded in a report.json) and write one combined report.
    Run(RunArgs),
    /// Render a report (servebench JSON or a seed format) as markdown, HTML, CSV, JSON, or a
    /// seed format (`anvil` per phase, `gateway` for the whole run).
    Report(ReportArgs),
    /// Compare two reports phase by phase; exit 1 when a --gate fails.
    Compare(CompareArgs),
    /// Serve the OpenAI-compatible simulator until Ctrl-C.
    Sim(SimArgs),
    /// Measure the client itself against the in-process zero-delay simulator: requests/s,
    /// events/s, CPU per event, peak RSS, timing error and open-loop send lag.
    Selftest(SelftestCommandArgs),
    /// Merge the reports of a sharded run (`run --shard I/N`) into one report.
    Merge(MergeArgs),
    /// Rebuild a killed run's report.json and its records (the Parquet parts under requests/,
    /// listed in requests/_manifest.json) from its parts and journal.
    Recover(RecoverArgs),
    /// The results history across runs: list, show, series, record, import, export,
    /// exclude, retain, tag; trends, alerts, gates and baselines.
    History(HistoryArgs),
}

/// Run the parsed command; how it ended ([`Exit::code`] is the process exit code).
pub fn run(cli: Cli) -> Exit {
    match cli.command {
        Command::Validate(args) => validate::run(&args),
        Command::Init(args) => init::run(&args),
        Command::Expand(args) => expand::run(&args),
        Command::Schema(args) => schema::run(&args),
        Command::Completions(args) => completions::run(&args),
        Command::Run(args) => run::run(args),
        Command::Report(args) => report::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Sim(args) => sim::run(args),
        Command::Selftest(args) => selftest::run(&args),
        Command::Merge(args) => merge::run(&args),
        Command::Recover(args) => recover::run(&args),
        Command::History(args) => history::run(&args),
    }
}

/// Write a command's output to `output`, atomically, or to stdout.
fn emit(text: &str, output: Option<&Path>) -> Exit {
    let result = match output {
        Some(path) => {
            crate::report::write_atomic(path, text).map_err(|e| format!("{}: {e}", path.display()))
        }
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .map_err(|e| format!("stdout: {e}")),
    };
    match result {
        Ok(()) => Exit::Success,
        Err(e) => {
            eprintln!("error: cannot write {e}");
            Exit::RunFailed
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn arguments_are_consistent() {
        Cli::command().debug_assert();
    }
}
