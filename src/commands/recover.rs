//! `servebench recover DIR`: rebuild a killed run's report files and `requests.parquet`.

use std::path::PathBuf;

use crate::exit::Exit;
use crate::runner::recover::recover;

#[derive(Debug, clap::Args)]
pub struct RecoverArgs {
    /// The run directory: its report.json (last written after a phase) and journal.jsonl.
    pub dir: PathBuf,
}

pub fn run(args: &RecoverArgs) -> Exit {
    let needed = [
        crate::report::REPORT_FILE,
        crate::runner::output::JOURNAL_FILE,
    ];
    if let Some(missing) = needed.iter().find(|f| !args.dir.join(f).is_file()) {
        eprintln!(
            "error: {}: not a run directory (no {missing})",
            args.dir.display()
        );
        return Exit::InvalidInput;
    }
    let recovered = match recover(&args.dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::RunFailed;
        }
    };
    for note in &recovered.notes {
        eprintln!("note: journal {note}");
    }
    if !recovered.killed {
        println!("the run had ended: its report is kept as written");
    }
    let finished = recovered.report.phases.len() - recovered.rebuilt_phases.len();
    println!("{finished} finished phase(s) from report.json");
    for (phase, measured) in &recovered.rebuilt_phases {
        println!("phase `{phase}`: {measured} measured requests from the journal (partial)");
    }
    println!(
        "requests.parquet: {} rows; report: {}",
        recovered.rows,
        args.dir.join(crate::report::REPORT_FILE).display()
    );
    Exit::Success
}
