//! The baseline gate: the latest complete run of a plan against a named baseline, with
//! `compare`'s gates. Both sides come from the store: a run recorded at schema v5 or later
//! from the report kept with it (its records bounded, `kept`), so neither run's files are
//! needed; an older run from its report file while that exists, else from its stored
//! figures, which carry the gates but not the table of changes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use super::baseline;
use super::series::{Alert, AlertState, RunId};
use super::store::{RunFilter, Store, StoredRun};
use super::trend::eligible;
use super::update::Updated;
use crate::report::compare::capacity::{CapacityChange, CapacityVerdict};
use crate::report::compare::gate::{Gate, GateCheck, GateSide, check_gates};
use crate::report::compare::{CompareOptions, Comparison, compare_with};
use crate::report::model::Report;
use crate::report::model::figure_path::FigurePath;

/// What the baseline gate found.
#[derive(Debug)]
pub struct BaselineGate {
    pub base_run: RunId,
    pub latest_run: RunId,
    /// Where a side was read from when not from what the store keeps (for stderr).
    pub notes: Vec<String>,
    /// The gates checked: the baseline's and the command line's.
    pub gates: Vec<Gate>,
    pub outcome: Outcome,
}

/// The comparison, or the gates alone when a side has only its stored figures.
#[derive(Debug)]
pub enum Outcome {
    Compared(Box<Comparison>),
    Figures(Vec<GateCheck>),
}

impl BaselineGate {
    /// Capacity searches whose interval lies wholly below the baseline's (`compare`'s
    /// "fell").
    pub fn fallen(&self) -> Vec<&CapacityChange> {
        match &self.outcome {
            Outcome::Compared(c) => c
                .capacities
                .iter()
                .filter(|c| c.verdict == CapacityVerdict::Lower)
                .collect(),
            Outcome::Figures(_) => Vec::new(),
        }
    }

    pub fn checks(&self) -> &[GateCheck] {
        match &self.outcome {
            Outcome::Compared(c) => &c.gates,
            Outcome::Figures(checks) => checks,
        }
    }

    /// Every gate held and no capacity fell.
    pub fn passed(&self) -> bool {
        self.checks().iter().all(|c| c.passed) && self.fallen().is_empty()
    }
}

/// Why the gate could not be checked: bad input (exit 2) or a store that failed.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Store(String),
}

/// What `history gate --baseline` asks for.
pub struct GateRequest<'a> {
    pub baselines: &'a Path,
    pub name: &'a str,
    pub plan: &'a str,
    /// Gates beyond the baseline's own, in `compare`'s grammar.
    pub extra_gates: &'a [String],
    pub force: bool,
}

/// Check the latest complete, not excluded run of the plan against the named baseline.
pub fn against_baseline(
    store: &dyn Store,
    request: &GateRequest,
) -> Result<BaselineGate, GateError> {
    let shown = request.baselines.display().to_string();
    let input = |e: &dyn std::fmt::Display| GateError::Input(e.to_string());
    let list = baseline::load(request.baselines).map_err(|e| input(&e))?;
    let chosen = baseline::find(&list, request.name, &shown).map_err(|e| input(&e))?;
    let base_run = baseline::resolve(chosen, store, request.plan).map_err(|e| input(&e))?;
    let gates = chosen
        .gates
        .iter()
        .chain(request.extra_gates)
        .map(|text| text.parse::<Gate>().map_err(|e| input(&e)))
        .collect::<Result<Vec<_>, _>>()?;
    let runs = store
        .runs(&RunFilter {
            plan: Some(request.plan.to_string()),
            ..RunFilter::default()
        })
        .map_err(|e| GateError::Store(e.to_string()))?;
    let latest = runs
        .into_iter()
        .rev()
        .find(|r| r.complete && r.excluded.is_none())
        .ok_or_else(|| {
            GateError::Input(format!(
                "no complete run of `{}` in the history",
                request.plan
            ))
        })?;
    let mut notes = Vec::new();
    let base = side(store, &base_run, &mut notes)?;
    let new = side(store, &latest.id, &mut notes)?;
    let outcome = match (base, new) {
        (Side::Report(bl, b), Side::Report(nl, n)) => Outcome::Compared(Box::new(compare_with(
            (&bl, &b),
            (&nl, &n),
            &gates,
            CompareOptions {
                force: request.force,
            },
        ))),
        (b, n) => Outcome::Figures(figure_checks(&gates, &b, &n, request.force)),
    };
    Ok(BaselineGate {
        base_run,
        latest_run: latest.id,
        notes,
        gates,
        outcome,
    })
}

/// One side of the gate: a report (its label as compare shows it), or only the run's
/// stored figures.
enum Side {
    Report(String, Box<Report>),
    Figures(Box<StoredRun>),
}

