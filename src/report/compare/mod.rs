//! Comparing two reports: phases matched by name, per-metric changes with bootstrap
//! confidence intervals where records exist and the percentiles' order-statistic intervals,
//! and `--gate` checks (grammar in [`gate`]).

pub mod capacity;
pub(crate) mod document;
pub mod gate;
mod models;
pub mod plan_diff;
pub mod provenance;
pub mod untested;

use std::collections::{HashMap, HashSet};

use indexmap::IndexMap;
use serde::Serialize;

use crate::figure::Figure;
use crate::metrics::conditions::ConditionChange;
use crate::metrics::{
    self, BOOTSTRAP_RESAMPLES, CONFIDENCE, ErrorCause, Interval, bootstrap_diff_cis,
};
use crate::plan::PercentileMethod;
use crate::report::model::figure_path::{self, Better, FigurePath, Scalar, Stat, Unit};
use crate::report::model::{PhaseResult, Report, SaltUsed};
use crate::report::render::table::phase_error_causes;
use gate::{Gate, GateCheck, check_gates, relative};
use plan_diff::{PlanDiff, plan_diff};
use provenance::{ProvenanceDiff, RefusedPhase, condition_changes, provenance_diffs, work_differs};
use untested::{SideRate, Tally, TooFewSamples, Untested, too_few_samples, untested_by_design};

const BOOTSTRAP_SEED: u64 = 0x5e7e_be7c_0000_0001;

// ---------------------------------------------------------------- comparison model

/// Which report a side of the comparison came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    pub path: String,
    pub plan: String,
    pub run_id: String,
    pub started_at: String,
}

/// A metric's change between the two sides of one phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricChange {
    pub metric: String,
    #[serde(skip)]
    pub unit: Option<Unit>,
    #[serde(skip)]
    pub better: Option<Better>,
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// `new − base`, in the metric's unit (seconds for ttft/tpot/e2e).
    pub change: Option<f64>,
    /// `(new − base) / base`.
    pub relative_change: Option<f64>,
    /// Bootstrap 95% interval of `new − base`, when both sides have per-request records.
    pub ci95: Option<[f64; 2]>,
    /// Whether the change is more than noise: the percentiles' own 95% intervals on the two
    /// sides do not overlap, and, where records exist, the bootstrap interval `ci95` also
    /// excludes zero. `None` when neither test is possible.
    pub significant: Option<bool>,
    /// A percentile's 95% order-statistic interval on each side (`metrics::interval`), when
    /// the sample is large enough.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_interval: Option<[f64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_interval: Option<[f64; 2]>,
    /// Samples behind the figure on each side (base, new), when known.
    pub samples: Option<[u64; 2]>,
    /// Why significance was not tested, whenever `significant` is `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<Untested>,
}

