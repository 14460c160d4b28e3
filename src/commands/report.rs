//! `servebench report`: render a report file as markdown, HTML, CSV or a seed format.

use std::path::{Path, PathBuf};

use super::emit;
use crate::exit::Exit;
use crate::report::formats::anvil_out;
use crate::report::{Format, Report, exporter, read_report, report_file, write_atomic};

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// A report.json, a run directory holding one, or a seed-format report.
    pub input: PathBuf,
    #[arg(long, value_enum, default_value = "md")]
    pub format: Format,
    /// CSV only: one row per request instead of one per phase.
    #[arg(long)]
    pub requests: bool,
    /// Anvil only: write this phase's document only.
    #[arg(long, value_name = "NAME")]
    pub phase: Option<String>,
    /// Write here instead of stdout; for `--format anvil` a directory that gets one
    /// `<phase>.anvil.json` per phase.
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

pub fn run(args: &ReportArgs) -> Exit {
    if args.requests && args.format != Format::Csv {
        eprintln!("error: --requests applies to --format csv only");
        return Exit::InvalidInput;
    }
    if args.phase.is_some() && args.format != Format::Anvil {
        eprintln!("error: --phase applies to --format anvil only");
        return Exit::InvalidInput;
    }
    let report = match report_file(&args.input).and_then(|file| read_report(&file)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::InvalidInput;
        }
    };
    match exporter(args.format, args.requests) {
        Some(exporter) => emit(&exporter.render(&report), args.output.as_deref()),
        None => anvil(&report, args.phase.as_deref(), args.output.as_deref()),
    }
}

/// One anvil document per phase: into `dir`, or the only one to stdout.
fn anvil(report: &Report, phase: Option<&str>, dir: Option<&Path>) -> Exit {
    let docs = match anvil_out::documents(report, phase) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::InvalidInput;
        }
    };
    let Some(dir) = dir else {
        if let [(_, doc)] = docs.as_slice() {
            return emit(&anvil_out::render(doc), None);
        }
        let names: Vec<&str> = docs.iter().map(|(n, _)| n.as_str()).collect();
        eprintln!(
            "error: --format anvil writes one document per phase and this report has {} ({}); \
             name one with --phase, or give a directory with -o",
            names.len(),
            names.join(", ")
        );
        return Exit::InvalidInput;
    };
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("error: cannot create {}: {e}", dir.display());
        return Exit::RunFailed;
    }
    for (name, doc) in &docs {
        let path = dir.join(anvil_out::file_name(name));
        if let Err(e) = write_atomic(&path, &anvil_out::render(doc)) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return Exit::RunFailed;
        }
    }
    Exit::Success
}
