//! `history export DIR`: every table as one Parquet (or CSV) file, for DuckDB or a notebook.

use std::path::PathBuf;

use super::{fail, open};
use crate::exit::Exit;
use crate::history::store::{ExportFormat, export};
use crate::history::{Location, OpenMode, Store as _};

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The directory to write runs, phases, figures, errors and alerts files into.
    pub dir: PathBuf,
    #[arg(long, value_enum, default_value = "parquet")]
    pub format: ExportFormat,
}

pub fn run(location: &Location, args: &ExportArgs) -> Exit {
    let written = open(location, OpenMode::Existing)
        .and_then(|store| store.tables())
        .and_then(|tables| export(&tables, &args.dir, args.format));
    match written {
        Ok(files) => {
            for file in files {
                println!("{}", file.display());
            }
            Exit::Success
        }
        Err(e) => fail(&e),
    }
}
