//! `servebench report`: render a report file as markdown, HTML or CSV.

use std::path::PathBuf;

use super::emit;
use crate::exit;
use crate::report::{Format, exporter, read_report};

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// A report.json, or a seed-format report.
    pub input: PathBuf,
    #[arg(long, value_enum, default_value = "md")]
    pub format: Format,
    /// CSV only: one row per request instead of one per phase.
    #[arg(long)]
    pub requests: bool,
    /// Write here instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

pub fn run(args: &ReportArgs) -> i32 {
    if args.requests && args.format != Format::Csv {
        eprintln!("error: --requests applies to --format csv only");
        return exit::INVALID_INPUT;
    }
    let report = match read_report(&args.input) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::INVALID_INPUT;
        }
    };
    let text = exporter(args.format, args.requests).render(&report);
    emit(&text, args.output.as_deref())
}
