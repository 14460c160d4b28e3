//! `until: {stable: [...], within: 5%, max_duration: 10m}`: a phase that ends once its
//! estimates are tight enough, instead of after a fixed time.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::HumanDuration;
use super::fraction::Fraction;
use super::schema::Issue;

/// Run until every listed percentile's 95% interval is tight, or `max_duration`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Until {
    /// Percentiles that must be stable, e.g. `[ttft.p99, tpot.p50]`.
    #[schemars(length(min = 1))]
    pub stable: Vec<StableMetric>,
    /// Largest half-width of each 95% interval, relative to its estimate (`5%` or `0.05`).
    pub within: Fraction,
    /// The phase ends here at the latest (with a warning); replaces `duration`.
    pub max_duration: HumanDuration,
    /// How often to check (default 1s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_every: Option<HumanDuration>,
}

/// A percentile with a 95% interval in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum StableMetric {
    #[serde(rename = "ttft.p50")]
    TtftP50,
    #[serde(rename = "ttft.p95")]
    TtftP95,
    #[serde(rename = "ttft.p99")]
    TtftP99,
    #[serde(rename = "tpot.p50")]
    TpotP50,
    #[serde(rename = "tpot.p95")]
    TpotP95,
    #[serde(rename = "tpot.p99")]
    TpotP99,
    #[serde(rename = "e2e.p50")]
    E2eP50,
    #[serde(rename = "e2e.p95")]
    E2eP95,
    #[serde(rename = "e2e.p99")]
    E2eP99,
}

/// Which per-request latency a [`StableMetric`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    Ttft,
    Tpot,
    E2e,
}

impl StableMetric {
    /// The latency and the quantile (0–1).
    pub fn parts(self) -> (Latency, f64) {
        use StableMetric::*;
        match self {
            TtftP50 => (Latency::Ttft, 0.50),
            TtftP95 => (Latency::Ttft, 0.95),
            TtftP99 => (Latency::Ttft, 0.99),
            TpotP50 => (Latency::Tpot, 0.50),
            TpotP95 => (Latency::Tpot, 0.95),
            TpotP99 => (Latency::Tpot, 0.99),
            E2eP50 => (Latency::E2e, 0.50),
            E2eP95 => (Latency::E2e, 0.95),
            E2eP99 => (Latency::E2e, 0.99),
        }
    }

    /// As written in a plan: `ttft.p99`.
    pub fn name(self) -> String {
        let (latency, q) = self.parts();
        let latency = match latency {
            Latency::Ttft => "ttft",
            Latency::Tpot => "tpot",
            Latency::E2e => "e2e",
        };
        format!("{latency}.p{:.0}", q * 100.0)
    }
}

/// Problems with an `until` at `pointer`.
pub fn check_until(pointer: &str, until: &Until, issues: &mut Vec<Issue>) {
    let within = until.within.0;
    if !(within.is_finite() && within > 0.0 && within < 1.0) {
        issues.push(Issue::new(
            format!("{pointer}/within"),
            format!("must be between 0 and 1 (0.05 = 5%), found {within}"),
        ));
    }
    if until.max_duration.0.is_zero() {
        issues.push(Issue::new(
            format!("{pointer}/max_duration"),
            "must be longer than zero",
        ));
    }
    if until.check_every.is_some_and(|d| d.0.is_zero()) {
        issues.push(Issue::new(
            format!("{pointer}/check_every"),
            "must be longer than zero",
        ));
    }
}
