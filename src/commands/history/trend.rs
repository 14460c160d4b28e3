//! `servebench history trend`: bring the trends and alerts up to date and render them.

use std::path::PathBuf;

use crate::commands::emit;
use crate::exit::Exit;
use crate::history::render::{self, TrendReport};
use crate::history::store::{RunFilter, Store};
use crate::history::trend::provenance_changes;

#[derive(Debug, clap::Args)]
pub struct TrendArgs {
    /// Only this plan's series.
    #[arg(long)]
    pub plan: Option<String>,
    #[arg(long, value_enum, default_value = "md")]
    pub format: TrendFormat,
    /// Write here instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// Output format of `history trend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TrendFormat {
    Md,
    Html,
    Json,
}

pub fn run(args: &TrendArgs, store: &mut dyn Store) -> Exit {
    let plan = args.plan.as_deref();
    let updated = crate::history::update(store, plan, None).and_then(|updated| {
        let runs = store.runs(&RunFilter {
            plan: args.plan.clone(),
            ..RunFilter::default()
        })?;
        Ok((updated, runs))
    });
    let (updated, runs) = match updated {
        Ok(u) => u,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::RunFailed;
        }
    };
    let provenance = provenance_changes(&runs);
    let report = TrendReport {
        plan,
        trends: &updated.trends,
        alerts: &updated.alerts,
        provenance: &provenance,
        settings: &updated.settings,
        watched: &updated.watched,
    };
    let text = match args.format {
        TrendFormat::Md => render::markdown(&report),
        TrendFormat::Html => render::html(&report),
        TrendFormat::Json => render::json(&report),
    };
    emit(&text, args.output.as_deref())
}