fn side(store: &dyn Store, id: &str, notes: &mut Vec<String>) -> Result<Side, GateError> {
    let failed = |e: &dyn std::fmt::Display| GateError::Store(format!("run {id}: {e}"));
    let run = store.run(id).map_err(|e| failed(&e))?;
    // The path the run was recorded from names it, as `compare` of the files would.
    let label = run
        .report_path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| format!("run {id}"));
    if let Some(text) = store.kept_report(id).map_err(|e| failed(&e))? {
        let report = serde_json::from_str::<Report>(&text)
            .map_err(|e| failed(&format!("the report kept in the store does not read: {e}")))?;
        return Ok(Side::Report(label, Box::new(report)));
    }
    if let Some(path) = run.report_path.clone().filter(|p| p.exists()) {
        notes.push(format!(
            "run {id} was recorded before schema v5: read from its report file {}",
            path.display()
        ));
        let report = read(&path).map_err(GateError::Input)?;
        return Ok(Side::Report(label, Box::new(report)));
    }
    notes.push(format!(
        "run {id} was recorded before schema v5 and its report file is gone: its gates read \
         its stored figures (no table of changes, no capacity check)"
    ));
    Ok(Side::Figures(Box::new(run)))
}

/// A report with every record beside it, as `compare` reads one.
fn read(path: &Path) -> Result<Report, String> {
    let mut report = crate::report::read_report(path).map_err(|e| e.to_string())?;
    crate::report::formats::records::attach_records(&mut report, path)?;
    Ok(report)
}

/// The gates on stored figures; a change gate fails on a phase whose asked-for work differs
/// between the sides (its hash), unless `force`.
fn figure_checks(gates: &[Gate], base: &Side, new: &Side, force: bool) -> Vec<GateCheck> {
    let work = |side: &Side, phase: &str| -> Option<String> {
        match side {
            Side::Report(_, r) => r
                .phases
                .iter()
                .find(|p| p.header.phase == phase)
                .and_then(|p| p.header.work_sha256.clone()),
            Side::Figures(run) => run
                .rows
                .phases
                .iter()
                .find(|p| p.phase == phase)
                .and_then(|p| p.work_sha256.clone()),
        }
    };
    let names = gate_side(new).phase_names();
    let refused: Vec<&str> = names
        .iter()
        .copied()
        .filter(|p| !force && matches!((work(base, p), work(new, p)), (Some(b), Some(n)) if b != n))
        .collect();
    check_gates(gates, gate_side(base), gate_side(new), &refused)
}

fn gate_side(side: &Side) -> &dyn GateSide {
    match side {
        Side::Report(_, r) => &**r,
        Side::Figures(run) => &**run,
    }
}

/// A run's stored figures as a side of the gates: each figure's stored value.
impl GateSide for StoredRun {
    fn phase_names(&self) -> Vec<&str> {
        self.rows.phases.iter().map(|p| p.phase.as_str()).collect()
    }

    fn figure_at(&self, index: usize, metric: FigurePath) -> Option<f64> {
        let name = metric.to_string();
        self.rows
            .phases
            .get(index)?
            .figures
            .iter()
            .find(|f| f.figure == name)
            .map(|f| f.value)
    }
}

/// What the alert gate found once the trends are up to date.
#[derive(Debug, Serialize)]
pub struct AlertGate<'a> {
    pub open: Vec<&'a Alert>,
    pub acknowledged: Vec<&'a Alert>,
    /// Runs detection left out, by reason (a run counts once per reason).
    pub left_out: BTreeMap<&'static str, usize>,
    /// Series whose latest segment has too few eligible runs to find a change in, by the
    /// number of runs needed.
    pub untestable: Vec<Untestable>,
    /// Of those, the series a plan watches (opens alerts on).
    pub untested_watched: usize,
}

#[derive(Debug, Serialize)]
pub struct Untestable {
    pub runs_needed: usize,
    pub series: usize,
}

impl<'a> AlertGate<'a> {
    pub fn of(updated: &'a Updated) -> AlertGate<'a> {
        let in_state = |state: AlertState| -> Vec<&Alert> {
            updated.alerts.iter().filter(|a| a.state == state).collect()
        };
        let settings = &updated.settings;
        let mut short: BTreeMap<usize, usize> = BTreeMap::new();
        for t in updated.trends.iter().filter(|t| !t.testable(settings)) {
            *short.entry(t.runs_to_test(settings)).or_default() += 1;
        }
        AlertGate {
            open: in_state(AlertState::Open),
            acknowledged: in_state(AlertState::Acknowledged),
            left_out: left_out(updated),
            untestable: short
                .into_iter()
                .map(|(runs_needed, series)| Untestable {
                    runs_needed,
                    series,
                })
                .collect(),
            untested_watched: updated
                .trends
                .iter()
                .zip(&updated.watched)
                .filter(|(t, watched)| **watched && !t.testable(settings))
                .count(),
        }
    }
}

/// How many runs detection left out and why: excluded, partial, or client-bound where a
/// figure of it was left out for it (a narrow late band keeps a client-bound percentile in).
fn left_out(updated: &Updated) -> BTreeMap<&'static str, usize> {
    let mut why: BTreeMap<&'static str, BTreeSet<&str>> = BTreeMap::new();
    for p in updated.trends.iter().flat_map(|t| &t.points) {
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
    why.into_iter()
        .map(|(reason, runs)| (reason, runs.len()))
        .collect()
}
