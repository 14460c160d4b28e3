//! The fewest samples with which a capacity-search probe can pass a quantile objective. It
//! sits below `plan` (as `quantile` does) so that a plan check can refuse a search no probe
//! could decide without importing `metrics`, which comes after `plan` in the data flow.

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
