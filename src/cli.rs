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
    /// Run a plan (or re-run the plan embedded in a report.json) and write one combined report.
    Run(RunArgs),
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Plan file (YAML, TOML or JSON), or a report.json to repeat.
    pub plan: PathBuf,
    /// Override a template variable: `--set key=value` (value typed as YAML).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Variables file (YAML/TOML/JSON) overriding the plan's `vars` defaults.
    #[arg(long = "vars", value_name = "FILE")]
    pub vars: Vec<PathBuf>,
    /// Point a target at a real server: `--target NAME=URL` (URL including /v1).
    #[arg(long = "target", value_name = "NAME=URL")]
    pub targets: Vec<String>,
    /// Directory for report.json and journal.jsonl [default: runs/<plan>-<UTC time>/].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run only these phases, in plan order.
    #[arg(long, value_name = "PHASE", num_args = 1..)]
    pub only: Vec<String>,
    /// Print the schedule without sending anything.
    #[arg(long)]
    pub dry_run: bool,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Refuse plans that expand to more phases than this.
    #[arg(long, default_value_t = 1000)]
    pub max_phases: usize,
}

/// Run the parsed command; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Validate { plans } => {
            let _ = plans;
            crate::exit::SUCCESS
        }
        Command::Run(args) => run_plan(args),
    }
}

fn run_plan(args: RunArgs) -> i32 {
    let options = crate::runner::RunOptions {
        plan: args.plan,
        expand: crate::plan::ExpandOptions {
            vars_files: args.vars,
            set: args.set,
            max_phases: args.max_phases,
            target_overrides: args.targets,
        },
        out_dir: args.out,
        only: args.only,
        dry_run: args.dry_run,
        progress: if args.quiet {
            crate::scheduler::progress::ProgressMode::Quiet
        } else {
            crate::scheduler::progress::ProgressMode::Auto
        },
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return crate::exit::RUN_FAILED;
        }
    };
    match runtime.block_on(crate::runner::run(options)) {
        Ok(outcome) if outcome.interrupted => crate::exit::RUN_FAILED,
        Ok(_) => crate::exit::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}
