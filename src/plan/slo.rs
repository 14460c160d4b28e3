//! Objectives on the figure table's time figures, one grammar for a plan's `slo` (goodput)
//! and a capacity search's `slo`: upper limits on a figure's p50, p95, p99 or max, and an
//! error rate, `{ttft: {p99: 2s}, tpot: {p50: 50ms}, error_rate: 1%}`. The old spelling of a
//! plan's `slo`, a bare duration per figure (`{ttft: 2s}`: every request within 2 s), reads as
//! a limit on the max, is written back as one, and earns a note ([`old_spellings`]).

use std::borrow::Cow;
use std::collections::BTreeMap;

use indexmap::IndexMap;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::diag::did_you_mean_or_list;
use super::schema::Issue;
use super::source::escape;
use super::{Fraction, HumanDuration};
use crate::figure::{FIGURES, Figure, Stat, Unit};

/// Objectives on a phase's figures. A request counts toward goodput when it succeeded and
/// each limited figure is within that figure's loosest limit ([`Slo::request_limits`]); a
/// search probe passes when every objective holds for the phase ([`Slo::objectives`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Slo {
    /// Limits per figure, in table order.
    pub limits: BTreeMap<Figure, Limits>,
    /// Largest share of failed requests (0.01 = 1%).
    pub error_rate: Option<Fraction>,
}

const ERROR_RATE: &str = "error_rate";

/// Upper limits on statistics of one time figure.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// The median at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<HumanDuration>,
    /// The 95th percentile at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95: Option<HumanDuration>,
    /// The 99th percentile at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<HumanDuration>,
    /// Every request within it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<HumanDuration>,
}

impl Limits {
    /// Each statistic with its limit, when set.
    pub fn each(&self) -> impl Iterator<Item = (Stat, HumanDuration)> {
        let all = [
            (Stat::P50, self.p50),
            (Stat::P95, self.p95),
            (Stat::P99, self.p99),
            (Stat::Max, self.max),
        ];
        all.into_iter()
            .filter_map(|(stat, limit)| Some((stat, limit?)))
    }
}

/// Whether an objective may limit `figure`: it is measured in time.
fn limitable(figure: Figure) -> bool {
    figure.is_time()
}

/// The keys an `slo` may have, from the figure table.
fn objective_names() -> Vec<&'static str> {
    let figures = FIGURES.iter().filter(|s| limitable(s.figure));
    figures.map(|s| s.name).chain([ERROR_RATE]).collect()
}

impl Slo {
    /// Every objective with its limit in its figure's unit, e.g. `ttft.p99` ≤ 2.0 (seconds),
    /// `server_queue_ms.p99` ≤ 50.0 or `error_rate` ≤ 0.01.
    pub fn objectives(&self) -> Vec<Objective> {
        let mut out = Vec::new();
        for (&figure, limits) in &self.limits {
            for (stat, limit) in limits.each() {
                out.push(Objective::Stat(figure, stat, in_unit(figure, limit)));
            }
        }
        if let Some(e) = self.error_rate {
            out.push(Objective::ErrorRate(e.0));
        }
        out
    }

    /// What one request must stay within to count toward goodput: per limited figure, its
    /// largest limit, in the figure's unit.
    pub fn request_limits(&self) -> Vec<(Figure, f64)> {
        let limits = self.limits.iter();
        limits
            .filter_map(|(&figure, l)| {
                let loosest = l.each().map(|(_, d)| d).max()?;
                Some((figure, in_unit(figure, loosest)))
            })
            .collect()
    }
}

/// One objective.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Objective {
    /// A statistic of a figure at most the limit, in the figure's unit.
    Stat(Figure, Stat, f64),
    /// The share of failed requests at most the limit.
    ErrorRate(f64),
    /// The share of requests that succeeded within every per-request limit at least this
    /// minimum (a capacity search's `goodput`).
    Goodput(f64),
}

impl Objective {
    /// As the report names it: `ttft.p99`, `error_rate`.
    pub fn name(self) -> String {
        match self {
            Objective::Stat(figure, stat, _) => format!("{}.{}", figure.name(), stat.name()),
            Objective::ErrorRate(_) => ERROR_RATE.to_string(),
            Objective::Goodput(_) => "goodput".to_string(),
        }
    }

    /// The limit: an upper one, except for `Goodput`'s minimum share.
    pub fn limit(self) -> f64 {
        match self {
            Objective::Stat(_, _, limit)
            | Objective::ErrorRate(limit)
            | Objective::Goodput(limit) => limit,
        }
    }
}

