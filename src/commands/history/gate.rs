//! `servebench history gate`: exit 5 while an alert is open (acknowledged ones pass), or,
//! with `--baseline`, exit 1 when the latest run fails its gates against the named baseline
//! or a capacity search's interval lies wholly below the baseline's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::exit::Exit;
use crate::history::baseline;
use crate::history::render::alert_line;
use crate::history::series::AlertState;
use crate::history::store::{RunFilter, Store};
use crate::history::trend::{SeriesTrend, Settings};
use crate::report::compare::capacity::CapacityVerdict;
use crate::report::compare::{CompareOptions, compare_with, gate::Gate};

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
/// excluded`; a run counts once per reason, client-bound in any of its phases).
fn left_out(trends: &[SeriesTrend]) {
    let mut why: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for p in trends.iter().flat_map(|t| &t.points) {
        let reason = if p.excluded.is_some() {
            "excluded"
        } else if p.partial {
            "partial"
        } else if p.client_bound {
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
    let shown = args.baselines.display().to_string();
    let resolved = baseline::load(&args.baselines).and_then(|list| {
        let b = baseline::find(&list, name, &shown)?.clone();
        let run = baseline::resolve(&b, store, plan)?;
        Ok((b, run))
    });
    let (chosen, base_id) = match resolved {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::InvalidInput;
        }
    };
    let mut gates = Vec::new();
    for text in chosen.gates.iter().chain(&args.gates) {
        match text.parse::<Gate>() {
            Ok(g) => gates.push(g),
            Err(e) => {
                eprintln!("error: {e}");
                return Exit::InvalidInput;
            }
        }
    }
    let latest = store.runs(&RunFilter {
        plan: Some(plan.to_string()),
        ..RunFilter::default()
    });
    let latest = match latest {
        Ok(runs) => runs
            .into_iter()
            .rev()
            .find(|r| r.complete && r.excluded.is_none()),
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::RunFailed;
        }
    };
    let Some(latest) = latest else {
        eprintln!("error: no complete run of `{plan}` in the history");
        return Exit::InvalidInput;
    };
    let paths = [&base_id, &latest.id].map(|id| store.run(id).map(|r| r.report_path));
    let (base_path, new_path) = match paths {
        [Ok(Some(b)), Ok(Some(n))] => (b, n),
        _ => {
            eprintln!(
                "error: the history holds no report file for run {base_id} or {}",
                latest.id
            );
            return Exit::InvalidInput;
        }
    };
    let (base, new) = match (read(&base_path), read(&new_path)) {
        (Ok(b), Ok(n)) => (b, n),
        (b, n) => {
            for e in [b.err(), n.err()].into_iter().flatten() {
                eprintln!("error: {e}");
            }
            return Exit::InvalidInput;
        }
    };
    let comparison = compare_with(
        (&base_path.display().to_string(), &base),
        (&new_path.display().to_string(), &new),
        &gates,
        CompareOptions { force: args.force },
    );
    // A baseline with no gates checks only the capacity searches both runs made; with none,
    // it would pass whatever the latest run measured.
    if gates.is_empty() {
        if comparison.capacities.is_empty() {
            eprintln!(
                "error: baseline `{name}` has no gates to check: give it `gates:` in {shown} \
                 or pass --gate EXPR"
            );
            return Exit::InvalidInput;
        }
        eprintln!(
            "baseline `{name}` has no gates: only the capacity of {} search(es) is checked",
            comparison.capacities.len()
        );
    }
    for refused in &comparison.refused {
        eprintln!(
            "warning: phase `{}` asked for different work than the baseline: its change \
             gates fail (--force checks them anyway)",
            refused.phase
        );
    }
    print!("{}", crate::report::render_comparison(&comparison));
    // A capacity whose interval lies wholly below the baseline's fell, as `compare` calls it.
    let fallen: Vec<_> = comparison
        .capacities
        .iter()
        .filter(|c| c.verdict == CapacityVerdict::Lower)
        .collect();
    for c in &fallen {
        eprintln!(
            "capacity of search `{}` fell: its interval lies below the baseline's",
            c.search
        );
    }
    if comparison.passed && fallen.is_empty() {
        Exit::Success
    } else {
        eprintln!(
            "the latest run {} fails baseline `{name}` ({base_id})",
            latest.id
        );
        Exit::GateFailed
    }
}

fn read(path: &Path) -> Result<crate::report::Report, String> {
    let mut report = crate::report::read_report(path).map_err(|e| e.to_string())?;
    crate::report::formats::records::attach_records(&mut report, path)?;
    Ok(report)
}
