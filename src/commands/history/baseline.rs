//! `servebench history baseline`: the baselines of a file and the run each names now.

use std::path::PathBuf;

use serde_json::json;

use super::OutputFormat;
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
    /// `md`: one line per baseline; `json`: `[{"name", "pick", "run" or "error"}]`.
    #[arg(long, value_enum, default_value = "md")]
    pub format: OutputFormat,
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
    let (mut lines, mut rows) = (String::new(), Vec::new());
    for b in &list {
        let how = match &b.pick {
            Pick::Run(id) => format!("run {id}"),
            Pick::Tag(tag) => format!("newest run tagged {tag}"),
            Pick::BestOfLast { runs, figure, .. } => format!("best {figure} of the last {runs}"),
        };
        let (shown, row) = match baseline::resolve(b, store, &args.plan) {
            Ok(run) => (
                run.to_string(),
                json!({"name": b.name, "pick": how, "run": run.to_string()}),
            ),
            Err(e) => {
                code = Exit::InvalidInput;
                let e = e.to_string();
                (
                    format!("error: {e}"),
                    json!({"name": b.name, "pick": how, "error": e}),
                )
            }
        };
        lines.push_str(&format!("{}: {how} → {shown}\n", b.name));
        rows.push(row);
    }
    match args.format {
        OutputFormat::Md => print!("{lines}"),
        OutputFormat::Json => print!("{}", super::to_json(&rows)),
    }
    code
}
