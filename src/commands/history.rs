//! `servebench history …`: the subcommands over the results store, and opening it.

mod ack;
mod baseline;
mod gate;
mod trend;

use std::path::{Path, PathBuf};

pub use ack::AckArgs;
pub use baseline::BaselineArgs;
pub use gate::GateArgs;
pub use trend::TrendArgs;

use crate::exit::Exit;
use crate::history::store::{MemoryStore, Store};

#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    /// The results store.
    #[arg(long, env = "SERVEBENCH_HISTORY", value_name = "FILE", global = true)]
    pub history: Option<PathBuf>,
    #[command(subcommand)]
    pub command: HistoryCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum HistoryCommand {
    /// Render the trend report: open alerts, provenance changes and each series' changes
    /// (markdown for a PR comment, or one offline HTML file with a chart per figure).
    Trend(TrendArgs),
    /// Exit 1 while an alert is open, or when the latest run fails the gates against a
    /// named baseline.
    Gate(GateArgs),
    /// Acknowledge an alert with a reason: it stays listed but no longer fails the gate.
    Ack(AckArgs),
    /// List the baselines of a baselines file and the run each names.
    Baseline(BaselineArgs),
}

pub fn run(args: &HistoryArgs) -> Exit {
    let Some(path) = args.history.as_deref() else {
        eprintln!("error: name the results store with --history FILE (or SERVEBENCH_HISTORY)");
        return Exit::InvalidInput;
    };
    match &args.command {
        HistoryCommand::Trend(a) => with_store(path, |s| trend::run(a, s)),
        HistoryCommand::Gate(a) => with_store(path, |s| gate::run(a, s)),
        HistoryCommand::Ack(a) => with_store(path, |s| ack::run(a, s)),
        HistoryCommand::Baseline(a) => with_store(path, |s| baseline::run(a, s)),
    }
}

/// Open the store at `path`, run `f` on it and keep what it changed.
fn with_store(path: &Path, f: impl FnOnce(&mut dyn Store) -> Exit) -> Exit {
    let mut store = match MemoryStore::load(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::InvalidInput;
        }
    };
    let code = f(&mut store);
    if let Err(e) = store.save(path) {
        eprintln!("error: {e}");
        return Exit::RunFailed;
    }
    code
}
