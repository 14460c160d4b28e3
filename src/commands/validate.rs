//! `servebench validate PLAN…`: check every plan, report every problem.

use std::io::Write;
use std::path::PathBuf;

use super::ExpandArgs;
use crate::exit;
use crate::plan::prepare;

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    #[arg(required = true)]
    pub plans: Vec<PathBuf>,
    #[command(flatten)]
    pub expand: ExpandArgs,
}

pub fn run(args: &ValidateArgs) -> i32 {
    let options = args.expand.options();
    let mut code = exit::SUCCESS;
    let mut stderr = std::io::stderr().lock();
    for path in &args.plans {
        match prepare(path, &options) {
            Ok(loaded) => {
                let n = loaded.plan.phases.len();
                println!(
                    "ok: {} ({n} phase{})",
                    path.display(),
                    if n == 1 { "" } else { "s" }
                );
            }
            Err(errors) => {
                let _ = writeln!(stderr, "{errors}");
                code = exit::INVALID_INPUT;
            }
        }
    }
    code
}
