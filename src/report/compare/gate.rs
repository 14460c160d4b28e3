//! `--gate` expressions (`[PHASE:]METRIC OP THRESHOLD`): grammar, parsing and evaluation on a phase.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::report::model::Report;
use crate::report::model::figure_path::{FigurePath, FigurePathError, Unit, explain};

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
    pub fn holds(self, a: f64, b: f64) -> bool {
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
        let metric: FigurePath = metric_text
            .parse()
            .map_err(|e: FigurePathError| fail(explain(metric_text, &e, &[])))?;
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

/// What gates read of one side: its phases by name and a figure's value in one (a report,
/// or a run's stored figures).
pub trait GateSide {
    /// Its phases' names, in order.
    fn phase_names(&self) -> Vec<&str>;
    /// The figure in its `index`th phase.
    fn figure_at(&self, index: usize, metric: FigurePath) -> Option<f64>;
    /// The figure in the first phase named `phase`: `None` when there is no such phase,
    /// `Some(None)` when the phase lacks the figure.
    fn figure(&self, phase: &str, metric: FigurePath) -> Option<Option<f64>> {
        let index = self.phase_names().iter().position(|n| *n == phase)?;
        Some(self.figure_at(index, metric))
    }
}

impl GateSide for Report {
    fn phase_names(&self) -> Vec<&str> {
        self.phases
            .iter()
            .map(|p| p.header.phase.as_str())
            .collect()
    }

    fn figure_at(&self, index: usize, metric: FigurePath) -> Option<f64> {
        self.phases.get(index).and_then(|p| metric.value(p))
    }
}

/// Every gate checked on the phases it names, or on every new phase (change gates only where
/// the base has the phase too); a gate that matched no phase fails, and so does a change gate
/// on a phase in `not_compared` (the two runs asked for different work there: its change
/// means nothing).
pub fn check_gates(
    gates: &[Gate],
    base: &dyn GateSide,
    new: &dyn GateSide,
    not_compared: &[&str],
) -> Vec<GateCheck> {
    let mut checks = unrefused_checks(gates, base, new);
    for check in &mut checks {
        let refused = check
            .phase
            .as_deref()
            .is_some_and(|p| not_compared.contains(&p));
        if refused && check.compared != Compared::Value {
            check.passed = false;
            check.observed = None;
            check.problem = Some(
                "the two runs asked for different work in this phase: not compared \
                 (--force compares it anyway)"
                    .to_string(),
            );
        }
    }
    checks
}

fn unrefused_checks(gates: &[Gate], base: &dyn GateSide, new: &dyn GateSide) -> Vec<GateCheck> {
    let mut checks = Vec::new();
    for gate in gates {
        let before = checks.len();
        match &gate.phase {
            Some(name) => {
                let b = base.figure(name, gate.metric);
                let n = new.figure(name, gate.metric);
                let mut c = check_gate(gate, name, b, n);
                if n.is_none() && c.problem.is_some() {
                    c.problem = Some(format!("no phase `{name}` in the new report"));
                }
                checks.push(c);
            }
            None => {
                for (i, name) in new.phase_names().into_iter().enumerate() {
                    let b = base.figure(name, gate.metric);
                    // Value gates hold for every new phase; change gates need both sides.
                    if b.is_some() || matches!(gate.threshold, Threshold::Value(_)) {
                        let n = Some(new.figure_at(i, gate.metric));
                        checks.push(check_gate(gate, name, b, n));
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
    checks
}

/// One gate on one phase; `base` and `new` are `None` where the side lacks the phase, and
/// hold `None` where the phase lacks the figure.
fn check_gate(
    gate: &Gate,
    phase: &str,
    base: Option<Option<f64>>,
    new: Option<Option<f64>>,
) -> GateCheck {
    let b = base.flatten();
    let n = new.flatten();
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
pub(super) fn relative(base: f64, new: f64) -> f64 {
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
        assert!(e("latency < +1%").contains("known metrics: requests"));
        assert!(e("tfft.p95 < +1%").contains("did you mean `ttft.p95`?"));
        assert!(e("send_lag.p99 < 5ms").contains("did you mean `send_lag_ms.p99`?"));
        assert!(e("ttft < +1%").contains("name a statistic"));
        assert!(e("ttft.p95 < fast").contains("not a number"));
        assert!(e("ttft.p95 < 3parsecs").contains("unknown unit"));
        assert!(e("errors =< 0").contains("`=<` is not an operator"));
        assert!(e("errors => 0").contains("`=>` is not an operator"));
        assert!(e("errors <> 0").contains("`<>` is not an operator"));
        assert!(e(" < +1%").contains("no metric"));
    }

    #[test]
    fn relative_change_from_zero() {
        assert_eq!(relative(0.0, 0.0), 0.0);
        assert_eq!(relative(0.0, 2.0), f64::INFINITY);
        assert_eq!(relative(2.0, 3.0), 0.5);
    }
}
