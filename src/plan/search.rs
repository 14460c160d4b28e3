//! Capacity search: a phase that probes loads until it finds the most the target sustains
//! within its objectives. Types and their checks; the search loop is `runner::search`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use indexmap::IndexMap;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use super::diag::did_you_mean_or_list;
use super::schema::Issue;
use super::{Fraction, HumanDuration, Phase, Warmup};
use crate::figure::{FIGURES, Figure, Stat, Unit};

/// `search:` on a phase, in place of `concurrency` or `rate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Search {
    /// What the probes vary: `concurrency` (closed loop) or `rate` (open loop, req/s).
    pub load: SearchLoad,
    /// Lowest load probed (the first probe).
    pub min: f64,
    /// Highest load probed.
    pub max: f64,
    /// Objectives every probe must meet to pass.
    pub slo: SearchSlo,
    /// Stop when the bracket's upper end is within this fraction of its lower end (0.05 = 5%).
    #[serde(default = "default_precision")]
    pub precision: Fraction,
    pub probe: Probe,
    /// Most probes to run; by default the most the search can need.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_probes: Option<u32>,
}

fn default_precision() -> Fraction {
    Fraction(0.05)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchLoad {
    Rate,
    Concurrency,
}

/// Objectives of a probe: upper limits on percentiles of any figure of the figure table that
/// is a time (`ttft`, `tpot`, `e2e`, `server_queue_ms`, …), and an error rate. Written as a
/// map: `{ttft: {p95: 60ms}, error_rate: 0.01}`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchSlo {
    /// Limits per figure, in table order.
    pub limits: BTreeMap<Figure, PercentileLimits>,
    /// Largest share of failed requests (0.01 = 1%).
    pub error_rate: Option<Fraction>,
}

const ERROR_RATE: &str = "error_rate";

/// Whether a search may limit `figure`: it is measured in time.
fn limitable(figure: Figure) -> bool {
    matches!(figure.spec().unit, Unit::Seconds | Unit::Millis)
}

impl Serialize for SearchSlo {
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

impl<'de> Deserialize<'de> for SearchSlo {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let entries = IndexMap::<String, serde_json::Value>::deserialize(deserializer)?;
        let mut slo = SearchSlo::default();
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
            let limits = PercentileLimits::deserialize(value).map_err(D::Error::custom)?;
            slo.limits.insert(figure, limits);
        }
        Ok(slo)
    }
}

/// The keys an `slo` of a search may have, from the figure table.
fn objective_names() -> Vec<&'static str> {
    let figures = FIGURES.iter().filter(|s| limitable(s.figure));
    figures.map(|s| s.name).chain([ERROR_RATE]).collect()
}

impl JsonSchema for SearchSlo {
    fn schema_name() -> Cow<'static, str> {
        "SearchSlo".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let limits = generator.subschema_for::<PercentileLimits>().to_value();
        let mut properties = serde_json::Map::new();
        for spec in FIGURES.iter().filter(|s| limitable(s.figure)) {
            properties.insert(spec.name.to_string(), limits.clone());
        }
        let mut error_rate = generator.subschema_for::<Fraction>().to_value();
        if let Some(object) = error_rate.as_object_mut() {
            let text = "Largest share of failed requests (0.01 = 1%).";
            object.insert("description".into(), text.into());
        }
        properties.insert(ERROR_RATE.to_string(), error_rate);
        json_schema!({
            "description": "Objectives every probe must meet: upper limits on percentiles of any \
                time figure, and an error rate.",
            "type": "object",
            "properties": properties,
            "additionalProperties": false,
        })
    }
}

/// Upper limits on percentiles of one latency.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PercentileLimits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<HumanDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95: Option<HumanDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<HumanDuration>,
}

/// How each probe runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    pub duration: HumanDuration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Warmup>,
    /// End a probe early once its estimates are stable; `max_duration` replaces `duration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<super::until::Until>,
}

impl Search {
    /// The most probes the search runs: doubling from `min` to `max`, then bisecting the last
    /// doubling (a ratio of 2) geometrically down to `precision`; capped by `max_probes`.
    pub fn worst_case_probes(&self) -> u32 {
        let ratio = (self.max / self.min).max(1.0);
        let doublings = ratio.log2().ceil().max(0.0) as u32 + 1;
        let halvings = (2f64.ln() / self.precision.0.ln_1p())
            .log2()
            .ceil()
            .max(0.0) as u32;
        let bound = doublings + halvings;
        self.max_probes.map_or(bound, |m| m.min(bound))
    }

    /// Every objective with its limit in its figure's unit, e.g. `ttft.p99` ≤ 2.0 (seconds),
    /// `server_queue_ms.p99` ≤ 50.0 or `error_rate` ≤ 0.01.
    pub fn objectives(&self) -> Vec<Objective> {
        let mut out = Vec::new();
        for (&figure, limits) in &self.slo.limits {
            for (stat, limit) in [
                (Stat::P50, limits.p50),
                (Stat::P95, limits.p95),
                (Stat::P99, limits.p99),
            ] {
                if let Some(limit) = limit {
                    let limit = in_unit(figure, limit);
                    out.push(Objective::Percentile(figure, stat, limit));
                }
            }
        }
        if let Some(e) = self.slo.error_rate {
            out.push(Objective::ErrorRate(e.0));
        }
        out
    }

