//! Human-readable durations in plans and simulator settings: `"250ms"`, `"60s"`, `"10m"`,
//! `"1h 30m"`.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

/// Pattern the plan schema gives for a duration string.
pub const DURATION_PATTERN: &str =
    r"^\s*([0-9]+(\.[0-9]+)?\s*(ns|us|ms|s|sec|secs|m|min|mins|h|hr|hrs|d)\s*)+$";

/// A duration written as a human string, kept as a [`Duration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct HumanDuration(pub Duration);

impl HumanDuration {
    pub fn as_secs_f64(&self) -> f64 {
        self.0.as_secs_f64()
    }
}

impl From<Duration> for HumanDuration {
    fn from(d: Duration) -> Self {
        HumanDuration(d)
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

/// Why a string is not a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected a duration such as \"250ms\", \"60s\" or \"10m\", found {found:?}")]
pub struct DurationParseError {
    pub found: String,
}

impl FromStr for HumanDuration {
    type Err = DurationParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || DurationParseError {
            found: s.to_string(),
        };
        let trimmed = s.trim();
        if trimmed.is_empty() {
            return Err(err());
        }
        // humantime rejects fractions ("1.5s"), which people write; handle one number + unit here.
        if let Some(d) = parse_fractional(trimmed) {
            return Ok(HumanDuration(d));
        }
        humantime::parse_duration(trimmed)
            .map(HumanDuration)
            .map_err(|_| err())
    }
}

fn parse_fractional(s: &str) -> Option<Duration> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = s.split_at(split);
    if !number.contains('.') {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "ms" => 1e-3,
        "s" | "sec" | "secs" => 1.0,
        "m" | "min" | "mins" => 60.0,
        "h" | "hr" | "hrs" => 3600.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(value * scale).ok()
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl de::Visitor<'_> for Visitor {
            type Value = HumanDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as \"250ms\", \"60s\" or \"10m\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<HumanDuration, E> {
                v.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

impl JsonSchema for HumanDuration {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": DURATION_PATTERN,
            "description": "A duration such as \"250ms\", \"60s\", \"1.5s\", \"10m\" or \"1h 30m\".",
            "examples": ["60s", "10m", "250ms"],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_forms() {
        let cases = [
            ("250ms", Duration::from_millis(250)),
            ("60s", Duration::from_secs(60)),
            ("10m", Duration::from_secs(600)),
            ("1h 30m", Duration::from_secs(5400)),
            ("1.5s", Duration::from_millis(1500)),
        ];
        for (text, want) in cases {
            assert_eq!(text.parse::<HumanDuration>().unwrap().0, want, "{text}");
        }
    }

    #[test]
    fn rejects_nonsense() {
        for text in ["", "sixty", "60", "5 parsecs", "-1s"] {
            assert!(text.parse::<HumanDuration>().is_err(), "{text}");
        }
    }

    #[test]
    fn round_trips_through_display() {
        let d: HumanDuration = "1h 30m".parse().unwrap();
        assert_eq!(d.to_string().parse::<HumanDuration>().unwrap(), d);
    }
}