/// A duration limit in `figure`'s unit: milliseconds for `…_ms` figures, else seconds.
fn in_unit(figure: Figure, limit: HumanDuration) -> f64 {
    match figure.spec().unit {
        Unit::Millis => limit.as_secs_f64() * 1e3,
        _ => limit.as_secs_f64(),
    }
}

impl Serialize for Slo {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let entries = self.limits.len() + usize::from(self.error_rate.is_some());
        let mut map = serializer.serialize_map(Some(entries))?;
        for (figure, limits) in &self.limits {
            map.serialize_entry(figure.name(), limits)?;
        }
        if let Some(error_rate) = &self.error_rate {
            map.serialize_entry(ERROR_RATE, error_rate)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Slo {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let entries = IndexMap::<String, Value>::deserialize(deserializer)?;
        let mut slo = Slo::default();
        for (key, value) in entries {
            if key == ERROR_RATE {
                slo.error_rate = Some(Fraction::deserialize(value).map_err(D::Error::custom)?);
                continue;
            }
            let Some(figure) = Figure::named(&key).filter(|f| limitable(*f)) else {
                let hint = did_you_mean_or_list(&key, &objective_names());
                return Err(D::Error::custom(format!(
                    "`{key}` is not an objective; {hint}"
                )));
            };
            let limits = if value.is_object() {
                Limits::deserialize(value).map_err(D::Error::custom)?
            } else {
                // The old spelling: every request within the duration.
                let max = HumanDuration::deserialize(value).map_err(D::Error::custom)?;
                Limits {
                    max: Some(max),
                    ..Limits::default()
                }
            };
            slo.limits.insert(figure, limits);
        }
        Ok(slo)
    }
}

/// A figure's limits as a plan may write them: [`Limits`], or (the old spelling) one duration.
struct FigureLimits;

impl JsonSchema for FigureLimits {
    fn schema_name() -> Cow<'static, str> {
        "FigureLimits".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let limits = generator.subschema_for::<Limits>().to_value();
        let duration = generator.subschema_for::<HumanDuration>().to_value();
        json_schema!({
            "description": "Upper limits on a time figure's p50, p95, p99 or max.",
            "anyOf": [limits, {
                "description": "Old spelling of `{max: …}`: every request within it.",
                "allOf": [duration],
                "deprecated": true,
            }],
        })
    }
}

impl JsonSchema for Slo {
    fn schema_name() -> Cow<'static, str> {
        "Slo".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let limits = generator.subschema_for::<FigureLimits>().to_value();
        let mut properties = serde_json::Map::new();
        for spec in FIGURES.iter().filter(|s| limitable(s.figure)) {
            let mut property = limits.clone();
            if let Some(object) = property.as_object_mut() {
                object.insert("description".into(), spec.doc.into());
            }
            properties.insert(spec.name.to_string(), property);
        }
        let mut error_rate = generator.subschema_for::<Fraction>().to_value();
        if let Some(object) = error_rate.as_object_mut() {
            let text = "Largest share of failed requests (0.01 = 1%).";
            object.insert("description".into(), text.into());
        }
        properties.insert(ERROR_RATE.to_string(), error_rate);
        json_schema!({
            "description": "Objectives: upper limits on the p50, p95, p99 or max of any time \
                figure of the figure table, and an error rate.",
            "type": "object",
            "properties": properties,
            "additionalProperties": false,
        })
    }
}

/// Problems with an `slo` at `p` (its pointer): a zero limit, or none at all.
pub fn check_slo(p: &str, slo: &Slo, issues: &mut Vec<Issue>) {
    for (figure, limits) in &slo.limits {
        if limits.each().next().is_none() {
            let at = format!("{p}/{}", escape(figure.name()));
            issues.push(Issue::new(at, "no limit: set p50, p95, p99 or max").at_key());
        }
        for (stat, limit) in limits.each() {
            if limit.0.is_zero() {
                let at = format!("{p}/{}/{}", escape(figure.name()), stat.name());
                issues.push(Issue::new(at, "must be longer than zero"));
            }
        }
    }
}

