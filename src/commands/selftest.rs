//! `servebench selftest`: run, print a table, optionally write JSON; exit code 0 or 1.

use std::path::PathBuf;

use crate::exit;
use crate::selftest::{SelftestArgs, render};

#[derive(Debug, clap::Args)]
pub struct SelftestCommandArgs {
    /// A short version (concurrency 1 and 64, sub-second windows).
    #[arg(long)]
    pub quick: bool,
    /// Also write the results as JSON here.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Let idle CPUs sleep deeply: do not hold /dev/cpu_dma_latency at 0 µs.
    #[arg(long)]
    pub no_latency_hint: bool,
}

pub fn run(args: &SelftestCommandArgs) -> i32 {
    let options = SelftestArgs {
        quick: args.quick,
        out: args.out.clone(),
        latency_hint: !args.no_latency_hint,
    };
    let report = match crate::selftest::run(&options) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("error: selftest failed: {e}");
            return exit::SELFTEST_FAILED;
        }
    };
    print!("{}", render(&report));
    if let Some(path) = &args.out {
        let json = match serde_json::to_string_pretty(&report) {
            Ok(json) => json,
            Err(e) => {
                eprintln!("error: cannot serialize the selftest results: {e}");
                return exit::SELFTEST_FAILED;
            }
        };
        if let Err(e) = std::fs::write(path, json + "\n") {
            eprintln!("error: cannot write {}: {e}", path.display());
            return exit::SELFTEST_FAILED;
        }
    }
    exit::SUCCESS
}
