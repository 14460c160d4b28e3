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
    /// Run a plan (or re-run the plan embedded in a report.json) and write one combined report.
    Run(RunArgs),
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
    /// Measure the client itself against the in-process zero-delay simulator: requests/s,
    /// events/s, CPU per event, peak RSS, timing error and open-loop send lag.
    Selftest {
        /// A short version (concurrency 1 and 64, sub-second windows).
        #[arg(long)]
        quick: bool,
        /// Also write the results as JSON here.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Let idle CPUs sleep deeply: do not hold /dev/cpu_dma_latency at 0 µs.
        #[arg(long)]
        no_latency_hint: bool,
    },
    /// Merge the reports of a sharded run (`run --shard I/N`) into one report.
    Merge {
        /// Every shard's report.json.
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// Where to write the merged report.
        #[arg(long, short, value_name = "MERGED.json")]
        output: PathBuf,
    },
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Plan file (YAML, TOML or JSON), or a report.json to repeat.
    pub plan: PathBuf,
    #[command(flatten)]
    pub expand: ExpandArgs,
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
        Command::Run(args) => crate::runner::run_command(crate::runner::RunOptions {
            plan: args.plan,
            expand: args.expand.options(),
            out_dir: args.out,
            only: args.only,
            dry_run: args.dry_run,
            calibrate: !args.no_calibrate,
            latency_hint: !args.no_latency_hint,
            busy_poll: args.busy_poll,
            progress: if args.quiet {
                crate::scheduler::progress::ProgressMode::Quiet
            } else {
                crate::scheduler::progress::ProgressMode::Auto
            },
            shard: args.shard,
            start_at: args.start_at,
        }),
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
        Command::Selftest {
            quick,
            out,
            no_latency_hint,
        } => crate::selftest::run_command(crate::selftest::SelftestArgs {
            quick,
            out,
            latency_hint: !no_latency_hint,
        }),
        Command::Merge { reports, output } => crate::shard::merge_command(&reports, &output),
    }
}
