//! One distribution slot per figure of the figure table, written under the figures' names:
//! the per-figure part of a phase's summary and of a session turn's figures. A new row of
//! the table has its slot, its key in report.json and its schema property with no code here.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Distribution;
use crate::figure::{FIGURES, Figure};

/// Each figure's distribution, where the records had values of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Distributions([Option<Distribution>; FIGURES.len()]);

impl Default for Distributions {
    fn default() -> Self {
        Distributions([None; FIGURES.len()])
    }
}

impl Distributions {
    pub fn get(&self, figure: Figure) -> Option<&Distribution> {
        self.0[figure.index()].as_ref()
    }

    pub fn get_mut(&mut self, figure: Figure) -> Option<&mut Distribution> {
        self.0[figure.index()].as_mut()
    }

    pub fn set(&mut self, figure: Figure, distribution: Option<Distribution>) {
        self.0[figure.index()] = distribution;
    }

    /// These distributions with `figure`'s set (readers of other formats, tests).
    pub fn with(mut self, figure: Figure, distribution: Distribution) -> Self {
        self.set(figure, Some(distribution));
        self
    }

    /// The figures that have a distribution, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (Figure, &Distribution)> {
        Figure::all().filter_map(|f| self.get(f).map(|d| (f, d)))
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }
}

impl FromIterator<(Figure, Distribution)> for Distributions {
    fn from_iter<I: IntoIterator<Item = (Figure, Distribution)>>(iter: I) -> Self {
        iter.into_iter()
            .fold(Distributions::default(), |all, (f, d)| all.with(f, d))
    }
}

impl Serialize for Distributions {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (figure, d) in self.iter() {
            map.serialize_entry(figure.name(), d)?;
        }
        map.end()
    }
}

/// Where reports written before the two server-timing gaps were summary figures kept them.
const LEGACY_GAP: &str = "server_timing_gap";

#[derive(Deserialize)]
struct LegacyGap {
    #[serde(default)]
    ttft_minus_server_prompt_ms: Option<Distribution>,
    #[serde(default)]
    e2e_minus_server_total_ms: Option<Distribution>,
}

/// Reads every key that names a figure (`null` is no distribution) and skips the rest, so it
/// works flattened into a larger object.
impl<'de> Deserialize<'de> for Distributions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = Distributions;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of figure names to distributions")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Distributions, A::Error> {
                let mut out = Distributions::default();
                let mut legacy = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match Figure::named(&key) {
                        Some(figure) => out.set(figure, map.next_value()?),
                        None if key == LEGACY_GAP => {
                            legacy = map.next_value::<Option<LegacyGap>>()?;
                        }
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                if let Some(gap) = legacy {
                    for (figure, d) in [
                        (
                            Figure::TtftMinusServerPrompt,
                            gap.ttft_minus_server_prompt_ms,
                        ),
                        (Figure::E2eMinusServerTotal, gap.e2e_minus_server_total_ms),
                    ] {
                        if out.get(figure).is_none() {
                            out.set(figure, d);
                        }
                    }
                }
                Ok(out)
            }
        }
        deserializer.deserialize_map(Keys)
    }
}

impl JsonSchema for Distributions {
    fn schema_name() -> Cow<'static, str> {
        "Distributions".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let distribution = generator.subschema_for::<Distribution>().to_value();
        let mut properties = serde_json::Map::new();
        for spec in &FIGURES {
            properties.insert(
                spec.name.to_string(),
                serde_json::json!({
                    "description": spec.doc,
                    "anyOf": [distribution, {"type": "null"}],
                }),
            );
        }
        json_schema!({
            "type": "object",
            "properties": properties,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(p50: f64) -> Distribution {
        Distribution {
            p50,
            samples: 1,
            ..Distribution::default()
        }
    }

    #[test]
    fn written_under_figure_names_and_read_back() {
        let all: Distributions = [(Figure::TtftTool, d(9.5)), (Figure::Ttft, d(0.2))]
            .into_iter()
            .collect();
        let json = serde_json::to_value(all).unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["ttft", "ttft_tool_ms"],
            "table order, absent ones left out"
        );
        assert_eq!(serde_json::from_value::<Distributions>(json).unwrap(), all);
    }

    #[test]
    fn nulls_and_other_keys_are_no_distribution() {
        let json = serde_json::json!({"ttft": null, "requests": 3, "e2e": {
            "p50": 1.0, "p95": 1.0, "p99": 1.0, "min": 1.0, "max": 1.0}});
        let all: Distributions = serde_json::from_value(json).unwrap();
        assert_eq!(
            all.iter().map(|(f, _)| f).collect::<Vec<_>>(),
            [Figure::E2e]
        );
    }

    #[test]
    fn older_reports_server_timing_gaps_are_read() {
        let gap = serde_json::to_value(d(4.0)).unwrap();
        let json = serde_json::json!({
            "server_timing_gap": {"requests": 2, "ttft_minus_server_prompt_ms": gap},
        });
        let all: Distributions = serde_json::from_value(json).unwrap();
        assert_eq!(all.get(Figure::TtftMinusServerPrompt), Some(&d(4.0)));
        assert_eq!(all.get(Figure::E2eMinusServerTotal), None);
    }
}
