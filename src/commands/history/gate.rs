//! `servebench history gate`: exit 5 while an alert is open (acknowledged ones pass), or,
//! with `--baseline`, exit 1 when the latest run fails its gates against the named baseline
//! or a capacity search's interval lies wholly below the baseline's.

use std::path::PathBuf;

use serde_json::json;

use super::{OutputFormat, to_json};
use crate::exit::Exit;
use crate::history::gate::{self, AlertGate, BaselineGate, GateError, GateRequest, Outcome};
use crate::history::render::alert_line;
use crate::history::store::Store;
use crate::report::compare::document::gates_markdown;

#[derive(Debug, clap::Args)]
pub struct GateArgs {
    /// Only this plan's alerts (and, with --baseline, its runs).
    #[arg(long)]
    pub plan: Option<String>,
    /// Compare the latest run with this baseline instead of checking alerts.
    #[arg(long, requires = "plan")]
    pub baseline: Option<String>,
    /// The baselines file.
    #[arg(long, default_value = "baselines.yaml")]
    pub baselines: PathBuf,
    /// More gates against the baseline, in `compare`'s grammar.
    #[arg(long = "gate", value_name = "EXPR")]
    pub gates: Vec<String>,
    /// Check change gates even on phases where the baseline asked for different work.
    #[arg(long, requires = "baseline")]
    pub force: bool,
    /// Exit 4 when a watched series could not be tested (too few eligible runs since its
    /// first run or its last change of work or deployment), instead of passing untested.
    #[arg(long, conflicts_with = "baseline")]
    pub require_tested: bool,
    /// `md` prints lines for people; `json` prints one object (with `exit_code`) for scripts.
    #[arg(long, value_enum, default_value = "md")]
    pub format: OutputFormat,
}

pub fn run(args: &GateArgs, store: &mut dyn Store) -> Exit {
    match (&args.baseline, &args.plan) {
        (Some(name), Some(plan)) => against_baseline(args, name, plan, store),
        _ => open_alerts(args, store),
    }
}

/// Alert lines the gate prints before it points at the trend report for the rest.
const ALERT_LINES: usize = 15;

fn open_alerts(args: &GateArgs, store: &mut dyn Store) -> Exit {
    let updated = match crate::history::update(store, args.plan.as_deref(), None) {
        Ok(updated) => updated,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::RunFailed;
        }
    };
    if updated.trends.is_empty() {
        eprintln!("error: the store holds no runs to gate on");
        return Exit::InvalidInput;
    }
    let found = AlertGate::of(&updated);
    let exit = if !found.open.is_empty() {
        Exit::AlertOpen
    } else if args.require_tested && found.untested_watched > 0 {
        Exit::Inconclusive
    } else {
        Exit::Success
    };
    match args.format {
        OutputFormat::Json => print!(
            "{}",
            to_json(&json!({"gate": found, "exit_code": exit.code()}))
        ),
        OutputFormat::Md => print_alerts(&found),
    }
    if exit == Exit::Inconclusive {
        eprintln!(
            "error: {} watched series could not be tested yet (--require-tested)",
            found.untested_watched
        );
    }
    exit
}

fn print_alerts(found: &AlertGate) {
    for a in found.open.iter().take(ALERT_LINES) {
        println!(
            "alert {} open: {} (opened by {})",
            a.id,
            alert_line(a),
            a.opened_by
        );
    }
    if found.open.len() > ALERT_LINES {
        println!(
            "… and {} more open alerts (servebench history trend lists them)",
            found.open.len() - ALERT_LINES
        );
    }
    if !found.left_out.is_empty() {
        let parts: Vec<String> = found
            .left_out
            .iter()
            .map(|(reason, runs)| format!("{runs} {reason}"))
            .collect();
        println!("left out: {}", parts.join(", "));
    }
    for u in &found.untestable {
        println!(
            "{} series cannot be tested yet: fewer than {} eligible runs since \
             their first run or their last change of work or deployment",
            u.series, u.runs_needed
        );
    }
    let verdict = if found.open.is_empty() {
        "no open alerts".to_string()
    } else {
        format!("{} open alert(s)", found.open.len())
    };
    match found.acknowledged.len() {
        0 => println!("{verdict}"),
        n => println!("{verdict}, {n} acknowledged"),
    }
}

fn against_baseline(args: &GateArgs, name: &str, plan: &str, store: &mut dyn Store) -> Exit {
    let request = GateRequest {
        baselines: &args.baselines,
        name,
        plan,
        extra_gates: &args.gates,
        force: args.force,
    };
    let found = match gate::against_baseline(store, &request) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("error: {e}");
            return match e {
                GateError::Input(_) => Exit::InvalidInput,
                GateError::Store(_) => Exit::RunFailed,
            };
        }
    };
    for note in &found.notes {
        eprintln!("{note}");
    }
    let capacities = match &found.outcome {
        Outcome::Compared(c) => c.capacities.len(),
        Outcome::Figures(_) => 0,
    };
    // A baseline with no gates checks only the capacity searches both runs made; with none,
    // it would pass whatever the latest run measured.
    if found.gates.is_empty() {
        let shown = args.baselines.display();
        if capacities == 0 {
            eprintln!(
                "error: baseline `{name}` has no gates to check: give it `gates:` in {shown} \
                 or pass --gate EXPR"
            );
            return Exit::InvalidInput;
        }
        eprintln!(
            "baseline `{name}` has no gates: only the capacity of {capacities} search(es) is checked"
        );
    }
    let exit = if found.passed() {
        Exit::Success
    } else {
        Exit::GateFailed
    };
    match args.format {
        OutputFormat::Json => print!("{}", to_json(&baseline_json(name, &found, exit))),
        OutputFormat::Md => print_baseline(&found),
    }
    if exit != Exit::Success {
        eprintln!(
            "the latest run {} fails baseline `{name}` ({})",
            found.latest_run, found.base_run
        );
    }
    exit
}

fn print_baseline(found: &BaselineGate) {
    match &found.outcome {
        Outcome::Compared(comparison) => {
            for refused in &comparison.refused {
                eprintln!(
                    "warning: phase `{}` asked for different work than the baseline: its \
                     change gates fail (--force checks them anyway)",
                    refused.phase
                );
            }
            print!("{}", crate::report::render_comparison(comparison));
        }
        Outcome::Figures(checks) => print!("{}", gates_markdown(checks)),
    }
    for c in found.fallen() {
        eprintln!(
            "capacity of search `{}` fell: its interval lies below the baseline's",
            c.search
        );
    }
}

/// The gate's checks first, then the whole comparison when both sides had reports.
fn baseline_json(name: &str, found: &BaselineGate, exit: Exit) -> serde_json::Value {
    let comparison = match &found.outcome {
        Outcome::Compared(c) => serde_json::to_value(c).unwrap_or_default(),
        Outcome::Figures(_) => serde_json::Value::Null,
    };
    json!({
        "baseline": name,
        "base_run": found.base_run,
        "latest_run": found.latest_run,
        "passed": found.passed(),
        "exit_code": exit.code(),
        "checks": found.checks(),
        "fallen": found.fallen().iter().map(|c| &c.search).collect::<Vec<_>>(),
        "notes": found.notes,
        "comparison": comparison,
    })
}