impl MetricChange {
    /// Whether the change is for the worse (`Some(false)`: for the better); `None` for no
    /// change, or a figure that is neither better higher nor lower.
    pub fn worse(&self) -> Option<bool> {
        let (d, better) = (self.change?, self.better?);
        if d == 0.0 {
            return None;
        }
        match better {
            Better::Lower => Some(d > 0.0),
            Better::Higher => Some(d < 0.0),
            Better::Neither => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseComparison {
    pub phase: String,
    pub metrics: Vec<MetricChange>,
    /// Error causes the new side has and the base side does not, most frequent first;
    /// empty (and absent) when the base's causes are unknown (it has errors but neither
    /// `errors_by_cause` nor every record).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub new_error_causes: Vec<ErrorCause>,
    /// Measured conditions that differ between the sides (a moved cache ratio, a restart…),
    /// shown beside the figures they explain.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ConditionChange>,
    /// How each side's prompts were salted (base, new), where the reports say.
    pub prompt_salt: [Option<SaltUsed>; 2],
    /// The two asked for different work and `--force` set them side by side anyway.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub forced: bool,
    /// Percentiles not tested for too few samples, and what would make them testable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub too_few_samples: Option<TooFewSamples>,
}

/// What `compare` may do beyond the default.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CompareOptions {
    /// Set phases side by side even when they asked for different work (`--force`).
    pub force: bool,
}

/// Everything `servebench compare` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub base: Side,
    pub new: Side,
    /// Significant regressions and improvements, and figures that could not be tested.
    pub tally: Tally,
    pub phases: Vec<PhaseComparison>,
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
    /// The runs are of different plans (their names differ) or phases in both asked for
    /// different work: the headline says so before its counts.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub plans_differ: bool,
    /// Phases in both reports that asked for different work, not compared (without `--force`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<RefusedPhase>,
    /// Capacity searches both runs made, compared by their intervals.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub capacities: Vec<capacity::CapacityChange>,
    /// Provenance that differs between the two runs (engine version, host, labels…).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub provenance: Vec<ProvenanceDiff>,
    /// How the two runs' plans differ: the file's hash and the expanded plan's keys.
    #[serde(skip_serializing_if = "PlanDiff::is_empty")]
    pub plan: PlanDiff,
    pub gates: Vec<GateCheck>,
    /// False when any gate check failed.
    pub passed: bool,
    pub bootstrap_resamples: usize,
    pub confidence: f64,
}

fn side(path: &str, r: &Report) -> Side {
    Side {
        path: path.to_string(),
        plan: r.plan.name.clone(),
        run_id: r.span.run_id.clone(),
        started_at: r.span.started_at.clone(),
    }
}

/// Compare `new` against `base` and check every gate.
pub fn compare(
    base_path: &str,
    base: &Report,
    new_path: &str,
    new: &Report,
    gates: &[Gate],
) -> Comparison {
    compare_with(
        (base_path, base),
        (new_path, new),
        gates,
        CompareOptions::default(),
    )
}

/// [`compare`], with `options`: phases that asked for different work are refused unless
/// `options.force`.
pub fn compare_with(
    (base_path, base): (&str, &Report),
    (new_path, new): (&str, &Report),
    gates: &[Gate],
    options: CompareOptions,
) -> Comparison {
    let (phases, mut refused) = compare_phases(base, new, options);
    let plans_differ = base.plan.name != new.plan.name || !refused.is_empty();
    if options.force {
        refused.clear();
    }
    let not_compared: Vec<&str> = refused.iter().map(|r| r.phase.as_str()).collect();
    let only_in = |side: &Report, other: &Report| -> Vec<String> {
        side.phases
            .iter()
            .filter(|p| {
                !other
                    .phases
                    .iter()
                    .any(|o| o.header.phase == p.header.phase)
            })
            .map(|p| p.header.phase.clone())
            .collect()
    };
    let checks = check_gates(gates, base, new, &not_compared);
    let passed = checks.iter().all(|c| c.passed);
    let mut tally = Tally::default();
    phases
        .iter()
        .flat_map(|p| &p.metrics)
        .for_each(|m| tally.add(m));
    Comparison {
        base: side(base_path, base),
        new: side(new_path, new),
        tally,
        phases,
        only_in_base: only_in(base, new),
        only_in_new: only_in(new, base),
        plans_differ,
        refused,
        capacities: capacity::compare_capacities(&base.searches, &new.searches),
        provenance: provenance_diffs(base, new),
        plan: plan_diff(base, new),
        gates: checks,
        passed,
        bootstrap_resamples: BOOTSTRAP_RESAMPLES,
        confidence: CONFIDENCE,
    }
}

/// The phases both reports ran, compared (and, in a model mix, each model both served); the
/// phases that asked for different work, which are left out unless `options.force`.
fn compare_phases(
    base: &Report,
    new: &Report,
    options: CompareOptions,
) -> (Vec<PhaseComparison>, Vec<RefusedPhase>) {
    let methods = (
        base.timing_methodology.percentile_method,
        new.timing_methodology.percentile_method,
    );
    let mut phases = Vec::new();
    let mut refused = Vec::new();
    for nb in &new.phases {
        let Some(b) = base
            .phases
            .iter()
            .find(|p| p.header.phase == nb.header.phase)
        else {
            continue;
        };
        let differs = work_differs(b, nb);
        let forced = differs.is_some() && options.force;
        if let Some(differs) = differs {
            refused.push(differs);
            if !options.force {
                continue;
            }
        }
        let conditions = condition_changes((b, base), (nb, new));
        let mut compared = compare_phase((b, methods.0), (nb, methods.1), conditions);
        compared.forced = forced;
        phases.push(compared);
        // A model or archetype mix: each group both sides sent, compared on its own.
        let groups = models::shared_models(b, nb);
        for (bm, nm) in groups.into_iter().chain(models::shared_archetypes(b, nb)) {
            let mut by_model = compare_phase((&bm, methods.0), (&nm, methods.1), Vec::new());
            by_model.forced = forced;
            phases.push(by_model);
        }
    }
    (phases, refused)
}

/// Bootstrap intervals of `new − base` (and the samples behind them) for the metrics that
/// are statistics of per-request values; metrics of the same values share one bootstrap.
fn bootstrap_intervals(
    (base, base_method): (&PhaseResult, PercentileMethod),
    (new, new_method): (&PhaseResult, PercentileMethod),
    metrics: &[FigurePath],
) -> HashMap<FigurePath, ([f64; 2], [u64; 2])> {
    let mut groups: IndexMap<&'static str, Vec<FigurePath>> = IndexMap::new();
    for m in metrics {
        if let Some(g) = sample_group(*m) {
            groups.entry(g).or_default().push(*m);
        }
    }
    let mut intervals = HashMap::new();
    for (group, members) in &groups {
        let Some(first) = members.first() else {
            continue;
        };
        let (Some((bs, _)), Some((ns, _))) = (first.samples(base), first.samples(new)) else {
            continue;
        };
        let stats: Vec<Stat> = members.iter().filter_map(|m| first_stat(*m)).collect();
        let seed = BOOTSTRAP_SEED
            ^ crate::hash::fnv1a_64(format!("{}/{group}", new.header.phase).as_bytes());
        let cis = bootstrap_diff_cis(&bs, base_method, &ns, new_method, &stats, seed);
        for (m, ci) in members.iter().zip(cis) {
            intervals.insert(*m, (ci, [bs.len() as u64, ns.len() as u64]));
        }
    }
    intervals
}

fn compare_phase(
    (base, base_method): (&PhaseResult, PercentileMethod),
    (new, new_method): (&PhaseResult, PercentileMethod),
    conditions: Vec<ConditionChange>,
) -> PhaseComparison {
    let metrics = figure_path::compared_paths();
    let intervals = bootstrap_intervals((base, base_method), (new, new_method), &metrics);
    let context = PhaseContext {
        cache_moved: conditions.iter().any(ConditionChange::explains_latency),
        // A client-bound side's latencies hold client delay: no change is called significant.
        client_bound: [base, new]
            .iter()
            .any(|p| p.client_trust.as_ref().is_some_and(|t| !t.is_trusted())),
    };
    let out: Vec<MetricChange> = metrics
        .into_iter()
        .filter_map(|m| metric_change(m, (base, new), intervals.get(&m), context))
        .collect();
    let rate = |p: &PhaseResult| SideRate {
        requests: p.summary.requests,
        elapsed: p.summary.elapsed,
    };
    let quantile_of = |name: &str| name.parse::<FigurePath>().ok().and_then(percentile_q);
    PhaseComparison {
        phase: new.header.phase.clone(),
        too_few_samples: too_few_samples(&out, [rate(base), rate(new)], quantile_of),
        metrics: out,
        new_error_causes: new_error_causes(base, new),
        conditions,
        prompt_salt: [base.header.prompt_salt, new.header.prompt_salt],
        forced: false,
    }
}

/// What about a phase's two sides keeps any of its changes from being tested.
#[derive(Clone, Copy)]
struct PhaseContext {
    /// A moved prefix-cache ratio, which explains a latency change.
    cache_moved: bool,
    /// A client-bound side, whose latencies hold client delay.
    client_bound: bool,
}

/// One metric's change, with its intervals and whether it is significant; `None` when
/// neither side has the metric.
fn metric_change(
    metric: FigurePath,
    (base, new): (&PhaseResult, &PhaseResult),
    bootstrap: Option<&([f64; 2], [u64; 2])>,
    context: PhaseContext,
) -> Option<MetricChange> {
    let (b, n) = (metric.value(base), metric.value(new));
    if b.is_none() && n.is_none() {
        return None;
    }
    let (bi, ni) = (
        percentile_interval(metric, base),
        percentile_interval(metric, new),
    );
    let mut change = MetricChange {
        metric: metric.to_string(),
        unit: Some(metric.unit()),
        better: Some(metric.better()),
        base: b,
        new: n,
        change: b.zip(n).map(|(b, n)| n - b),
        relative_change: b.zip(n).map(|(b, n)| relative(b, n)),
        ci95: bootstrap.map(|(ci, _)| *ci),
        significant: None,
        base_interval: bi.map(|i| [i.lo, i.hi]),
        new_interval: ni.map(|i| [i.lo, i.hi]),
        samples: bootstrap.map(|(_, samples)| *samples),
        note: None,
    };
    if let (None, FigurePath::Dist(kind, _)) = (bootstrap, metric) {
        change.samples = dist_samples(kind, base)
            .zip(dist_samples(kind, new))
            .map(|(b, n)| [b, n]);
    }
    let overlap = bi.zip(ni).map(|(b, n)| b.lo <= n.hi && n.lo <= b.hi);
    let excludes_zero = bootstrap.map(|(ci, _)| ci[0] > 0.0 || ci[1] < 0.0);
    change.significant = match percentile_q(metric) {
        // A percentile needs its intervals on both sides (and, with records, the bootstrap
        // must agree): a bootstrap of a tail from too few samples alone would mostly
        // measure the largest value, which a single hiccup moves.
        Some(q) => {
            if overlap.is_none() && change.samples.is_some_and(|s| too_few(s, q)) {
                change.note = Some(Untested::TooFewSamples);
            }
            overlap.map(|o| !o && excludes_zero != Some(false))
        }
        None => excludes_zero,
    };
    if change.significant.is_none() && change.note.is_none() {
        change.note = Some(untested_by_design(metric).unwrap_or(Untested::NoRecordsOrIntervals));
    }
    // A moved cache ratio explains a latency change better than a busy client does.
    let latency = matches!(metric.unit(), Unit::Seconds | Unit::Millis);
    if context.cache_moved && latency {
        change.significant = None;
        change.note = Some(Untested::CacheMoved);
    } else if context.client_bound {
        change.significant = None;
        change.note = Some(Untested::ClientBound);
    }
    Some(change)
}

/// The causes of `new`'s failures that `base` does not have.
fn new_error_causes(base: &PhaseResult, new: &PhaseResult) -> Vec<ErrorCause> {
    let base_causes = phase_error_causes(base);
    if base.summary.errors > 0 && base_causes.is_empty() {
        return Vec::new();
    }
    let known: HashSet<&str> = base_causes.iter().map(|c| c.cause.as_str()).collect();
    phase_error_causes(new)
        .into_iter()
        .filter(|c| !known.contains(c.cause.as_str()))
        .collect()
}

/// Which per-request values a metric is a statistic of, for metrics that have them.
fn sample_group(m: FigurePath) -> Option<&'static str> {
    match m {
        FigurePath::Dist(kind, _) => Some(kind.name()),
        FigurePath::Scalar(Scalar::ErrorRate) => Some("error_rate"),
        FigurePath::Scalar(Scalar::ValidShare) => Some("valid_share"),
        FigurePath::Scalar(Scalar::Accuracy) => Some("accuracy"),
        FigurePath::Scalar(_) => None,
    }
}

