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
    /// Serve the OpenAI-compatible simulator until Ctrl-C.
    Sim {
        #[arg(long, default_value = "127.0.0.1")]
        host: std::net::IpAddr,
        #[arg(long, default_value_t = 8000)]
        port: u16,
        /// Simulator settings (YAML, or JSON when the name ends in .json).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Seed for jitter, output lengths and fault draws (overrides the file's `seed`).
        #[arg(long)]
        seed: Option<u64>,
    },
}

/// Run the parsed command; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Validate { plans } => {
            let _ = plans;
            crate::exit::SUCCESS
        }
        Command::Sim {
            host,
            port,
            config,
            seed,
        } => crate::sim::command::run(crate::sim::command::SimArgs {
            host,
            port,
            config,
            seed,
        }),
    }
}
