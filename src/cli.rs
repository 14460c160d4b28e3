//! Command-line arguments (clap derive) and dispatch; no logic of its own.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "servebench",
    version,
    about = "Benchmark plans for OpenAI-compatible LLM endpoints"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check plans against the schema and the semantic rules; exit 2 on any problem.
    Validate {
        #[arg(required = true)]
        plans: Vec<PathBuf>,
    },
}

/// Run the parsed command; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Validate { plans } => {
            let _ = plans;
            crate::exit::SUCCESS
        }
    }
}