    /// Per limited figure, its largest limit in the figure's unit.
    pub fn loosest_limits(&self) -> Vec<(Figure, f64)> {
        let limits = self.slo.limits.iter();
        limits
            .filter_map(|(&figure, l)| {
                let loosest = [l.p50, l.p95, l.p99]
                    .into_iter()
                    .flatten()
                    .max_by_key(|d| d.0)?;
                Some((figure, in_unit(figure, loosest)))
            })
            .collect()
    }
}

/// One objective of a search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Objective {
    /// A percentile of a figure at most the limit, in the figure's unit.
    Percentile(Figure, Stat, f64),
    /// The share of failed requests at most the limit.
    ErrorRate(f64),
}

impl Objective {
    /// As the report names it: `ttft.p99`, `error_rate`.
    pub fn name(self) -> String {
        match self {
            Objective::Percentile(figure, stat, _) => format!("{}.{}", figure.name(), stat.name()),
            Objective::ErrorRate(_) => ERROR_RATE.to_string(),
        }
    }

    pub fn limit(self) -> f64 {
        match self {
            Objective::Percentile(_, _, limit) | Objective::ErrorRate(limit) => limit,
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

/// Problems with a search phase, at `p` (the phase's path).
pub fn check_search(p: &str, phase: &Phase, issues: &mut Vec<Issue>) {
    let Some(s) = &phase.search else { return };
    let at = |field: &str| format!("{p}/search/{field}");
    if phase.concurrency.is_some() || phase.rate.is_some() {
        issues.push(Issue::new(p, "a search phase sets its own load").hint(Some(
            "remove `concurrency`/`rate`; `search.load` names what varies".into(),
        )));
    }
    if phase.recheck.is_some() {
        issues.push(Issue::new(p, "a recheck cannot search"));
    }
    if !phase.before.is_empty() || !phase.after.is_empty() || !phase.during.is_empty() {
        issues.push(Issue::new(
            p,
            "a search phase takes no `before`/`during`/`after` hooks",
        ));
    }
    if !(s.min.is_finite() && s.min > 0.0) {
        issues.push(Issue::new(
            at("min"),
            format!("must be greater than zero, found {}", s.min),
        ));
    }
    if !(s.max.is_finite() && s.max >= s.min) {
        issues.push(Issue::new(
            at("max"),
            format!("must be at least `min`, found {}", s.max),
        ));
    }
    if s.load == SearchLoad::Concurrency && (s.min.fract() != 0.0 || s.max.fract() != 0.0) {
        issues.push(Issue::new(
            at("min"),
            "a concurrency search needs whole `min` and `max`",
        ));
    }
    let precision = s.precision.0;
    if !(precision.is_finite() && precision > 0.0 && precision < 1.0) {
        issues.push(Issue::new(
            at("precision"),
            format!("must be between 0 and 1 (0.05 = 5%), found {precision}"),
        ));
    }
    if s.objectives().is_empty() {
        issues.push(
            Issue::new(at("slo"), "the search has no objective").hint(Some(
                "set e.g. `ttft: {p99: 2s}` or `error_rate: 0.01`".into(),
            )),
        );
    }
    if s.probe.duration.0.is_zero() {
        issues.push(Issue::new(at("probe/duration"), "must be longer than zero"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(yaml: &str) -> Result<SearchSlo, String> {
        let value: serde_json::Value = serde_saphyr::from_str(yaml).map_err(|e| e.to_string())?;
        SearchSlo::deserialize(value).map_err(|e| e.to_string())
    }

    #[test]
    fn any_time_figure_of_the_table_is_an_objective_in_its_unit() {
        let slo = read("{ttft: {p95: 60ms}, server_queue_ms: {p99: 5ms}, error_rate: 1%}").unwrap();
        let search = Search {
            load: SearchLoad::Rate,
            min: 1.0,
            max: 8.0,
            slo,
            precision: Fraction(0.05),
            probe: Probe {
                duration: HumanDuration(std::time::Duration::from_secs(1)),
                warmup: None,
                until: None,
            },
            max_probes: None,
        };
        let objectives = search.objectives();
        let named = |name: &str| {
            let objective = objectives.iter().find(|o| o.name() == name);
            objective.map(|o| o.limit())
        };
        assert_eq!(named("ttft.p95"), Some(0.06), "seconds");
        assert_eq!(named("server_queue_ms.p99"), Some(5.0), "milliseconds");
        assert_eq!(named("error_rate"), Some(0.01));
        assert_eq!(objectives.len(), 3);
        // Written back as read.
        let text = serde_json::to_string(&search.slo).unwrap();
        assert_eq!(read(&text).unwrap(), search.slo);
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
}
