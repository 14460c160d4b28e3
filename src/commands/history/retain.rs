//! `history retain`: delete runs past a count per plan or older than a time.

use super::{fail, open};
use crate::exit::Exit;
use crate::history::store::Retention;
use crate::history::{Location, OpenMode, Store as _};

#[derive(Debug, clap::Args)]
pub struct RetainArgs {
    /// Keep the newest N runs of each plan.
    #[arg(long, value_name = "N")]
    pub keep_last: Option<usize>,
    /// Delete runs older than this (e.g. 90d, 12w).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub older_than: Option<std::time::Duration>,
    /// List what would be deleted; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(location: &Location, args: &RetainArgs) -> Exit {
    if args.keep_last.is_none() && args.older_than.is_none() {
        eprintln!("error: give --keep-last N and/or --older-than DURATION");
        return Exit::InvalidInput;
    }
    let before = match args.older_than.map(chrono::Duration::from_std).transpose() {
        Ok(age) => age.map(|age| {
            (chrono::Utc::now() - age).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        }),
        Err(_) => {
            eprintln!("error: --older-than is too long");
            return Exit::InvalidInput;
        }
    };
    let policy = Retention {
        keep_last: args.keep_last,
        before,
        dry_run: args.dry_run,
    };
    match open(location, OpenMode::Existing).and_then(|mut store| store.retain(&policy)) {
        Ok(ids) => {
            for id in &ids {
                println!("{id}");
            }
            let verb = if args.dry_run {
                "would delete"
            } else {
                "deleted"
            };
            eprintln!("{verb} {} run(s)", ids.len());
            Exit::Success
        }
        Err(e) => fail(&e),
    }
}
