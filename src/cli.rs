//! Command-line arguments (clap derive) and dispatch; no logic of its own.

use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand};

use crate::plan::cmd::{ExpandArgs, ExpandFormat, SchemaKind};

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
        #[command(flatten)]
        expand: ExpandArgs,
    },
    /// Print the concrete plan: variables, matrix, defaults and rechecks resolved.
    Expand {
        plan: PathBuf,
        #[command(flatten)]
        expand: ExpandArgs,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ExpandFormat::Yaml)]
        format: ExpandFormat,
    },
    /// Print the JSON schema of plans or reports.
    Schema {
        #[arg(value_enum)]
        kind: SchemaKind,
    },
    /// Print a shell completion script.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Run the parsed command; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Validate { plans, expand } => crate::plan::cmd::validate(&plans, &expand),
        Command::Expand {
            plan,
            expand,
            format,
        } => crate::plan::cmd::expand(&plan, &expand, format),
        Command::Schema { kind } => crate::plan::cmd::print_schema(kind),
        Command::Completions { shell } => crate::plan::cmd::completions(shell, &mut Cli::command()),
    }
}
