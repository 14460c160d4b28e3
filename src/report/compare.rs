//! Comparing two reports: phases matched by name, per-metric changes with bootstrap
//! confidence intervals where records exist, and CI gates such as `ttft.p95 < +10%`.

use std::fmt;
use std::str::FromStr;

use std::collections::HashMap;

use indexmap::IndexMap;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Beta, Binomial, Distribution};
use serde::Serialize;

use super::figure_path::{
    Better, DistKind, FigurePath, FigurePathError, Scalar, Stat, Unit, known_figure_paths,
};
use super::model::{PhaseResult, Report};
use crate::metrics;
use crate::plan::PercentileMethod;

/// Resamples per bootstrap.
pub const BOOTSTRAP_RESAMPLES: usize = 1000;
/// Two-sided confidence level of the bootstrap interval.
pub const CONFIDENCE: f64 = 0.95;
const BOOTSTRAP_SEED: u64 = 0x5e7e_be7c_0000_0001;

/// Metrics listed for every matched phase.
pub const COMPARED_METRICS: [&str; 14] = [
    "requests",
    "errors",
    "error_rate",
    "output_tokens_per_second",
    "request_rate",
    "ttft.p50",
    "ttft.p95",
    "ttft.p99",
    "tpot.p50",
    "tpot.p95",
    "tpot.p99",
    "e2e.p50",
    "e2e.p95",
    "e2e.p99",
];

// ---------------------------------------------------------------- gates

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

/// What the right-hand side of a gate compares against.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Threshold {
    /// Signed percentage: `(new − base) / base`, as a fraction.
    Relative(f64),
    /// Signed value: `new − base`, in the metric's unit.
    Delta(f64),
    /// Unsigned value: the new report's figure, in the metric's unit.
    Value(f64),
}

impl Threshold {
    pub fn compared(self) -> Compared {
        match self {
            Threshold::Relative(_) => Compared::RelativeChange,
            Threshold::Delta(_) => Compared::Change,
            Threshold::Value(_) => Compared::Value,
        }
    }
}

/// A parsed `--gate` expression: `[PHASE:]METRIC OP THRESHOLD`.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    pub text: String,
    pub phase: Option<String>,
    pub metric: FigurePath,
    pub op: Op,
    pub threshold: Threshold,
}

/// Why a gate expression did not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid gate `{gate}`: {problem}")]
pub struct GateParseError {
    pub gate: String,
    pub problem: String,
}

const GATE_HELP: &str = "expected `[PHASE:]METRIC OP THRESHOLD`, e.g. `ttft.p95 < +10%`, \
`output_tokens_per_second > -5%`, `errors == 0`, `e2e.p50 < 2s`; OP is one of < <= > >= == !=";

impl FromStr for Gate {
    type Err = GateParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |problem: String| GateParseError {
            gate: text.to_string(),
            problem,
        };
        let ops = [
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<", Op::Lt),
            (">", Op::Gt),
        ];
        let found = ops
            .iter()
            .filter_map(|(sym, op)| text.find(sym).map(|i| (i, *sym, *op)))
            .min_by_key(|(i, sym, _)| (*i, std::cmp::Reverse(sym.len())));
        let Some((at, sym, op)) = found else {
            return Err(fail(format!("no comparison operator; {GATE_HELP}")));
        };
        let lhs = text[..at].trim();
        let rhs = text[at + sym.len()..].trim();
        if let Some(stray) = lhs.chars().last().filter(|c| matches!(c, '=' | '!')) {
            return Err(fail(format!(
                "`{stray}{sym}` is not an operator; use one of < <= > >= == !="
            )));
        }
        if lhs.is_empty() {
            return Err(fail(format!("no metric before `{sym}`; {GATE_HELP}")));
        }
        if rhs.is_empty() {
            return Err(fail(format!("no threshold after `{sym}`; {GATE_HELP}")));
        }
        if rhs.starts_with(['<', '>', '=', '!']) {
            return Err(fail(format!(
                "`{sym}{}` is not an operator; use one of < <= > >= == !=",
                &rhs[..1]
            )));
        }
        let (phase, metric_text) = match lhs.rsplit_once(':') {
            Some((p, m)) if !p.trim().is_empty() => (Some(p.trim().to_string()), m.trim()),
            Some(_) => return Err(fail("empty phase name before `:`".to_string())),
            None => (None, lhs),
        };
        let metric: FigurePath = metric_text.parse().map_err(|e: FigurePathError| match e {
            FigurePathError::Unknown(_) => {
                fail(format!("{e}; known metrics: {}", known_figure_paths()))
            }
            FigurePathError::MissingStat(_) | FigurePathError::UnknownStat { .. } => {
                fail(e.to_string())
            }
        })?;
        let threshold = parse_threshold(rhs, metric).map_err(fail)?;
        Ok(Gate {
            text: text.trim().to_string(),
            phase,
            metric,
            op,
            threshold,
        })
    }
}

