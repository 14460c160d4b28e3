//! Answers checked under load: a workload's `score` (how a reply is held against its row's
//! `expected` answer) and the scored sets servebench generates itself.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema::Issue;

/// How a reply is held against its dataset row's `expected`: `exact`, `normalized`,
/// `choice`, `{regex: PATTERN}`, `{number: {tolerance}}` or `{json_field: PATH}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Score {
    /// The reply, trimmed, is `expected`.
    Exact,
    /// The same after lower-casing, dropping punctuation and collapsing whitespace.
    Normalized,
    /// The reply's first match of the pattern (its first group, when it has one), normalized,
    /// is `expected` normalized.
    Regex(
        #[schemars(
            description = "The pattern (Rust `regex` syntax), checked when the plan is validated."
        )]
        String,
    ),
    /// The reply's last number is within `tolerance` of `expected`.
    Number(
        #[schemars(description = "How far the reply's number may be from `expected`.")] NumberScore,
    ),
    /// The reply is JSON whose value at this path (`a.b.0` or `/a/b/0`), normalized, is
    /// `expected` normalized.
    JsonField(
        #[schemars(description = "The field's path: `a.b.0`, or the JSON pointer `/a/b/0`.")]
        String,
    ),
    /// The reply's first standalone option letter (A–J) is `expected`.
    Choice,
}

/// `number`: the reply's last number against `expected`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NumberScore {
    /// Largest absolute difference still correct (default 0).
    #[serde(default)]
    pub tolerance: f64,
}

/// A scored set servebench writes itself: `copy` a few words back, `arithmetic` (a sum),
/// `json_extract` (a field of a small JSON object).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GeneratedSet {
    Copy,
    Arithmetic,
    JsonExtract,
}

/// A regex that compiles, a tolerance of zero or more, a path that is not empty; and a
/// scorer needs answers (a dataset's rows carry `expected`; synthetic prompts have none).
pub(super) fn check_score(p: &str, score: &Score, has_dataset: bool, issues: &mut Vec<Issue>) {
    match score {
        Score::Regex(pattern) => {
            if let Err(e) = regex::Regex::new(pattern) {
                issues.push(Issue::new(
                    format!("{p}/regex"),
                    format!("the pattern does not compile: {}", regex_problem(&e)),
                ));
            }
        }
        Score::Number(n) if !(n.tolerance.is_finite() && n.tolerance >= 0.0) => {
            issues.push(Issue::new(
                format!("{p}/number/tolerance"),
                format!("must be zero or more, found {}", n.tolerance),
            ));
        }
        Score::JsonField(path) if path.trim().is_empty() => {
            issues.push(Issue::new(format!("{p}/json_field"), "the path is empty"));
        }
        _ => {}
    }
    if !has_dataset {
        issues.push(
            Issue::new(
                p,
                "`score` holds each reply against its row's `expected` answer: it needs a \
                 `dataset` (a JSONL file whose rows carry `expected`, or `generate`)",
            )
            .at_key(),
        );
    }
}

/// A regex error's one-line reason (its text draws a caret under the pattern over lines).
pub fn regex_problem(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text.lines().last().unwrap_or_default().trim();
    last.strip_prefix("error: ").unwrap_or(last).to_string()
}
