//! `history list`: recorded runs, filtered by plan, start time and completeness.

use super::{OutputArgs, OutputFormat, fail, md_table, open, to_json};
use crate::commands::emit;
use crate::exit::Exit;
use crate::history::{Location, OpenMode, RunFilter, Store as _};

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Only this plan's runs.
    #[arg(long)]
    pub plan: Option<String>,
    /// Only runs that started at or after this time: RFC 3339, or a date for its 00:00 UTC.
    #[arg(long, value_name = "TIME|DATE", value_parser = super::time_arg)]
    pub since: Option<String>,
    /// Only complete runs.
    #[arg(long, conflicts_with = "partial")]
    pub complete: bool,
    /// Only partial (interrupted or failed) runs.
    #[arg(long)]
    pub partial: bool,
    /// The newest N runs.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn run(location: &Location, args: &ListArgs) -> Exit {
    let filter = RunFilter {
        plan: args.plan.clone(),
        since: args.since.clone(),
        complete: match (args.complete, args.partial) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        limit: args.limit,
    };
    let runs = match open(location, OpenMode::Existing).and_then(|s| s.runs(&filter)) {
        Ok(runs) => runs,
        Err(e) => return fail(&e),
    };
    let text = match args.output.format {
        OutputFormat::Json => to_json(&runs),
        OutputFormat::Md => {
            let rows: Vec<Vec<String>> = runs
                .iter()
                .map(|r| {
                    vec![
                        r.id.clone(),
                        r.plan.clone(),
                        r.started_at.clone(),
                        if r.complete { "yes" } else { "no (partial)" }.to_string(),
                        r.phases.to_string(),
                        r.source.name().to_string(),
                        r.excluded.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            md_table(
                &[
                    "Run", "Plan", "Started", "Complete", "Phases", "Source", "Excluded",
                ],
                &rows,
            )
        }
    };
    emit(&text, args.output.output.as_deref())
}
