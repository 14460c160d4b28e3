//! `history record REPORT…`: record servebench reports (what `run` does after it finishes),
//! and the recording step `run` calls.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{fail, open};
use crate::exit::Exit;
use crate::history::hook::{PausePoint, pause_at};
use crate::history::{Location, OpenMode, Store as _};
use crate::report::model::Report;

#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// report.json files written by `servebench run` (or `merge`, `recover`).
    #[arg(required = true)]
    pub reports: Vec<PathBuf>,
}

pub fn run(location: &Location, args: &RecordArgs) -> Exit {
    let mut store = match open(location, OpenMode::Create) {
        Ok(store) => store,
        Err(e) => return fail(&e),
    };
    let mut code = Exit::Success;
    for path in &args.reports {
        let report = match crate::report::read_report(path) {
            Ok(report) => report,
            Err(e) => {
                eprintln!("error: {e}");
                code = Exit::InvalidInput;
                continue;
            }
        };
        if is_seed(path) {
            eprintln!(
                "error: {}: not a servebench report; use `servebench history import` for other formats",
                path.display()
            );
            code = Exit::InvalidInput;
            continue;
        }
        match store.record(&report, Some(path)) {
            Ok(id) => println!("{id}"),
            Err(e) => code = fail(&e),
        }
    }
    code
}

/// Whether `path` holds one of the older formats (read as a servebench report in memory).
fn is_seed(path: &Path) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|doc| {
            doc.get("schema")
                .and_then(|s| s.as_str())
                .map(str::to_string)
        })
        .is_none_or(|schema| schema != crate::report::model::REPORT_SCHEMA)
}

/// Record a finished run's report (after `run` wrote it): a failure is a warning and never
/// changes the run's exit code. The store is `--history`, `SERVEBENCH_HISTORY`, or
/// `runs/history.sqlite` under the current directory, wherever `-o` put the run: every
/// command finds the same store. `quiet` (`run -q`) keeps the success line off stderr.
pub fn after_run(flag: Option<&str>, report: &Report, report_path: &Path, quiet: bool) {
    pause_at(PausePoint::AfterReport);
    let location = Location::resolve(flag, Path::new(super::RUNS_DIR));
    let started = Instant::now();
    let recorded =
        open(&location, OpenMode::Create).and_then(|mut s| s.record(report, Some(report_path)));
    match recorded {
        Ok(_) if quiet => {}
        Ok(id) => eprintln!(
            "history: recorded {id}{} in {location} ({:.0} ms)",
            if report.span.partial {
                " (partial)"
            } else {
                ""
            },
            started.elapsed().as_secs_f64() * 1e3
        ),
        Err(e) => eprintln!("warning: the run was not recorded in the history: {e}"),
    }
}
