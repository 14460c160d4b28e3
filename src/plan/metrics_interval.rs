//! A target's `metrics_interval`: how often its metrics endpoints are sampled during each
//! measured window (default every second), or `off`.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

use super::HumanDuration;
use crate::duration::DURATION_PATTERN;

/// Sampling during the window when a plan does not say.
pub const DEFAULT_METRICS_INTERVAL: Duration = Duration::from_secs(1);

/// Written `"1s"` (any duration), or `off` / `0` (a zero duration too) for no sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsInterval {
    Off,
    Every(HumanDuration),
}

impl MetricsInterval {
    /// The interval a target's setting (absent: the default) asks for; `None` for `off`.
    pub fn resolve(setting: Option<MetricsInterval>) -> Option<Duration> {
        match setting {
            None => Some(DEFAULT_METRICS_INTERVAL),
            Some(MetricsInterval::Off) => None,
            Some(MetricsInterval::Every(d)) => Some(d.0),
        }
    }

    fn from_duration(d: HumanDuration) -> MetricsInterval {
        if d.0.is_zero() {
            MetricsInterval::Off
        } else {
            MetricsInterval::Every(d)
        }
    }
}

const EXPECTING: &str = "a duration such as \"1s\" or \"250ms\", or `off`";

impl Serialize for MetricsInterval {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            MetricsInterval::Off => serializer.serialize_str("off"),
            MetricsInterval::Every(d) => d.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for MetricsInterval {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl de::Visitor<'_> for Visitor {
            type Value = MetricsInterval;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(EXPECTING)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<MetricsInterval, E> {
                match v {
                    0 => Ok(MetricsInterval::Off),
                    _ => Err(E::custom(format!(
                        "expected {EXPECTING}, found {v} (a number needs a unit)"
                    ))),
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<MetricsInterval, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::custom(format!("expected {EXPECTING}, found {v}"))),
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MetricsInterval, E> {
                match v.trim() {
                    "off" | "0" => Ok(MetricsInterval::Off),
                    text => text
                        .parse()
                        .map(MetricsInterval::from_duration)
                        .map_err(|_| E::custom(format!("expected {EXPECTING}, found {v:?}"))),
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl JsonSchema for MetricsInterval {
    fn schema_name() -> Cow<'static, str> {
        "MetricsInterval".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "anyOf": [
                {"type": "string", "pattern": DURATION_PATTERN},
                {"enum": ["off", "0", 0]},
            ],
            "description": "How often to scrape during the window, such as \"1s\" or \"250ms\"; \
                `off` (or 0) for never.",
            "examples": ["1s", "off"],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(yaml: &str) -> Result<MetricsInterval, String> {
        serde_json::from_value(serde_json::from_str(yaml).map_err(|e| e.to_string())?)
            .map_err(|e: serde_json::Error| e.to_string())
    }

    #[test]
    fn a_duration_samples_and_off_or_zero_does_not() {
        let every = |ms| Some(MetricsInterval::Every(Duration::from_millis(ms).into()));
        assert_eq!(read("\"250ms\"").ok(), every(250));
        assert_eq!(read("\"2s\"").ok(), every(2000));
        for off in ["\"off\"", "0", "\"0\"", "\"0s\""] {
            assert_eq!(read(off), Ok(MetricsInterval::Off), "{off}");
        }
        for bad in ["5", "-1", "\"sometimes\"", "true"] {
            let err = read(bad).expect_err(bad);
            assert!(err.contains("or `off`"), "{bad}: {err}");
        }
    }

    #[test]
    fn absent_means_every_second() {
        assert_eq!(MetricsInterval::resolve(None), Some(Duration::from_secs(1)));
        assert_eq!(MetricsInterval::resolve(Some(MetricsInterval::Off)), None);
        let every = MetricsInterval::Every(Duration::from_millis(100).into());
        assert_eq!(
            MetricsInterval::resolve(Some(every)),
            Some(Duration::from_millis(100))
        );
    }

    #[test]
    fn it_writes_back_as_it_reads() {
        for text in ["\"off\"", "\"250ms\""] {
            let value = read(text).unwrap();
            assert_eq!(serde_json::to_string(&value).unwrap(), text);
        }
    }
}
