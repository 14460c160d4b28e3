//! `until: {stable: [...], within: 5%, max_duration: 10m}`: a phase that ends once its
//! estimates are tight enough, instead of after a fixed time.

use std::borrow::Cow;
use std::str::FromStr;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use super::diag::did_you_mean_or_list;
use crate::figure::{FIGURES, Figure, Stat};

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

/// A percentile with a 95% interval in the report, written `FIGURE.pNN` (`ttft.p99`): a
/// figure of the one table whose percentiles carry intervals, at p50, p95 or p99.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct StableMetric {
    pub figure: Figure,
    /// One of [`Stat::PERCENTILES`].
    pub percentile: Stat,
}

impl StableMetric {
    /// The figure and the quantile (0–1).
    pub fn parts(self) -> (Figure, f64) {
        (self.figure, self.percentile.quantile().unwrap_or(0.5))
    }

    /// As written in a plan: `ttft.p99`.
    pub fn name(self) -> String {
        format!("{}.{}", self.figure.name(), self.percentile.name())
    }

    /// Every metric a plan may name, in table order.
    pub fn all() -> impl Iterator<Item = StableMetric> {
        FIGURES
            .iter()
            .filter(|spec| spec.intervals)
            .flat_map(|spec| {
                Stat::PERCENTILES.map(|percentile| StableMetric {
                    figure: spec.figure,
                    percentile,
                })
            })
    }
}

impl FromStr for StableMetric {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if let Some(metric) = StableMetric::all().find(|m| m.name() == text) {
            return Ok(metric);
        }
        let names: Vec<String> = StableMetric::all().map(StableMetric::name).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let hint = did_you_mean_or_list(text, &names);
        Err(format!(
            "`{text}` is not a percentile with an interval; {hint}"
        ))
    }
}

impl Serialize for StableMetric {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for StableMetric {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for StableMetric {
    fn schema_name() -> Cow<'static, str> {
        "StableMetric".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<String> = StableMetric::all().map(StableMetric::name).collect();
        json_schema!({
            "description": "A percentile with a 95% interval in the report, e.g. `ttft.p99`.",
            "type": "string",
            "enum": names,
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_come_from_the_figure_table() {
        let names: Vec<String> = StableMetric::all().map(StableMetric::name).collect();
        assert!(names.contains(&"ttft.p99".to_string()));
        assert!(names.contains(&"mean_inter_token_latency_ms.p95".to_string()));
        // Figures whose percentiles carry no interval cannot be waited on.
        assert!(!names.iter().any(|n| n.starts_with("decode_tok_s.")));
        for name in &names {
            let metric: StableMetric = name.parse().unwrap();
            assert_eq!(&metric.name(), name);
        }
        let (figure, q) = "e2e.p95".parse::<StableMetric>().unwrap().parts();
        assert_eq!((figure, q), (Figure::E2e, 0.95));
    }

    #[test]
    fn an_unknown_name_gets_a_suggestion_from_the_table() {
        let err = "tfft.p99".parse::<StableMetric>().unwrap_err();
        assert!(err.contains("did you mean `ttft.p99`?"), "{err}");
        let err = "ttft.p42".parse::<StableMetric>().unwrap_err();
        assert!(err.contains("ttft.p42"), "{err}");
        let err = "goodput".parse::<StableMetric>().unwrap_err();
        assert!(err.contains("use one of ttft.p50"), "{err}");
    }
}
