//! `servebench history gate`: exit 5 while an alert is open (acknowledged ones pass), or,
//! with `--baseline`, exit 1 when the latest run fails its gates against the named baseline
//! or a capacity search's interval lies wholly below the baseline's.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::exit::Exit;
use crate::history::gate::{self, GateError, GateRequest, Outcome};
use crate::history::render::alert_line;
use crate::history::series::AlertState;
use crate::history::store::Store;
use crate::history::trend::{SeriesTrend, Settings, eligible};
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
    let open: Vec<_> = updated
        .alerts
        .iter()
        .filter(|a| a.state == AlertState::Open)
        .collect();
    for a in open.iter().take(ALERT_LINES) {
        println!(
            "alert {} open: {} (opened by {})",
            a.id,
            alert_line(a),
            a.opened_by
        );
    }
    if open.len() > ALERT_LINES {
        println!(
            "… and {} more open alerts (servebench history trend lists them)",
            open.len() - ALERT_LINES
        );
    }
    let acknowledged = updated
        .alerts
        .iter()
        .filter(|a| a.state == AlertState::Acknowledged)
        .count();
    if updated.trends.is_empty() {
        eprintln!("error: the store holds no runs to gate on");
        return Exit::InvalidInput;
    }
    left_out(&updated.trends);
    untestable(&updated.trends, &updated.settings);
    let untested_watched = updated
        .trends
        .iter()
        .zip(&updated.watched)
        .filter(|(t, watched)| **watched && !t.testable(&updated.settings))
        .count();
    let verdict = if open.is_empty() {
        "no open alerts".to_string()
    } else {
        format!("{} open alert(s)", open.len())
    };
    if acknowledged > 0 {
        println!("{verdict}, {acknowledged} acknowledged");
    } else {
        println!("{verdict}");
    }
    if !open.is_empty() {
        Exit::AlertOpen
    } else if args.require_tested && untested_watched > 0 {
        eprintln!(
            "error: {untested_watched} watched series could not be tested yet (--require-tested)"
        );
        Exit::Inconclusive
    } else {
        Exit::Success
    }
}

/// One line saying how many runs detection left out and why (`left out: 5 client-bound, 1
/// excluded`; a run counts once per reason, client-bound where a figure of it was left out
/// for it: a narrow late band keeps a client-bound percentile in).
fn left_out(trends: &[SeriesTrend]) {
    let mut why: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for p in trends.iter().flat_map(|t| &t.points) {
        let reason = if p.excluded.is_some() {
            "excluded"
        } else if p.partial {
            "partial"
        } else if p.client_bound && !eligible(p) {
            "client-bound"
        } else {
            continue;
        };
        why.entry(reason).or_default().insert(&p.run);
    }
    if !why.is_empty() {
        let parts: Vec<String> = why
            .iter()
            .map(|(reason, runs)| format!("{} {reason}", runs.len()))
            .collect();
        println!("left out: {}", parts.join(", "));
    }
}

/// One line per number of runs needed, counting the series whose latest segment has too
/// few eligible runs for a change to be found in it: a quiet gate there means untested.
fn untestable(trends: &[SeriesTrend], settings: &Settings) {
    let mut short: BTreeMap<usize, usize> = BTreeMap::new();
    for t in trends.iter().filter(|t| !t.testable(settings)) {
        *short.entry(t.runs_to_test(settings)).or_default() += 1;
    }
    for (needed, count) in short {
        println!(
            "{count} series cannot be tested yet: fewer than {needed} eligible runs since \
             their first run or their last change of work or deployment"
        );
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
    if found.passed() {
        Exit::Success
    } else {
        eprintln!(
            "the latest run {} fails baseline `{name}` ({})",
            found.latest_run, found.base_run
        );
        Exit::GateFailed
    }
}
