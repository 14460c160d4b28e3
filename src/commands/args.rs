//! Arguments shared by several commands: the plan-expansion flags, and old flag spellings
//! kept working.

use std::path::PathBuf;

use clap::Args;

use crate::plan::{DEFAULT_MAX_PHASES, DEFAULT_TEMPLATE_FUEL, ExpandOptions};

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
    #[arg(long = "max-phases", value_name = "N", default_value_t = DEFAULT_MAX_PHASES)]
    pub max_phases: usize,
    /// Template instructions one plan value may execute; raise it for a plan whose
    /// templates legitimately loop a lot.
    #[arg(long = "template-fuel", value_name = "N", default_value_t = DEFAULT_TEMPLATE_FUEL)]
    pub template_fuel: u64,
    /// Let the plan's `exec` hooks run local programs; without it a plan holding one is
    /// refused. Give it only to plans you trust.
    #[arg(long = "allow-exec")]
    pub allow_exec: bool,
}

impl ExpandArgs {
    pub fn options(&self) -> ExpandOptions {
        ExpandOptions {
            vars_files: self.vars.clone(),
            set: self.set.clone(),
            max_phases: self.max_phases,
            target_overrides: self.target.clone(),
            template_fuel: self.template_fuel,
            allow_exec: self.allow_exec,
        }
    }
}

/// The value of a renamed flag: the new spelling's, else the old one's with a note on stderr
/// saying which to write (clap refuses both at once).
pub(super) fn renamed<T>(
    new: Option<T>,
    old: Option<T>,
    old_flag: &str,
    new_flag: &str,
) -> Option<T> {
    if old.is_some() {
        eprintln!("note: `{old_flag}` is deprecated and will be removed; write `{new_flag}`");
    }
    new.or(old)
}
