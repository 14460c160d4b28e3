//! `servebench validate PLAN…`: check every plan, report every problem.

use std::io::Write;
use std::path::PathBuf;

use clap::ValueEnum;
use serde_json::{Value, json};

use super::ExpandArgs;
use crate::exit::Exit;
use crate::plan::{Diagnostic, PlanErrors, prepare};

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Plan files (YAML, TOML or JSON).
    #[arg(required = true)]
    pub plans: Vec<PathBuf>,
    /// How problems are printed: `human` (with the source line), `github` (Actions
    /// annotations on stdout) or `json` (one document on stdout).
    #[arg(long, value_enum, default_value_t = ValidateFormat::Human)]
    pub format: ValidateFormat,
    /// Also refuse what a plan from a stranger must not do: read files outside the plan's
    /// directory (absolute paths, `..`) or execute anything. For CI on pull requests.
    #[arg(long)]
    pub untrusted: bool,
    #[command(flatten)]
    pub expand: ExpandArgs,
}

/// Output format of `validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ValidateFormat {
    /// Caret diagnostics (errors and warnings) on stderr, `ok:` lines on stdout.
    #[default]
    Human,
    /// `::error file=…,line=…,col=…::message` (and `::warning`) lines that GitHub Actions
    /// shows in the diff.
    Github,
    /// `{"ok": …, "plans": [{"file", "ok", "phases", "diagnostics": […]}]}`; a diagnostic's
    /// `severity` is `error` or `warning` (a warning also has a `kind`).
    Json,
}

pub fn run(args: &ValidateArgs) -> Exit {
    let mut options = args.expand.options();
    // Untrusted plans get their own refusal for `exec` (below), which names every hook.
    options.allow_exec |= args.untrusted;
    let mut code = Exit::Success;
    let mut stderr = std::io::stderr().lock();
    let mut results: Vec<Value> = Vec::new();
    for path in &args.plans {
        let outcome = prepare(path, &options).and_then(|loaded| {
            if !args.untrusted {
                return Ok(loaded);
            }
            let problems = crate::plan::untrusted::untrusted_problems(&loaded.plan);
            if problems.is_empty() {
                Ok(loaded)
            } else {
                Err(untrusted_errors(path, problems))
            }
        });
        let file = path.display().to_string();
        match (&outcome, args.format) {
            (Ok(loaded), ValidateFormat::Human) => {
                for warning in &loaded.warnings {
                    let _ = writeln!(stderr, "{warning}");
                }
                println!("{}", ok_line(&file, loaded));
            }
            (Ok(loaded), ValidateFormat::Github) => {
                for warning in &loaded.warnings {
                    println!("{}", warning.github_annotation());
                }
                println!("{}", ok_line(&file, loaded));
            }
            (Err(errors), ValidateFormat::Human) => {
                let _ = writeln!(stderr, "{errors}");
            }
            (Err(errors), ValidateFormat::Github) => {
                for d in &errors.diagnostics {
                    println!("{}", d.github_annotation());
                }
            }
            (Ok(loaded), ValidateFormat::Json) => results.push(json!({
                "file": file,
                "ok": true,
                "phases": loaded.plan.phases.len(),
                "diagnostics": loaded.warnings.iter().map(|w| w.to_json()).collect::<Vec<_>>(),
            })),
            (Err(errors), ValidateFormat::Json) => results.push(json!({
                "file": file,
                "ok": false,
                "phases": null,
                "diagnostics": errors.diagnostics.iter().map(|d| d.to_json()).collect::<Vec<_>>(),
            })),
        }
        if outcome.is_err() {
            code = Exit::InvalidInput;
        }
    }
    if args.format == ValidateFormat::Json {
        let doc = json!({"ok": code == Exit::Success, "plans": results});
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    }
    code
}

/// `ok: FILE (N phases)`, and how many warnings it has.
fn ok_line(file: &str, loaded: &crate::plan::LoadedPlan) -> String {
    let n = loaded.plan.phases.len();
    let mut line = format!("ok: {file} ({n} phase{})", if n == 1 { "" } else { "s" });
    match loaded.warnings.len() {
        0 => {}
        1 => line.push_str(", 1 warning"),
        w => line.push_str(&format!(", {w} warnings")),
    }
    line
}

/// `--untrusted` refusals as diagnostics on the plan file, so every format prints them.
fn untrusted_errors(path: &std::path::Path, problems: Vec<String>) -> PlanErrors {
    PlanErrors {
        diagnostics: problems
            .into_iter()
            .map(|message| {
                Diagnostic::whole_file(
                    path.display().to_string(),
                    format!("untrusted plan: {message}"),
                )
            })
            .collect(),
    }
}
