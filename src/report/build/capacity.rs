//! The interval of a search's capacity, from the probes at the ends of its bracket.
//!
//! The lowest failing load bounds the capacity from above. From below: for each objective
//! that failed there, the load where the line (in log load, as the search bisects) through
//! the two probes' upper bounds reaches the limit. Latency rises ever faster towards a knee,
//! so that line lies above the curve and reaches the limit early: the end it gives errs low.

use crate::metrics::verdict::Verdict;
use crate::report::model::ProbeOutcome;

/// `[low, high]` of the capacity between the highest passing probe `passed` and the lowest
/// failing one `failed`; an end is `None` when the bracket is open there.
pub fn capacity_interval(
    passed: Option<&ProbeOutcome>,
    failed: Option<&ProbeOutcome>,
) -> [Option<f64>; 2] {
    let (Some(p), Some(f)) = (passed, failed) else {
        return [passed.map(|p| p.load), failed.map(|f| f.load)];
    };
    let low = f
        .objectives
        .iter()
        .filter(|o| o.verdict == Verdict::Fail)
        .filter_map(|o| {
            let at_pass = p.objectives.iter().find(|q| q.objective == o.objective)?;
            let upper_at_pass = at_pass.bounds?.hi?;
            let bounds = o.bounds?;
            let upper_at_fail = bounds.hi.or(bounds.lo)?;
            Some(crossing(
                (p.load, upper_at_pass),
                (f.load, upper_at_fail),
                o.limit,
            ))
        })
        .fold(None, |low: Option<f64>, x| Some(low.map_or(x, |l| l.min(x))));
    [Some(low.unwrap_or(p.load).max(p.load)), Some(f.load)]
}

/// The load where the line through `(load, value)` points `a` and `b`, in log load, reaches
/// `limit`; `a`'s load when it does not rise there.
fn crossing(a: (f64, f64), b: (f64, f64), limit: f64) -> f64 {
    let rise = b.1 - a.1;
    if rise <= 0.0 || a.0 <= 0.0 {
        return a.0;
    }
    let t = ((limit - a.1) / rise).clamp(0.0, 1.0);
    a.0 * (b.0 / a.0).powf(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::verdict::PercentileBounds;
    use crate::report::model::ObjectiveCheck;

    fn probe(load: f64, verdict: Verdict, lo: f64, hi: f64) -> ProbeOutcome {
        ProbeOutcome {
            search: "s".into(),
            load,
            verdict,
            passed: verdict == Verdict::Pass,
            over_saturated: false,
            over_saturated_why: None,
            stopped_early: false,
            objectives: vec![ObjectiveCheck {
                objective: "ttft.p99".into(),
                limit: 0.4,
                value: Some((lo + hi) / 2.0),
                bounds: Some(PercentileBounds {
                    lo: Some(lo),
                    hi: Some(hi),
                    samples: 1000,
                    effective_samples: 1000.0,
                    verdict,
                }),
                verdict,
                passed: verdict == Verdict::Pass,
            }],
        }
    }

    #[test]
    fn the_interval_lies_in_the_bracket_from_the_upper_bounds_crossing() {
        let p = probe(8.0, Verdict::Pass, 0.1, 0.2);
        let f = probe(16.0, Verdict::Fail, 0.5, 0.6);
        // Upper bounds 0.2 → 0.6 reach 0.4 halfway in log load: √(8·16).
        let [low, high] = capacity_interval(Some(&p), Some(&f));
        assert!((low.unwrap() - (8.0f64 * 16.0).sqrt()).abs() < 1e-9);
        assert_eq!(high, Some(16.0));
        assert_eq!(capacity_interval(Some(&p), None), [Some(8.0), None]);
        assert_eq!(capacity_interval(None, Some(&f)), [None, Some(16.0)]);
    }
}
