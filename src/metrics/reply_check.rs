//! Checking each reply after its request (off the timing path, as records arrive): whether a
//! structured-output reply is JSON satisfying the workload's schema, and the phase's
//! `valid_share` with its Wilson interval and the invalid replies by reason.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::binomial::wilson_interval;
use crate::client::RequestRecord;

/// Why a reply failed its check, when the reply was cut by `max_tokens`.
pub const CUT_BY_MAX_TOKENS: &str = "cut by max_tokens";
/// The reply did not parse as JSON.
pub const NOT_JSON: &str = "not JSON";
/// `json_object`: the reply parsed, but is not an object.
pub const NOT_AN_OBJECT: &str = "not a JSON object";

/// What each reply of a workload with a `response_format` is held to.
pub struct ReplyCheck {
    /// `None` for `json_object`: any JSON object.
    validator: Option<jsonschema::Validator>,
}

impl ReplyCheck {
    /// `schema` is the workload's resolved `json_schema`; `None` checks for a JSON object.
    pub fn new(schema: Option<&Value>) -> Result<Self, String> {
        let validator = schema
            .map(crate::plan::response_format::compile)
            .transpose()?;
        Ok(ReplyCheck { validator })
    }

    /// Mark a finished request's record valid or not (with the reason); failed and cancelled
    /// requests, and records without a kept reply, are left unchecked.
    pub fn check(&self, record: &mut RequestRecord) {
        if !record.is_ok() {
            return;
        }
        let Some(reply) = record.reply.as_deref() else {
            return;
        };
        let reason = self.reason(reply, record.finish_reason.as_deref());
        record.valid = Some(reason.is_none());
        record.invalid_reason = reason;
    }

    /// Why `reply` fails the check; `None` when it passes. A reply cut by `max_tokens` that
    /// fails is put down to the cut, whatever else is wrong with it.
    pub fn reason(&self, reply: &str, finish_reason: Option<&str>) -> Option<String> {
        let reason = self.content_reason(reply)?;
        Some(if finish_reason == Some("length") {
            CUT_BY_MAX_TOKENS.to_string()
        } else {
            reason
        })
    }

    fn content_reason(&self, reply: &str) -> Option<String> {
        let Ok(value) = serde_json::from_str::<Value>(reply.trim()) else {
            return Some(NOT_JSON.to_string());
        };
        match &self.validator {
            None => (!value.is_object()).then(|| NOT_AN_OBJECT.to_string()),
            Some(validator) => validator.validate(&value).err().map(|e| {
                let path = e.instance_path().to_string();
                format!("schema: {}", if path.is_empty() { "/" } else { &path })
            }),
        }
    }
}

/// A phase's structured-output figures.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct StructuredOutput {
    /// Successful replies checked.
    pub checked: u64,
    /// Of those, replies that satisfied the `response_format`.
    pub valid: u64,
    /// `valid / checked`.
    pub valid_share: f64,
    /// Wilson score 95% interval of `valid_share`.
    pub valid_share_ci95: [f64; 2],
    /// Invalid replies by reason (`not JSON`, `cut by max_tokens`, `schema: /path`), most
    /// frequent first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid: Vec<ReasonCount>,
}

/// Replies that failed their check for one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReasonCount {
    pub reason: String,
    pub count: u64,
}

/// Running counts of checked replies.
#[derive(Debug, Clone, Default)]
pub struct CheckTally {
    checked: u64,
    valid: u64,
    reasons: BTreeMap<String, u64>,
}

impl CheckTally {
    pub fn add(&mut self, r: &RequestRecord) {
        let Some(valid) = r.valid.filter(|_| r.is_ok()) else {
            return;
        };
        self.checked += 1;
        if valid {
            self.valid += 1;
        } else {
            let reason = r.invalid_reason.clone().unwrap_or_default();
            *self.reasons.entry(reason).or_insert(0) += 1;
        }
    }

    /// The phase's figures; `None` when no reply was checked.
    pub fn finish(&self) -> Option<StructuredOutput> {
        if self.checked == 0 {
            return None;
        }
        let mut invalid: Vec<ReasonCount> = self
            .reasons
            .iter()
            .map(|(reason, &count)| ReasonCount {
                reason: reason.clone(),
                count,
            })
            .collect();
        invalid.sort_by(|a, b| b.count.cmp(&a.count).then(a.reason.cmp(&b.reason)));
        Some(StructuredOutput {
            checked: self.checked,
            valid: self.valid,
            valid_share: self.valid as f64 / self.checked as f64,
            valid_share_ci95: wilson_interval(self.valid as f64, self.checked as f64),
            invalid,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(reply: &str, finish: Option<&str>) -> RequestRecord {
        RequestRecord {
            reply: Some(reply.into()),
            finish_reason: finish.map(str::to_string),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn replies_are_sorted_by_reason() {
        let schema = serde_json::json!({
            "type": "object",
            "required": ["name", "age"],
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}
        });
        let check = ReplyCheck::new(Some(&schema)).unwrap();
        let mut tally = CheckTally::default();
        for (reply, finish, want) in [
            (r#"{"name": "a", "age": 3}"#, Some("stop"), None),
            (r#"{"name": "a", "age": "x"}"#, None, Some("schema: /age")),
            (r#"{"name": "a"}"#, None, Some("schema: /")),
            (r#"{"name": "a", "age""#, None, Some(NOT_JSON)),
            (
                r#"{"name": "a", "age""#,
                Some("length"),
                Some(CUT_BY_MAX_TOKENS),
            ),
        ] {
            let mut r = record(reply, finish);
            check.check(&mut r);
            assert_eq!(r.invalid_reason.as_deref(), want, "{reply}");
            assert_eq!(r.valid, Some(want.is_none()));
            tally.add(&r);
        }
        let out = tally.finish().unwrap();
        assert_eq!((out.checked, out.valid), (5, 1));
        assert_eq!(out.invalid.len(), 4);
        assert!(out.valid_share_ci95[0] < 0.2 && out.valid_share_ci95[1] > 0.2);
        // json_object: any object.
        let object = ReplyCheck::new(None).unwrap();
        assert_eq!(object.reason("{}", None), None);
        assert_eq!(object.reason("[1]", None).as_deref(), Some(NOT_AN_OBJECT));
    }
}
