//! The interval of a search's capacity, from the probes at the ends of its bracket.
//!
//! Each end is a verdict its probe earned from its bounds (a pass whose upper bound lies within
//! every limit, a fail whose lower bound lies beyond one), so the capacity lies between them
//! with the confidence of those two verdicts. Latency near a knee rises too steeply for a line
//! through the two probes to place it more finely: such a line reaches the limit at a load the
//! probe at that load could still fail or pass.

use crate::metrics::verdict::Verdict;
use crate::report::model::ProbeOutcome;

/// `[low, high]` of the capacity: the load of the highest probe that passed and of the lowest
/// that failed; an end is `None` when the bracket is open there (or its probe did not earn
/// that verdict).
pub fn capacity_interval(
    passed: Option<&ProbeOutcome>,
    failed: Option<&ProbeOutcome>,
) -> [Option<f64>; 2] {
    let end = |probe: Option<&ProbeOutcome>, verdict: Verdict| {
        probe.filter(|p| p.verdict == verdict).map(|p| p.load)
    };
    [end(passed, Verdict::Pass), end(failed, Verdict::Fail)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(load: f64, verdict: Verdict) -> ProbeOutcome {
        ProbeOutcome {
            search: "s".into(),
            load,
            verdict,
            passed: verdict == Verdict::Pass,
            over_saturated: false,
            over_saturated_why: None,
            stopped_early: false,
            objectives: Vec::new(),
            despite_client: None,
        }
    }

    #[test]
    fn only_earned_verdicts_close_the_interval() {
        let (p, f) = (probe(8.0, Verdict::Pass), probe(16.0, Verdict::Fail));
        assert_eq!(
            capacity_interval(Some(&p), Some(&f)),
            [Some(8.0), Some(16.0)]
        );
        assert_eq!(capacity_interval(Some(&p), None), [Some(8.0), None]);
        let undecided = probe(16.0, Verdict::Indeterminate);
        assert_eq!(
            capacity_interval(Some(&p), Some(&undecided)),
            [Some(8.0), None]
        );
    }
}