/// Where a document (before expansion) writes an `slo` objective in the old spelling: the
/// plan's `slo` and each phase's `search.slo`, figure keys whose value is not a map.
pub fn old_spellings(doc: &Value) -> Vec<Issue> {
    let mut places = vec![("/slo".to_string(), doc.get("slo"))];
    let phases = doc.get("phases").and_then(Value::as_array);
    for (i, phase) in phases.into_iter().flatten().enumerate() {
        let slo = phase.get("search").and_then(|s| s.get("slo"));
        places.push((format!("/phases/{i}/search/slo"), slo));
    }
    let mut issues = Vec::new();
    for (pointer, slo) in places {
        let Some(slo) = slo.and_then(Value::as_object) else {
            continue;
        };
        for (key, value) in slo {
            let old = key != ERROR_RATE && Figure::named(key).is_some() && !value.is_object();
            if old {
                let at = format!("{pointer}/{}", escape(key));
                let value = text(value);
                let message = format!(
                    "`{key}: {value}` is deprecated: a bare duration is the old spelling of a \
                     limit on every request"
                );
                let new = format!("write `{key}: {{max: {value}}}`");
                issues.push(Issue::new(at, message).at_key().hint(Some(new)));
            }
        }
    }
    issues
}

/// A scalar as a plan writes it.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(yaml: &str) -> Result<Slo, String> {
        let value: Value = serde_saphyr::from_str(yaml).map_err(|e| e.to_string())?;
        Slo::deserialize(value).map_err(|e| e.to_string())
    }

    #[test]
    fn any_time_figure_of_the_table_is_an_objective_in_its_unit() {
        let slo = read("{ttft: {p95: 60ms}, server_queue_ms: {p99: 5ms}, ttft_tool_ms: {max: 1s}, error_rate: 1%}")
            .unwrap();
        let objectives = slo.objectives();
        let named = |name: &str| {
            let objective = objectives.iter().find(|o| o.name() == name);
            objective.map(|o| o.limit())
        };
        assert_eq!(named("ttft.p95"), Some(0.06), "seconds");
        assert_eq!(named("server_queue_ms.p99"), Some(5.0), "milliseconds");
        assert_eq!(named("ttft_tool_ms.max"), Some(1000.0));
        assert_eq!(named("error_rate"), Some(0.01));
        assert_eq!(objectives.len(), 4);
        // Written back as read.
        let text = serde_json::to_string(&slo).unwrap();
        assert_eq!(read(&text).unwrap(), slo);
    }

    #[test]
    fn the_old_spelling_is_a_limit_on_every_request_written_the_new_way() {
        let old = read("{ttft: 2s, tpot: 50ms}").unwrap();
        let new = read("{ttft: {max: 2s}, tpot: {max: 50ms}}").unwrap();
        assert_eq!(old, new);
        assert_eq!(
            serde_json::to_value(&old).unwrap(),
            serde_json::json!({"ttft": {"max": "2s"}, "tpot": {"max": "50ms"}})
        );
        assert_eq!(
            old.request_limits(),
            [(Figure::Ttft, 2.0), (Figure::Tpot, 0.05)]
        );
    }

    #[test]
    fn a_request_is_held_to_each_figures_loosest_limit() {
        let slo = read("{ttft: {p50: 1s, p99: 3s}, send_lag_ms: {p99: 20ms}}").unwrap();
        let limits = slo.request_limits();
        assert_eq!(limits, [(Figure::Ttft, 3.0), (Figure::SendLag, 20.0)]);
    }

    #[test]
    fn an_unknown_objective_names_the_nearest() {
        let err = read("{tfft: {p99: 1s}}").unwrap_err();
        assert!(err.contains("`tfft` is not an objective"), "{err}");
        assert!(err.contains("`ttft`"), "{err}");
        // Counts are figures of the table, but not times.
        let err = read("{output_tokens: {p99: 1s}}").unwrap_err();
        assert!(err.contains("not an objective"), "{err}");
    }

    #[test]
    fn old_spellings_are_found_where_an_slo_can_be() {
        let doc = serde_json::json!({
            "slo": {"ttft": "2s", "e2e": {"p99": "9s"}, "error_rate": 0.01},
            "phases": [
                {"name": "a"},
                {"name": "b", "search": {"slo": {"tpot": "50ms"}}},
            ],
        });
        let found: Vec<(String, Option<String>)> = old_spellings(&doc)
            .into_iter()
            .map(|i| (i.pointer, i.hint))
            .collect();
        assert_eq!(
            found,
            [
                ("/slo/ttft".into(), Some("write `ttft: {max: 2s}`".into())),
                (
                    "/phases/1/search/slo/tpot".into(),
                    Some("write `tpot: {max: 50ms}`".into())
                ),
            ]
        );
    }
}
