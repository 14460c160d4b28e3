//! How far a recheck may drift from its original before the report calls it drifted: one
//! tolerance per metric, the percentiles named from the figure table.

use std::borrow::Cow;
use std::collections::BTreeMap;

use indexmap::IndexMap;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use super::diag::did_you_mean_or_list;
use super::until::StableMetric;

/// Relative drift allowed between a phase and its recheck, per metric (0.2 = 20%). Written as
/// a map: `default`, a percentile with an interval as `FIGURE_pNN` (`ttft_p99`, `tpot_p95`,
/// `mean_inter_token_latency_ms_p50`, …), `output_tokens_per_second`, and `error_rate`
/// (absolute: 0.01 = one percentage point).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tolerance {
    /// Applies to every metric not named.
    pub default: Option<f64>,
    /// Per percentile. A percentile named here is checked even where drift does not check it
    /// by default.
    pub percentiles: BTreeMap<StableMetric, f64>,
    pub output_tokens_per_second: Option<f64>,
    pub error_rate: Option<f64>,
}

const DEFAULT: &str = "default";
const OUTPUT_TOKENS_PER_SECOND: &str = "output_tokens_per_second";
const ERROR_RATE: &str = "error_rate";

impl Tolerance {
    /// Every tolerance given, by key.
    pub fn entries(&self) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f64)> = Vec::new();
        out.extend(self.default.map(|v| (DEFAULT.to_string(), v)));
        out.extend(self.percentiles.iter().map(|(m, v)| (key(*m), *v)));
        let throughput = self.output_tokens_per_second;
        out.extend(throughput.map(|v| (OUTPUT_TOKENS_PER_SECOND.to_string(), v)));
        out.extend(self.error_rate.map(|v| (ERROR_RATE.to_string(), v)));
        out
    }
}

/// A percentile's key: `ttft_p99`.
fn key(metric: StableMetric) -> String {
    format!("{}_{}", metric.figure.name(), metric.percentile.name())
}

/// Every key a tolerance may have, in written order.
fn keys() -> Vec<String> {
    let percentiles = StableMetric::all().map(key);
    let rest = [OUTPUT_TOKENS_PER_SECOND, ERROR_RATE].map(str::to_string);
    std::iter::once(DEFAULT.to_string())
        .chain(percentiles)
        .chain(rest)
        .collect()
}

impl Serialize for Tolerance {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let entries = self.entries();
        let mut map = serializer.serialize_map(Some(entries.len()))?;
        for (key, value) in &entries {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Tolerance {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let entries = IndexMap::<String, f64>::deserialize(deserializer)?;
        let mut tolerance = Tolerance::default();
        for (name, value) in entries {
            match name.as_str() {
                DEFAULT => tolerance.default = Some(value),
                OUTPUT_TOKENS_PER_SECOND => tolerance.output_tokens_per_second = Some(value),
                ERROR_RATE => tolerance.error_rate = Some(value),
                _ => {
                    let Some(metric) = StableMetric::all().find(|m| key(*m) == name) else {
                        let keys = keys();
                        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                        let hint = did_you_mean_or_list(&name, &keys);
                        return Err(D::Error::custom(format!(
                            "`{name}` is not a tolerance; {hint}"
                        )));
                    };
                    tolerance.percentiles.insert(metric, value);
                }
            }
        }
        Ok(tolerance)
    }
}

impl JsonSchema for Tolerance {
    fn schema_name() -> Cow<'static, str> {
        "Tolerance".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut properties = serde_json::Map::new();
        let number =
            |description: String| json_schema!({"type": "number", "description": description});
        properties.insert(
            DEFAULT.into(),
            number("Applies to every metric not named.".into()).to_value(),
        );
        for metric in StableMetric::all() {
            let description = format!("Relative change allowed in {}.", metric.name());
            properties.insert(key(metric), number(description).to_value());
        }
        properties.insert(
            OUTPUT_TOKENS_PER_SECOND.into(),
            number("Relative change allowed in output token throughput.".into()).to_value(),
        );
        properties.insert(
            ERROR_RATE.into(),
            number(
                "Absolute change allowed in the error rate (0.01 = one percentage point).".into(),
            )
            .to_value(),
        );
        json_schema!({
            "description": "Relative drift allowed between a phase and its recheck, per metric \
                (0.2 = 20%); percentiles as `FIGURE_pNN` (`ttft_p99`).",
            "type": "object",
            "properties": properties,
            "additionalProperties": false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figure::{Figure, Stat};

    fn read(yaml: &str) -> Result<Tolerance, String> {
        let value: serde_json::Value = serde_saphyr::from_str(yaml).map_err(|e| e.to_string())?;
        Tolerance::deserialize(value).map_err(|e| e.to_string())
    }

    #[test]
    fn percentile_keys_come_from_the_figure_table_and_write_back_in_order() {
        let t = read("{error_rate: 0.02, tpot_p99: 0.3, default: 0.2, ttft_p50: 0.1}").unwrap();
        let tpot_p99 = StableMetric {
            figure: Figure::Tpot,
            percentile: Stat::P99,
        };
        assert_eq!(t.percentiles.get(&tpot_p99), Some(&0.3));
        assert_eq!((t.default, t.error_rate), (Some(0.2), Some(0.02)));
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"default":0.2,"ttft_p50":0.1,"tpot_p99":0.3,"error_rate":0.02}"#
        );
        assert!(read("{mean_inter_token_latency_ms_p95: 0.5}").is_ok());
    }

    #[test]
    fn an_unknown_key_names_the_nearest() {
        let err = read("{ttft_p90: 0.1}").unwrap_err();
        assert!(err.contains("`ttft_p90` is not a tolerance"), "{err}");
        assert!(err.contains("did you mean"), "{err}");
        // A figure without intervals has no tolerance.
        assert!(read("{output_tokens_p50: 0.1}").is_err());
    }
}
