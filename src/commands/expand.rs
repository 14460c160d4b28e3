//! `servebench expand PLAN`: print the concrete plan.

use std::path::PathBuf;

use clap::ValueEnum;

use super::ExpandArgs;
use crate::exit::Exit;
use crate::plan::{prepare, to_document};

#[derive(Debug, clap::Args)]
pub struct ExpandCommandArgs {
    /// Plan file (YAML, TOML or JSON).
    pub plan: PathBuf,
    #[command(flatten)]
    pub expand: ExpandArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ExpandFormat::Yaml)]
    pub format: ExpandFormat,
}

/// Output format of `expand`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ExpandFormat {
    #[default]
    Yaml,
    Json,
}

pub fn run(args: &ExpandCommandArgs) -> Exit {
    let loaded = match prepare(&args.plan, &args.expand.options()) {
        Ok(l) => l,
        Err(errors) => {
            eprintln!("{errors}");
            return Exit::InvalidInput;
        }
    };
    for warning in &loaded.warnings {
        eprintln!("{}", warning.one_line());
    }
    let doc = to_document(&loaded.plan);
    let text = match args.format {
        ExpandFormat::Json => serde_json::to_string_pretty(&doc).map(|mut s| {
            s.push('\n');
            s
        }),
        ExpandFormat::Yaml => match serde_saphyr::to_string(&doc) {
            Ok(s) => Ok(format!(
                "# yaml-language-server: $schema=../schemas/plan.schema.json\n{s}"
            )),
            Err(e) => {
                eprintln!("error: cannot write YAML: {e}");
                return Exit::RunFailed;
            }
        },
    };
    match text {
        Ok(t) => {
            print!("{t}");
            Exit::Success
        }
        Err(e) => {
            eprintln!("error: cannot write JSON: {e}");
            Exit::RunFailed
        }
    }
}
