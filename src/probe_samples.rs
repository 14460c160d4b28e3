//! A probe's verdict and the fewest samples with which a capacity-search probe can pass a
//! quantile objective. It sits below `plan` (as `quantile` does) so that a plan check can
//! refuse a search no probe could decide, and the search's course can weigh verdicts, without
//! importing `metrics`, which comes after both in the data flow (and reaches its verdicts).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A verdict that says when it could not tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The interval lies wholly within the limit.
    Pass,
    /// The interval lies wholly beyond the limit.
    Fail,
    /// The interval straddles the limit, or the sample is too small to bound the side that
    /// would decide.
    Indeterminate,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Indeterminate => "indeterminate",
        }
    }

    /// `Pass` when `ok`, else `Fail`: a verdict on a figure with no interval.
    pub fn of(ok: bool) -> Verdict {
        if ok { Verdict::Pass } else { Verdict::Fail }
    }
}

/// Chance each side of a verdict's interval may miss, over all of a probe's looks.
pub const VERDICT_TAIL: f64 = 0.025;
/// Looks a probe takes at its data: at 1/8, 1/4, 1/2 and all of its duration.
pub const PROBE_LOOKS: u32 = 4;

/// Each side's tail at one of `looks` looks.
pub fn look_tail(looks: u32) -> f64 {
    VERDICT_TAIL / f64::from(looks.max(1))
}

/// The fewest samples whose `p`-quantile has an upper bound with at most `tail` above it:
/// `p^n ≤ tail`.
pub fn min_samples_for_upper_bound(p: f64, tail: f64) -> u64 {
    if !(0.0..1.0).contains(&p) || tail <= 0.0 {
        return u64::MAX;
    }
    (tail.ln() / p.ln()).ceil().max(1.0) as u64
}

/// The fewest (effective) samples with which a probe can pass a `q`-quantile objective: below
/// them the quantile has no upper bound at a look's tail.
pub fn samples_to_pass(q: f64) -> u64 {
    min_samples_for_upper_bound(q, look_tail(PROBE_LOOKS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_counts() {
        assert_eq!(samples_to_pass(0.5), 8);
        assert_eq!(samples_to_pass(0.95), 99);
        assert_eq!(samples_to_pass(0.99), 505);
    }
}