fn parse_threshold(rhs: &str, metric: FigurePath) -> Result<Threshold, String> {
    let (signed, negative, body) = match rhs.as_bytes().first() {
        Some(b'+') => (true, false, rhs[1..].trim_start()),
        Some(b'-') => (true, true, rhs[1..].trim_start()),
        _ => (false, false, rhs),
    };
    let num_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (num, unit) = (&body[..num_end], body[num_end..].trim());
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{rhs}` is not a number with an optional unit or `%`"))?;
    let value = if negative { -value } else { value };
    let is_time = matches!(metric.unit(), Unit::Seconds | Unit::Millis);
    // Time units, converted to the metric's own unit.
    let time_scale = |u: &str| -> Option<f64> {
        let seconds = match u {
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" | "sec" => 1.0,
            "m" | "min" => 60.0,
            _ => return None,
        };
        Some(match metric.unit() {
            Unit::Millis => seconds * 1000.0,
            _ => seconds,
        })
    };
    match (signed, unit) {
        (true, "%") => Ok(Threshold::Relative(value / 100.0)),
        (false, "%") if metric.unit() == Unit::Ratio => Ok(Threshold::Value(value / 100.0)),
        (false, "%") => Err(format!(
            "`{rhs}`: a relative change needs a sign (`+{body}` or `-{body}`); an unsigned \
             percentage is only a value for ratio metrics such as error_rate"
        )),
        (_, "") if is_time => Err(format!(
            "`{metric}` is a time: give a unit (`2s`, `150ms`) or a signed relative change (`+10%`)"
        )),
        (signed, "") => Ok(if signed {
            Threshold::Delta(value)
        } else {
            Threshold::Value(value)
        }),
        (signed, u) if is_time => match time_scale(u) {
            Some(scale) if signed => Ok(Threshold::Delta(value * scale)),
            Some(scale) => Ok(Threshold::Value(value * scale)),
            None => Err(format!("unknown unit `{u}`; use us, ms, s or m")),
        },
        (_, u) => Err(format!(
            "`{metric}` takes a plain number or a signed percentage, not the unit `{u}`"
        )),
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// What a gate check compared with its threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Compared {
    RelativeChange,
    Change,
    Value,
}

/// One gate checked on one phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateCheck {
    pub gate: String,
    pub phase: Option<String>,
    pub compared: Compared,
    #[serde(skip)]
    pub unit: Option<Unit>,
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// The quantity compared with the threshold: relative change, difference or new value.
    pub observed: Option<f64>,
    pub passed: bool,
    /// Why the gate could not be evaluated, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

fn check_gate(
    gate: &Gate,
    phase: &str,
    base: Option<&PhaseResult>,
    new: Option<&PhaseResult>,
) -> GateCheck {
    let b = base.and_then(|p| gate.metric.value(p));
    let n = new.and_then(|p| gate.metric.value(p));
    let mut check = GateCheck {
        gate: gate.text.clone(),
        phase: Some(phase.to_string()),
        compared: gate.threshold.compared(),
        unit: Some(gate.metric.unit()),
        base: b,
        new: n,
        observed: None,
        passed: false,
        problem: None,
    };
    let (observed, limit) = match (gate.threshold, b, n) {
        (Threshold::Value(v), _, Some(n)) => (n, v),
        (Threshold::Delta(d), Some(b), Some(n)) => (n - b, d),
        (Threshold::Relative(r), Some(b), Some(n)) => (relative(b, n), r),
        (Threshold::Value(_), _, None) => {
            check.problem = Some(format!("no {} in the new report", gate.metric));
            return check;
        }
        (Threshold::Delta(_) | Threshold::Relative(_), _, _) => {
            check.problem = Some(match (base, new, b, n) {
                (None, _, _, _) => "phase missing from the base report".to_string(),
                (_, None, _, _) => "phase missing from the new report".to_string(),
                (_, _, None, _) => format!("no {} in the base report", gate.metric),
                (_, _, _, _) => format!("no {} in the new report", gate.metric),
            });
            return check;
        }
    };
    check.observed = Some(observed);
    check.passed = gate.op.holds(observed, limit);
    check
}

/// `(new − base) / base`; zero when both are zero, ±∞ from a zero base.
fn relative(base: f64, new: f64) -> f64 {
    if base == 0.0 {
        if new == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(new)
        }
    } else {
        (new - base) / base.abs()
    }
}

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
    /// True when the interval excludes zero; `None` without records.
    pub significant: Option<bool>,
    /// Samples behind the figure on each side (base, new), when known.
    pub samples: Option<[u64; 2]>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseComparison {
    pub phase: String,
    pub metrics: Vec<MetricChange>,
}

/// Everything `servebench compare` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub base: Side,
    pub new: Side,
    pub phases: Vec<PhaseComparison>,
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
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
        run_id: r.run_id.clone(),
        started_at: r.started_at.clone(),
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
    let find = |r: &'_ Report, name: &str| r.phases.iter().find(|p| p.phase == name).cloned();
    let mut phases = Vec::new();
    for nb in &new.phases {
        if let Some(b) = base.phases.iter().find(|p| p.phase == nb.phase) {
            phases.push(compare_phase(
                b,
                base.timing_methodology.percentile_method,
                nb,
                new.timing_methodology.percentile_method,
            ));
        }
    }
    let only_in_base = base
        .phases
        .iter()
        .filter(|p| find(new, &p.phase).is_none())
        .map(|p| p.phase.clone())
        .collect();
    let only_in_new = new
        .phases
        .iter()
        .filter(|p| find(base, &p.phase).is_none())
        .map(|p| p.phase.clone())
        .collect();

    let mut checks = Vec::new();
    for gate in gates {
        let before = checks.len();
        match &gate.phase {
            Some(name) => {
                let b = base.phases.iter().find(|p| &p.phase == name);
                let n = new.phases.iter().find(|p| &p.phase == name);
                let mut c = check_gate(gate, name, b, n);
                if n.is_none() && c.problem.is_some() {
                    c.problem = Some(format!("no phase `{name}` in the new report"));
                }
                checks.push(c);
            }
            None => {
                for n in &new.phases {
                    let b = base.phases.iter().find(|p| p.phase == n.phase);
                    // Value gates hold for every new phase; change gates need both sides.
                    if b.is_some() || matches!(gate.threshold, Threshold::Value(_)) {
                        checks.push(check_gate(gate, &n.phase, b, Some(n)));
                    }
                }
            }
        }
        if checks.len() == before {
            checks.push(GateCheck {
                gate: gate.text.clone(),
                phase: None,
                compared: gate.threshold.compared(),
                unit: Some(gate.metric.unit()),
                base: None,
                new: None,
                observed: None,
                passed: false,
                problem: Some("no phase in common between the two reports".to_string()),
            });
        }
    }
    let passed = checks.iter().all(|c| c.passed);
    Comparison {
        base: side(base_path, base),
        new: side(new_path, new),
        phases,
        only_in_base,
        only_in_new,
        gates: checks,
        passed,
        bootstrap_resamples: BOOTSTRAP_RESAMPLES,
        confidence: CONFIDENCE,
    }
}

fn compare_phase(
    base: &PhaseResult,
    base_method: PercentileMethod,
    new: &PhaseResult,
    new_method: PercentileMethod,
) -> PhaseComparison {
    let metrics: Vec<FigurePath> = COMPARED_METRICS
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    // Metrics that are statistics of the same per-request values share one bootstrap.
    let mut groups: IndexMap<&'static str, Vec<FigurePath>> = IndexMap::new();
    for m in &metrics {
        if let Some(g) = sample_group(*m) {
            groups.entry(g).or_default().push(*m);
        }
    }
    let mut intervals: HashMap<FigurePath, ([f64; 2], [u64; 2])> = HashMap::new();
    for (group, members) in &groups {
        let Some(first) = members.first() else {
            continue;
        };
        let (Some((bs, _)), Some((ns, _))) = (first.samples(base), first.samples(new)) else {
            continue;
        };
        let stats: Vec<Stat> = members.iter().filter_map(|m| first_stat(*m)).collect();
        let seed =
            BOOTSTRAP_SEED ^ crate::hash::fnv1a_64(format!("{}/{group}", new.phase).as_bytes());
        let cis = bootstrap_diff_cis(&bs, base_method, &ns, new_method, &stats, seed);
        for (m, ci) in members.iter().zip(cis) {
            intervals.insert(*m, (ci, [bs.len() as u64, ns.len() as u64]));
        }
    }

    let mut out = Vec::new();
    for metric in metrics {
        let (b, n) = (metric.value(base), metric.value(new));
        if b.is_none() && n.is_none() {
            continue;
        }
        let mut change = MetricChange {
            metric: metric.to_string(),
            unit: Some(metric.unit()),
            better: Some(metric.better()),
            base: b,
            new: n,
            change: b.zip(n).map(|(b, n)| n - b),
            relative_change: b.zip(n).map(|(b, n)| relative(b, n)),
            ci95: None,
            significant: None,
            samples: None,
        };
        if let Some((ci, samples)) = intervals.get(&metric) {
            change.ci95 = Some(*ci);
            change.significant = Some(ci[0] > 0.0 || ci[1] < 0.0);
            change.samples = Some(*samples);
        } else if let FigurePath::Dist(kind, _) = metric {
            change.samples = dist_samples(kind, base)
                .zip(dist_samples(kind, new))
                .map(|(b, n)| [b, n]);
        }
        out.push(change);
    }
    PhaseComparison {
        phase: new.phase.clone(),
        metrics: out,
    }
}

/// Which per-request values a metric is a statistic of, for metrics that have them.
fn sample_group(m: FigurePath) -> Option<&'static str> {
    match m {
        FigurePath::Dist(kind, _) => Some(kind.name()),
        FigurePath::Scalar(Scalar::ErrorRate) => Some("error_rate"),
        FigurePath::Scalar(_) => None,
    }
}

/// The statistic a sampled metric reduces its values with.
fn first_stat(m: FigurePath) -> Option<Stat> {
    match m {
        FigurePath::Dist(_, stat) => Some(stat),
        FigurePath::Scalar(Scalar::ErrorRate) => Some(Stat::Mean),
        FigurePath::Scalar(_) => None,
    }
}

fn dist_samples(kind: DistKind, p: &PhaseResult) -> Option<u64> {
    kind.distribution(p).map(|d| d.samples).filter(|n| *n > 0)
}

/// Percentile-bootstrap interval of `stat(new) − stat(base)`, resampling each side
/// independently with replacement.
pub fn bootstrap_diff_ci(
    base: &[f64],
    base_method: PercentileMethod,
    new: &[f64],
    new_method: PercentileMethod,
    stat: Stat,
    seed: u64,
) -> [f64; 2] {
    bootstrap_diff_cis(base, base_method, new, new_method, &[stat], seed)[0]
}

/// [`bootstrap_diff_ci`] for several statistics of the same values, from the same resamples.
pub fn bootstrap_diff_cis(
    base: &[f64],
    base_method: PercentileMethod,
    new: &[f64],
    new_method: PercentileMethod,
    stats: &[Stat],
    seed: u64,
) -> Vec<[f64; 2]> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut b_sorted = base.to_vec();
    b_sorted.sort_by(f64::total_cmp);
    let mut n_sorted = new.to_vec();
    n_sorted.sort_by(f64::total_cmp);
    let mut diffs: Vec<Vec<f64>> = vec![Vec::with_capacity(BOOTSTRAP_RESAMPLES); stats.len()];
    for _ in 0..BOOTSTRAP_RESAMPLES {
        let b = resampled_stats(&b_sorted, stats, base_method, &mut rng);
        let n = resampled_stats(&n_sorted, stats, new_method, &mut rng);
        for ((d, b), n) in diffs.iter_mut().zip(b).zip(n) {
            d.push(n - b);
        }
    }
    let alpha = (1.0 - CONFIDENCE) / 2.0;
    diffs
        .into_iter()
        .map(|mut d| {
            d.sort_by(f64::total_cmp);
            [
                metrics::percentile(&d, alpha, PercentileMethod::Linear),
                metrics::percentile(&d, 1.0 - alpha, PercentileMethod::Linear),
            ]
        })
        .collect()
}

/// Order-statistic ranks (0-based) a statistic reads, with the interpolation weight of the
/// upper one ([`metrics::percentile_ranks`]); `None` for the mean.
fn ranks(stat: Stat, n: usize, method: PercentileMethod) -> Option<(usize, usize, f64)> {
    let q = match stat {
        Stat::P50 => 0.50,
        Stat::P95 => 0.95,
        Stat::P99 => 0.99,
        Stat::Min => return Some((0, 0, 0.0)),
        Stat::Max => return Some((n - 1, n - 1, 0.0)),
        Stat::Mean => return None,
    };
    Some(metrics::percentile_ranks(n, q, method))
}

/// `stats` of one bootstrap resample of the ascending `sorted`, without building it.
///
/// The k-th smallest of n uniforms is Beta(k, n−k+1), and given it, a later one is that value
/// plus (1 − value)·Beta(k′−k, n−k′+1); a resample's k-th order statistic is
/// `sorted[⌊n·U(k)⌋]`. So each percentile costs a few Beta draws instead of n index draws,
/// with exactly the bootstrap's distribution. The mean of 0/1 values is Binomial; any other
/// mean falls back to drawing n indices.
fn resampled_stats(
    sorted: &[f64],
    stats: &[Stat],
    method: PercentileMethod,
    rng: &mut ChaCha8Rng,
) -> Vec<f64> {
    let n = sorted.len();
    let mut wanted: Vec<usize> = stats
        .iter()
        .filter_map(|s| ranks(*s, n, method))
        .flat_map(|(lo, hi, _)| [lo, hi])
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut at_rank: HashMap<usize, f64> = HashMap::new();
    let (mut u, mut prev_k) = (0.0f64, 0usize);
    for r in wanted {
        let k = r + 1;
        if k > prev_k {
            let step = Beta::new((k - prev_k) as f64, (n - k + 1) as f64)
                .map(|b| b.sample(rng))
                .unwrap_or(0.0);
            u += (1.0 - u) * step;
            prev_k = k;
        }
        let j = ((n as f64 * u).floor() as usize).min(n - 1);
        at_rank.insert(r, sorted[j]);
    }
    stats
        .iter()
        .map(|s| match ranks(*s, n, method) {
            Some((lo, hi, w)) => metrics::interpolate(at_rank[&lo], at_rank[&hi], w),
            None => resampled_mean(sorted, rng),
        })
        .collect()
}

fn resampled_mean(sorted: &[f64], rng: &mut ChaCha8Rng) -> f64 {
    let n = sorted.len();
    if sorted.iter().all(|v| *v == 0.0 || *v == 1.0) {
        let ones = sorted.iter().filter(|v| **v == 1.0).count();
        return Binomial::new(n as u64, ones as f64 / n as f64)
            .map(|b| b.sample(rng) as f64 / n as f64)
            .unwrap_or(f64::NAN);
    }
    (0..n).map(|_| sorted[rng.random_range(0..n)]).sum::<f64>() / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(s: &str) -> Gate {
        s.parse().unwrap()
    }

    #[test]
    fn gate_grammar() {
        let g = gate("ttft.p95 < +10%");
        assert_eq!(g.op, Op::Lt);
        assert_eq!(g.threshold, Threshold::Relative(0.10));
        assert_eq!(
            gate("output_tokens_per_second > -5%").threshold,
            Threshold::Relative(-0.05)
        );
        assert_eq!(gate("errors == 0").threshold, Threshold::Value(0.0));
        assert_eq!(gate("e2e.p50 < 2s").threshold, Threshold::Value(2.0));
        assert_eq!(gate("e2e.p50<=1500ms").op, Op::Le);
        assert_eq!(gate("ttft.p99 < +200ms").threshold, Threshold::Delta(0.2));
        assert_eq!(gate("error_rate < 1%").threshold, Threshold::Value(0.01));
        assert_eq!(
            gate("max_inter_chunk_ms.p99 < 1s").threshold,
            Threshold::Value(1000.0)
        );
        let scoped = gate("gateway-c4:ttft.p99 <= +5%");
        assert_eq!(scoped.phase.as_deref(), Some("gateway-c4"));
        assert_eq!(scoped.op, Op::Le);
    }

    #[test]
    fn gate_errors_explain() {
        let e = |s: &str| s.parse::<Gate>().unwrap_err().problem;
        assert!(e("ttft.p95 10%").contains("no comparison operator"));
        assert!(e("ttft.p95 < 10%").contains("needs a sign"));
        assert!(e("ttft.p95 < 2").contains("is a time"));
        assert!(e("latency < +1%").contains("unknown metric"));
        assert!(e("ttft < +1%").contains("name a statistic"));
        assert!(e("ttft.p95 < fast").contains("not a number"));
        assert!(e("ttft.p95 < 3parsecs").contains("unknown unit"));
        assert!(e("errors =< 0").contains("`=<` is not an operator"));
        assert!(e("errors => 0").contains("`=>` is not an operator"));
        assert!(e("errors <> 0").contains("`<>` is not an operator"));
        assert!(e(" < +1%").contains("no metric"));
    }

    /// The order-statistic shortcut against a plain resample-and-sort bootstrap.
    #[test]
    fn order_statistic_resampling_matches_plain_resampling() {
        let x: Vec<f64> = (0..60)
            .map(|i| ((i * 37) % 60) as f64 + (i / 20) as f64 * 0.5)
            .collect();
        let mut sorted = x.clone();
        sorted.sort_by(f64::total_cmp);
        let stats = [Stat::P50, Stat::P95, Stat::Min];
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let reps = 20_000;
        let mut fast: Vec<Vec<f64>> = vec![Vec::new(); 3];
        let mut plain: Vec<Vec<f64>> = vec![Vec::new(); 3];
        for _ in 0..reps {
            for (i, v) in resampled_stats(&sorted, &stats, PercentileMethod::Linear, &mut rng)
                .into_iter()
                .enumerate()
            {
                fast[i].push(v);
            }
            let mut r: Vec<f64> = (0..x.len())
                .map(|_| x[rng.random_range(0..x.len())])
                .collect();
            r.sort_by(f64::total_cmp);
            for (i, s) in stats.iter().enumerate() {
                plain[i].push(s.of_sorted(&r, PercentileMethod::Linear));
            }
        }
        for i in 0..3 {
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let sd = |v: &[f64]| {
                let m = mean(v);
                (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64).sqrt()
            };
            let (mf, mp) = (mean(&fast[i]), mean(&plain[i]));
            let (sf, sp) = (sd(&fast[i]), sd(&plain[i]));
            assert!(
                (mf - mp).abs() < 0.05 * sp.max(1.0),
                "{:?}: mean {mf} vs {mp}",
                stats[i]
            );
            assert!(
                (sf - sp).abs() < 0.05 * sp.max(0.2),
                "{:?}: sd {sf} vs {sp}",
                stats[i]
            );
        }
    }

    #[test]
    fn relative_change_from_zero() {
        assert_eq!(relative(0.0, 0.0), 0.0);
        assert_eq!(relative(0.0, 2.0), f64::INFINITY);
        assert_eq!(relative(2.0, 3.0), 0.5);
    }

    #[test]
    fn bootstrap_detects_a_shift_and_not_noise() {
        let base: Vec<f64> = (0..200).map(|i| 100.0 + (i % 20) as f64).collect();
        let same = base.clone();
        let ci = bootstrap_diff_ci(
            &base,
            PercentileMethod::Linear,
            &same,
            PercentileMethod::Linear,
            Stat::P50,
            7,
        );
        assert!(ci[0] <= 0.0 && ci[1] >= 0.0, "{ci:?}");
        let slower: Vec<f64> = base.iter().map(|v| v + 30.0).collect();
        let ci = bootstrap_diff_ci(
            &base,
            PercentileMethod::Linear,
            &slower,
            PercentileMethod::Linear,
            Stat::P50,
            7,
        );
        assert!(ci[0] > 20.0 && ci[1] < 40.0, "{ci:?}");
    }
}
