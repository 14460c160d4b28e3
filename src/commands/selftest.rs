//! `servebench selftest`: run, print a table, optionally write JSON.

use std::path::{Path, PathBuf};

use crate::exit::Exit;
use crate::selftest::{SelftestArgs, render};

#[derive(Debug, clap::Args)]
pub struct SelftestCommandArgs {
    /// A short version (concurrency 1 and 64, sub-second windows).
    #[arg(long)]
    pub quick: bool,
    /// Also write the results as JSON here.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The old spelling of --output.
    #[arg(long, value_name = "FILE", hide = true, conflicts_with = "output")]
    pub out: Option<PathBuf>,
    /// Let idle CPUs sleep deeply: do not hold /dev/cpu_dma_latency at 0 µs.
    #[arg(long)]
    pub no_latency_hint: bool,
}

pub fn run(args: &SelftestCommandArgs) -> Exit {
    let output = super::args::renamed(
        args.output.clone(),
        args.out.clone(),
        "--out",
        "-o/--output",
    );
    // Checked before measuring, so minutes of measurement are not lost to a bad path.
    let created = match output.as_deref().map(open_for_results).transpose() {
        Ok(created) => created.unwrap_or(false),
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::InvalidInput;
        }
    };
    let options = SelftestArgs {
        quick: args.quick,
        out: output.clone(),
        latency_hint: !args.no_latency_hint,
    };
    let written = crate::selftest::run(&options).and_then(|report| {
        print!("{}", render(&report));
        let Some(path) = &output else { return Ok(()) };
        let json = serde_json::to_string_pretty(&report)
            .map_err(|e| format!("cannot serialize the selftest results: {e}"))?;
        crate::report::write_atomic(path, &(json + "\n"))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    });
    match written {
        Ok(()) => Exit::Success,
        Err(e) => {
            if let (true, Some(path)) = (created, &output) {
                let _ = std::fs::remove_file(path);
            }
            eprintln!("error: selftest failed: {e}");
            Exit::SelftestFailed
        }
    }
}

/// Open (creating it when missing, never truncating) the file the results go to; whether it
/// was created.
fn open_for_results(path: &Path) -> Result<bool, String> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(!existed)
}
