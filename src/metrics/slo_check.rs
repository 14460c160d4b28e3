//! The plan's SLO objectives against a set of figures: each objective's value and whether
//! it holds, for a phase's archetypes and models and the phase as a whole.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Distributions;
use crate::plan::Objective;

/// One objective against one group's (or phase's) figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SloCheck {
    /// As the plan names it: `ttft.p99`, `error_rate`.
    pub objective: String,
    /// The upper limit, in the figure's unit (seconds for `ttft`, milliseconds for `…_ms`
    /// figures, a fraction for `error_rate`).
    pub limit: f64,
    /// The measured value; absent when no request had the figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// The value is within the limit (false without a value).
    pub met: bool,
}

/// Each objective against `figures` and the error count: a point estimate, as the phase's
/// own figures are read (a capacity search's probes judge with intervals instead).
pub fn slo_checks(
    objectives: &[Objective],
    figures: &Distributions,
    requests: u64,
    errors: u64,
) -> Vec<SloCheck> {
    objectives
        .iter()
        .filter_map(|&objective| {
            let value = match objective {
                Objective::Stat(figure, stat, _) => figures.get(figure).map(|d| stat.of(d)),
                Objective::ErrorRate(_) => Some(errors as f64 / requests.max(1) as f64),
                Objective::Goodput(_) => return None,
            };
            Some(SloCheck {
                objective: objective.name(),
                limit: objective.limit(),
                value,
                met: value.is_some_and(|v| v <= objective.limit()),
            })
        })
        .collect()
}
