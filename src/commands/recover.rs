//! `servebench recover DIR`: rebuild a killed run's report files and its records' parts.

use std::path::PathBuf;

use crate::exit::Exit;
use crate::runner::recover::recover;

#[derive(Debug, clap::Args)]
pub struct RecoverArgs {
    /// The run directory: its report.json (last written after a phase), its closed parts
    /// (requests/) and its journal.
    pub dir: PathBuf,
    /// Records each rebuilt phase's report keeps; a longer phase keeps a seeded sample of
    /// this many (its figures still cover every request), as `run --keep-records` does.
    #[arg(long, value_name = "N", default_value_t = crate::runner::collect::DEFAULT_KEEP_RECORDS as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub keep_records: u64,
}

pub fn run(args: &RecoverArgs) -> Exit {
    let journal = crate::runner::output::JOURNAL_FILE;
    let parts = crate::runner::output::PARTS_DIR;
    let missing = if !args.dir.join(crate::report::REPORT_FILE).is_file() {
        Some(crate::report::REPORT_FILE)
    } else if !args.dir.join(journal).is_file() && !args.dir.join(parts).is_dir() {
        Some(journal)
    } else {
        None
    };
    if let Some(missing) = missing {
        eprintln!(
            "error: {}: not a run directory (no {missing})",
            args.dir.display()
        );
        return Exit::InvalidInput;
    }
    let recovered = match recover(&args.dir, args.keep_records as usize) {
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
        println!(
            "phase `{phase}`: {measured} measured requests from its parts and journal (partial)"
        );
    }
    println!(
        "records: {} rows in {} ({} from the journal); report: {}",
        recovered.rows,
        args.dir.join(parts).display(),
        recovered.journal_rows,
        args.dir.join(crate::report::REPORT_FILE).display()
    );
    Exit::Success
}
