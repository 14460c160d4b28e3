//! A workload's planned cancellations: which share of its streams the client abandons, and at
//! what point, as impatient users and agents do.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::duration::HumanDuration;
use super::fraction::Fraction;
use super::schema::Issue;

/// `cancel: {fraction: 20%, after: {tokens: 8}}`: that share of the requests is dropped by the
/// client mid-generation (the connection closed, as a user's client does).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cancel {
    /// Share of the requests cancelled: `0.2` or `"20%"`. Which ones is fixed by the request
    /// index and the workload's seed, so a rerun cancels the same requests.
    pub fraction: Fraction,
    /// When a cancelled request's stream is dropped.
    pub after: CancelAfter,
    /// Cancellations begin this long into the measured window (default: from its first
    /// request); the requests before it are the baseline the report's recovery finding
    /// compares with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<HumanDuration>,
}

/// The point at which a cancelled request is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum CancelAfter {
    /// After this many streamed output deltas (one token each on most servers; several with
    /// speculative decoding).
    Tokens(#[schemars(description = "Streamed output deltas before the drop (at least 1).")] u32),
    /// This long after the request was sent, whatever came by then.
    Time(HumanDuration),
}

/// A share in (0, 1], a token count of at least one and a time above zero.
pub(super) fn check_cancel(p: &str, cancel: &Cancel, issues: &mut Vec<Issue>) {
    let fraction = cancel.fraction.0;
    if !(fraction.is_finite() && fraction > 0.0 && fraction <= 1.0) {
        issues.push(
            Issue::new(
                format!("{p}/fraction"),
                format!(
                    "must be above 0 and at most 100%, found {}",
                    cancel.fraction
                ),
            )
            .hint(Some("write a share such as 0.2 or \"20%\"".into())),
        );
    }
    match cancel.after {
        CancelAfter::Tokens(0) => issues.push(Issue::new(
            format!("{p}/after/tokens"),
            "must be at least 1 token (a request cancelled before any output is `time`)",
        )),
        CancelAfter::Time(time) if time.0.is_zero() => issues.push(Issue::new(
            format!("{p}/after/time"),
            "must be longer than zero",
        )),
        CancelAfter::Tokens(_) | CancelAfter::Time(_) => {}
    }
}
