//! A target's `metrics:`: the one Prometheus endpoint of a server, or a gateway's and its
//! replicas' endpoints.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

/// Where a target's Prometheus metrics are scraped, before and after each phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum TargetMetrics {
    /// The server's own endpoint, e.g. `http://127.0.0.1:8000/metrics`.
    Url(String),
    /// Several endpoints (a gateway and the replicas behind it), scraped concurrently.
    Endpoints(Vec<MetricsEndpoint>),
}

impl TargetMetrics {
    /// The one endpoint's URL, for the one-URL form.
    pub fn url(&self) -> Option<&str> {
        match self {
            TargetMetrics::Url(url) => Some(url),
            TargetMetrics::Endpoints(_) => None,
        }
    }

    /// The endpoints of the list form; empty for the one-URL form.
    pub fn endpoints(&self) -> &[MetricsEndpoint] {
        match self {
            TargetMetrics::Url(_) => &[],
            TargetMetrics::Endpoints(endpoints) => endpoints,
        }
    }

    /// Every URL scraped.
    pub fn urls(&self) -> Vec<&str> {
        match self {
            TargetMetrics::Url(url) => vec![url.as_str()],
            TargetMetrics::Endpoints(endpoints) => {
                endpoints.iter().map(|e| e.url.as_str()).collect()
            }
        }
    }

    /// Every URL scraped, to rewrite (credentials redacted).
    pub fn urls_mut(&mut self) -> Vec<&mut String> {
        match self {
            TargetMetrics::Url(url) => vec![url],
            TargetMetrics::Endpoints(endpoints) => {
                endpoints.iter_mut().map(|e| &mut e.url).collect()
            }
        }
    }
}

/// A target's `metrics:`, where an empty list (a plan's variable may hold one) is no metrics,
/// so a plan reads back the same after it is written.
pub(super) fn read<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<TargetMetrics>, D::Error> {
    let metrics = Option::<TargetMetrics>::deserialize(deserializer)?;
    Ok(metrics.filter(|m| !m.urls().is_empty()))
}

/// One Prometheus endpoint of a target: the gateway itself or a replica behind it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricsEndpoint {
    /// The endpoint, e.g. `http://127.0.0.1:8001/metrics`.
    pub url: String,
    #[serde(default)]
    pub role: MetricsRole,
    /// Name in the report (default: the URL's host and port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// What a metrics endpoint belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MetricsRole {
    /// The router in front of the replicas.
    Gateway,
    /// A replica; backend counters are summed for the phase figures.
    #[default]
    Backend,
}

const EXPECTING: &str = "a metrics URL such as http://127.0.0.1:8000/metrics, or a list of \
    endpoints such as [{url: http://gateway:8080/metrics, role: gateway}]";

impl<'de> Deserialize<'de> for TargetMetrics {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MetricsVisitor;
        impl<'de> Visitor<'de> for MetricsVisitor {
            type Value = TargetMetrics;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(EXPECTING)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TargetMetrics, E> {
                Ok(TargetMetrics::Url(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<TargetMetrics, A::Error> {
                Vec::<MetricsEndpoint>::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(TargetMetrics::Endpoints)
            }
        }
        deserializer.deserialize_any(MetricsVisitor)
    }
}

impl JsonSchema for TargetMetrics {
    fn schema_name() -> Cow<'static, str> {
        "TargetMetrics".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let endpoint = generator.subschema_for::<MetricsEndpoint>();
        json_schema!({
            "description": "Prometheus metrics scraped before and after each phase: the \
                server's endpoint, or a list of endpoints (a gateway and its replicas, scraped \
                concurrently; backend counters are summed).",
            "anyOf": [
                {
                    "description": "The server's metrics endpoint.",
                    "type": "string",
                },
                {
                    "description": "A gateway's and its replicas' endpoints.",
                    "type": "array",
                    "items": endpoint,
                },
            ],
            "examples": [
                "http://127.0.0.1:8000/metrics",
                [
                    {"url": "http://127.0.0.1:8080/metrics", "role": "gateway", "name": "gateway"},
                    {"url": "http://127.0.0.1:8001/metrics", "name": "replica-a"},
                ],
            ],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: serde_json::Value) -> Result<TargetMetrics, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    #[test]
    fn a_url_or_a_list_and_each_writes_back_as_read() {
        let one = read(json!("http://h:1/metrics")).unwrap();
        assert_eq!(one.url(), Some("http://h:1/metrics"));
        assert!(one.endpoints().is_empty());
        assert_eq!(
            serde_json::to_value(&one).unwrap(),
            json!("http://h:1/metrics")
        );
        let list =
            json!([{"url": "http://g/metrics", "role": "gateway"}, {"url": "http://b/metrics"}]);
        let several = read(list.clone()).unwrap();
        assert_eq!(several.url(), None);
        assert_eq!(several.urls(), ["http://g/metrics", "http://b/metrics"]);
        assert_eq!(several.endpoints()[1].role, MetricsRole::Backend);
        let written = serde_json::to_value(&several).unwrap();
        assert_eq!(written[0]["role"], "gateway");
        assert_eq!(read(written).unwrap(), several);
    }

    #[test]
    fn an_empty_list_is_no_metrics() {
        #[derive(Deserialize)]
        struct Holder {
            #[serde(default, deserialize_with = "super::read")]
            metrics: Option<TargetMetrics>,
        }
        let held: Holder = serde_json::from_value(json!({"metrics": []})).unwrap();
        assert_eq!(held.metrics, None);
        let held: Holder = serde_json::from_value(json!({})).unwrap();
        assert_eq!(held.metrics, None);
    }

    #[test]
    fn another_shape_says_what_is_accepted() {
        let err = read(json!(42)).unwrap_err();
        assert!(err.contains("a metrics URL"), "{err}");
        assert!(read(json!([{"url": "http://b/metrics", "rol": "gateway"}])).is_err());
    }
}
