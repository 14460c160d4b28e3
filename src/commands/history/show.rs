//! `history show RUN`: a run's provenance, phases (with their headline figures), capacity
//! searches and errors; written out by `history::render::show`.

use super::{OutputArgs, OutputFormat, fail, open, to_json};
use crate::commands::emit;
use crate::exit::Exit;
use crate::history::{Location, OpenMode, Store as _, render};

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The run's id (see `history list`).
    pub run: String,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn run(location: &Location, args: &ShowArgs) -> Exit {
    let run = match open(location, OpenMode::Existing).and_then(|s| s.run(&args.run)) {
        Ok(run) => run,
        Err(e) => return fail(&e),
    };
    let text = match args.output.format {
        OutputFormat::Json => to_json(&render::show_json(&run)),
        OutputFormat::Md => render::show_markdown(&run),
    };
    emit(&text, args.output.output.as_deref())
}
