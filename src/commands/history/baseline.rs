//! `servebench history baseline`: the baselines of a file and the run each names now.

use std::path::PathBuf;

use crate::exit::Exit;
use crate::history::baseline::{self, Pick};
use crate::history::store::Store;

#[derive(Debug, clap::Args)]
pub struct BaselineArgs {
    /// The plan whose runs the baselines pick from.
    #[arg(long)]
    pub plan: String,
    /// The baselines file.
    #[arg(long, default_value = "baselines.yaml")]
    pub baselines: PathBuf,
}

pub fn run(args: &BaselineArgs, store: &mut dyn Store) -> Exit {
    let list = match baseline::load(&args.baselines) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::InvalidInput;
        }
    };
    let mut code = Exit::Success;
    for b in &list {
        let how = match &b.pick {
            Pick::Run(id) => format!("run {id}"),
            Pick::Tag(tag) => format!("newest run tagged {tag}"),
            Pick::BestOfLast { runs, figure, .. } => format!("best {figure} of the last {runs}"),
        };
        match baseline::resolve(b, store, &args.plan) {
            Ok(run) => println!("{}: {how} → {run}", b.name),
            Err(e) => {
                println!("{}: {how} → error: {e}", b.name);
                code = Exit::InvalidInput;
            }
        }
    }
    code
}
