//! Fractions in plans, written as a number (`0.05`) or a percentage (`"5%"`).

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

/// Pattern the plan schema gives for a percentage string.
pub const PERCENT_PATTERN: &str = r"^\s*[0-9]+(\.[0-9]+)?\s*%\s*$";

/// A share such as a tolerance: `0.05` and `"5%"` both mean 5%.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Fraction(pub f64);

impl Fraction {
    /// `"5%"` → 0.05, `"0.05"` → 0.05; `None` for anything else.
    pub fn parse(text: &str) -> Option<Fraction> {
        let text = text.trim();
        let (number, scale) = match text.strip_suffix('%') {
            Some(number) => (number.trim(), 0.01),
            None => (text, 1.0),
        };
        let value: f64 = number.parse().ok()?;
        value.is_finite().then_some(Fraction(value * scale))
    }
}

impl fmt::Display for Fraction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0 * 100.0)
    }
}

impl Serialize for Fraction {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.0)
    }
}

impl<'de> Deserialize<'de> for Fraction {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl de::Visitor<'_> for Visitor {
            type Value = Fraction;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a fraction such as 0.05 or a percentage such as \"5%\"")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Fraction, E> {
                Ok(Fraction(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Fraction, E> {
                Ok(Fraction(v as f64))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Fraction, E> {
                Ok(Fraction(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Fraction, E> {
                Fraction::parse(v).ok_or_else(|| {
                    E::custom(format!(
                        "expected a fraction such as 0.05 or a percentage such as \"5%\", found {v:?}"
                    ))
                })
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl JsonSchema for Fraction {
    fn schema_name() -> Cow<'static, str> {
        "Fraction".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "anyOf": [
                {"type": "number"},
                {"type": "string", "pattern": PERCENT_PATTERN},
            ],
            "description": "A fraction such as 0.05, or a percentage such as \"5%\".",
            "examples": ["5%", 0.05],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_percentages() {
        assert_eq!(Fraction::parse("5%"), Some(Fraction(0.05)));
        assert_eq!(Fraction::parse(" 2.5 % "), Some(Fraction(0.025)));
        assert_eq!(Fraction::parse("0.1"), Some(Fraction(0.1)));
        assert_eq!(Fraction::parse("five"), None);
        let from_yaml: Fraction = serde_json::from_str("\"5%\"").unwrap();
        assert_eq!(from_yaml, Fraction(0.05));
        let from_number: Fraction = serde_json::from_str("0.05").unwrap();
        assert_eq!(from_number, Fraction(0.05));
        assert_eq!(serde_json::to_string(&Fraction(0.05)).unwrap(), "0.05");
    }
}
