//! `servebench merge REPORT… -o MERGED.json`: merge a sharded run's reports into one.

use std::path::{Path, PathBuf};

use crate::exit::Exit;
use crate::figure::Figure;
use crate::report::Report;
use crate::report::model::provenance::differing_shard_salts;
use crate::shard::{MergeError, merge_files};

#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// Every shard's report.json.
    #[arg(required = true)]
    pub reports: Vec<PathBuf>,
    /// Where to write the merged report.
    #[arg(long, short, value_name = "MERGED.json")]
    pub output: PathBuf,
}

pub fn run(args: &MergeArgs) -> Exit {
    let report = match merge_files(&args.reports) {
        Ok(report) => report,
        Err(e) => {
            match &e {
                MergeError::Invalid(problems) => {
                    for problem in problems {
                        eprintln!("error: {problem}");
                    }
                }
                MergeError::Failed(_) => eprintln!("error: {e}"),
            }
            return e.exit_code();
        }
    };
    if let Err(e) = write_json(&args.output, &report) {
        eprintln!("error: {e}");
        return Exit::RunFailed;
    }
    for phase in &report.phases {
        let s = &phase.summary;
        println!(
            "{}: {} requests, {} errors, {:.2} req/s, TTFT p99 {}",
            phase.header.phase,
            s.requests,
            s.errors,
            s.request_rate,
            s.distribution(Figure::Ttft)
                .map(|d| format!("{:.1} ms", d.p99 * 1e3))
                .unwrap_or_else(|| "-".to_string())
        );
    }
    let shards = report.merged_from.as_ref().map_or(0, Vec::len);
    eprintln!("merged {shards} shard(s): {}", args.output.display());
    let salts = differing_shard_salts(&report);
    if !salts.is_empty() {
        eprintln!(
            "note: the shards' prompts carried different salts ({}), each recorded in \
             `merged_from`; run every shard with the same --salt VALUE (or the same \
             --start-at) to share one",
            salts
                .iter()
                .map(|(index, salt)| format!("shard {index}: {}", salt.unwrap_or("none")))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if report.span.partial {
        eprintln!(
            "warning: the merged report is partial: {}",
            report
                .span
                .stop_reason
                .as_deref()
                .unwrap_or("a shard did not finish")
        );
    }
    Exit::Success
}

/// The merged report as pretty JSON, its directory created, replaced atomically.
fn write_json(path: &Path, report: &Report) -> Result<(), String> {
    let mut text = serde_json::to_string_pretty(report)
        .map_err(|e| format!("cannot serialize the merged report: {e}"))?;
    text.push('\n');
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    crate::report::write_atomic(path, &text)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