/// The statistic a sampled metric reduces its values with.
fn first_stat(m: FigurePath) -> Option<Stat> {
    match m {
        FigurePath::Dist(_, stat) => Some(stat),
        FigurePath::Scalar(Scalar::ErrorRate | Scalar::ValidShare | Scalar::Accuracy) => {
            Some(Stat::Mean)
        }
        FigurePath::Scalar(_) => None,
    }
}

/// The quantile a percentile metric reads; `None` for other metrics.
fn percentile_q(metric: FigurePath) -> Option<f64> {
    match metric {
        FigurePath::Dist(_, stat) => stat.quantile(),
        FigurePath::Scalar(_) => None,
    }
}

/// Whether either side is below the sample size a `q` interval needs.
fn too_few(samples: [u64; 2], q: f64) -> bool {
    let need = metrics::min_samples_for_interval(q);
    samples.iter().any(|&n| n < need)
}

/// A percentile metric's 95% interval on one side: the one the report stores, else computed
/// from its records (reports written before intervals); `None` for other metrics, or when the
/// sample is too small for one.
fn percentile_interval(metric: FigurePath, phase: &PhaseResult) -> Option<Interval> {
    let FigurePath::Dist(kind, stat) = metric else {
        return None;
    };
    let q = percentile_q(metric)?;
    if let Some(ci) = phase.summary.distribution(kind)?.ci95 {
        return ci.of(stat);
    }
    let (mut values, _) = metric.samples(phase)?;
    values.sort_by(f64::total_cmp);
    metrics::percentile_interval(&values, q)
}

fn dist_samples(kind: Figure, p: &PhaseResult) -> Option<u64> {
    p.summary
        .distribution(kind)
        .map(|d| d.samples)
        .filter(|n| *n > 0)
}
