//! `servebench compare`: exit 0 when every gate passes, 1 when one fails, 2 on bad input.

use std::path::{Path, PathBuf};

use super::emit;
use crate::exit::Exit;
use crate::report::compare::gate::Gate;
use crate::report::compare::{CompareOptions, compare_with};
use crate::report::{read_report, render_comparison, render_comparison_html, report_file};

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline report (report.json, a run directory holding one, or a seed-format
    /// report).
    pub base: PathBuf,
    /// The report compared with it (the same forms).
    pub new: PathBuf,
    /// `[PHASE:]METRIC OP THRESHOLD`, e.g. 'ttft.p95 < +10%', 'errors == 0', 'e2e.p50 < 2s'.
    #[arg(long = "gate", value_name = "EXPR")]
    pub gates: Vec<String>,
    #[arg(long, value_enum, default_value = "md")]
    pub format: CompareFormat,
    /// Write here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Compare phases even where the two runs asked for different work (said in the output).
    #[arg(long)]
    pub force: bool,
}

/// Output format of `servebench compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareFormat {
    /// Markdown, for a pull-request comment.
    Md,
    /// One offline HTML page holding what the markdown holds.
    Html,
    /// Every figure and interval, for programs.
    Json,
}

pub fn run(args: &CompareArgs) -> Exit {
    let mut gates = Vec::new();
    let mut bad = false;
    for g in &args.gates {
        match g.parse::<Gate>() {
            Ok(g) => gates.push(g),
            Err(e) => {
                eprintln!("error: {e}");
                bad = true;
            }
        }
    }
    if bad {
        return Exit::InvalidInput;
    }
    let (base_report, new_report) =
        match (read_with_records(&args.base), read_with_records(&args.new)) {
            (Ok(b), Ok(n)) => (b, n),
            (b, n) => {
                for e in [b.err(), n.err()].into_iter().flatten() {
                    eprintln!("error: {e}");
                }
                return Exit::InvalidInput;
            }
        };
    let (base_path, new_path) = (shown(&args.base), shown(&args.new));
    let comparison = compare_with(
        (&base_path, &base_report),
        (&new_path, &new_report),
        &gates,
        CompareOptions { force: args.force },
    );
    for refused in &comparison.refused {
        eprintln!(
            "warning: phase `{}` not compared: the two runs asked for different work \
             (--force compares it anyway)",
            refused.phase
        );
    }
    let text = match args.format {
        CompareFormat::Md => render_comparison(&comparison),
        CompareFormat::Html => render_comparison_html(&comparison),
        CompareFormat::Json => match serde_json::to_string_pretty(&comparison) {
            Ok(s) => s + "\n",
            Err(e) => {
                eprintln!("error: cannot encode the comparison: {e}");
                return Exit::RunFailed;
            }
        },
    };
    let code = emit(&text, args.output.as_deref());
    if code != Exit::Success {
        return code;
    }
    if comparison.passed {
        Exit::Success
    } else {
        let failed = comparison.gates.iter().filter(|g| !g.passed).count();
        eprintln!("{failed} gate check(s) failed");
        Exit::GateFailed
    }
}

/// A report, with every record beside it (its `requests/` parts, or an older run's
/// `requests.parquet`) when there are any, so
/// the bootstrap resamples every request even when report.json holds a sample.
fn read_with_records(path: &Path) -> Result<crate::report::Report, String> {
    let path = report_file(path).map_err(|e| e.to_string())?;
    let mut report = read_report(&path).map_err(|e| e.to_string())?;
    crate::report::formats::records::attach_records(&mut report, &path)?;
    Ok(report)
}

/// The report file a side names, as the comparison shows it (a run directory's report.json).
fn shown(path: &Path) -> String {
    report_file(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}
