//! The plan subcommands: `validate`, `expand`, `schema`, `completions`.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::{ExpandOptions, prepare, schema, to_document};
use crate::exit;

/// Options that change how a plan expands; shared by every command that reads a plan.
#[derive(Debug, Clone, Default, Args)]
pub struct ExpandArgs {
    /// Set a plan variable (value typed as YAML: 8, 1.5, true, 60s, [1, 2]); repeatable,
    /// applied after --vars.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Read plan variables from a YAML/TOML/JSON mapping; repeatable, in order.
    #[arg(long = "vars", value_name = "FILE")]
    pub vars: Vec<PathBuf>,
    /// Point target NAME at a server instead of its simulator; repeatable.
    #[arg(long = "target", value_name = "NAME=URL")]
    pub target: Vec<String>,
    /// Refuse plans that expand to more phases than this.
    #[arg(long = "max-phases", value_name = "N", default_value_t = super::DEFAULT_MAX_PHASES)]
    pub max_phases: usize,
}

impl ExpandArgs {
    pub fn options(&self) -> ExpandOptions {
        ExpandOptions {
            vars_files: self.vars.clone(),
            set: self.set.clone(),
            max_phases: self.max_phases,
            target_overrides: self.target.clone(),
        }
    }
}

/// Output format of `expand`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ExpandFormat {
    #[default]
    Yaml,
    Json,
}

/// Which schema `schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaKind {
    Plan,
    Report,
}

/// `servebench validate PLAN…`: check every plan, report every problem.
pub fn validate(plans: &[PathBuf], args: &ExpandArgs) -> i32 {
    let options = args.options();
    let mut code = exit::SUCCESS;
    let mut stderr = std::io::stderr().lock();
    for path in plans {
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

/// `servebench expand PLAN`: print the concrete plan.
pub fn expand(plan: &Path, args: &ExpandArgs, format: ExpandFormat) -> i32 {
    let loaded = match prepare(plan, &args.options()) {
        Ok(l) => l,
        Err(errors) => {
            eprintln!("{errors}");
            return exit::INVALID_INPUT;
        }
    };
    let doc = to_document(&loaded.plan);
    let text = match format {
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
                return exit::RUN_FAILED;
            }
        },
    };
    match text {
        Ok(t) => {
            print!("{t}");
            exit::SUCCESS
        }
        Err(e) => {
            eprintln!("error: cannot write JSON: {e}");
            exit::RUN_FAILED
        }
    }
}

/// `servebench schema plan|report`: print a generated JSON schema.
pub fn print_schema(kind: SchemaKind) -> i32 {
    let value = match kind {
        SchemaKind::Plan => schema::plan_schema(),
        SchemaKind::Report => crate::report::schema::report_schema(),
    };
    print!("{}", schema::to_pretty(&value));
    exit::SUCCESS
}

/// `servebench completions SHELL`: print a shell completion script for `command`.
pub fn completions(shell: clap_complete::Shell, command: &mut clap::Command) -> i32 {
    let name = command.get_name().to_string();
    clap_complete::generate(shell, command, name, &mut std::io::stdout());
    exit::SUCCESS
}
