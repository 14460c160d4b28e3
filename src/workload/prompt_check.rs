//! Planned prompt size against what the server reported: the one check, printed as a warning
//! during a run and stored in every phase of the report.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Planned prompt size against what the server reported.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct PromptTokenCheck {
    /// Mean planned prompt tokens per request.
    pub planned_mean: Option<f64>,
    /// Mean `usage.prompt_tokens` per request.
    pub actual_mean: Option<f64>,
    /// `(actual − planned) / planned`.
    pub relative_error: Option<f64>,
    pub tolerance: f64,
    /// True when the relative error exceeds the tolerance.
    pub warning: bool,
}

impl PromptTokenCheck {
    /// From each request's planned and served prompt tokens, either of which may be unknown.
    /// The means and the error cover the requests with both; `actual_mean` falls back to
    /// every served count when no request has both.
    pub fn from_requests(
        requests: impl IntoIterator<Item = (Option<u64>, Option<u64>)>,
        tolerance: f64,
    ) -> Self {
        let mut tally = PromptTally::default();
        for (planned, actual) in requests {
            tally.add(planned, actual);
        }
        tally.check(tolerance)
    }

    /// From `(planned, served)` pairs; `None` when there is nothing to compare.
    pub fn new(pairs: impl IntoIterator<Item = (u64, u64)>, tolerance: f64) -> Option<Self> {
        let check = Self::from_requests(
            pairs.into_iter().map(|(p, s)| (Some(p), Some(s))),
            tolerance,
        );
        check.relative_error.is_some().then_some(check)
    }

    pub fn within_tolerance(&self) -> bool {
        !self.warning
    }

    /// The message to print when the gap is beyond tolerance (`tokenizer` names how the
    /// prompts were counted).
    pub fn warning(&self, tokenizer: &str) -> Option<String> {
        let (Some(planned), Some(served), Some(gap)) =
            (self.planned_mean, self.actual_mean, self.relative_error)
        else {
            return None;
        };
        if self.within_tolerance() {
            return None;
        }
        Some(format!(
            "prompts missed their planned size: planned {planned:.1} prompt tokens per request, \
             the server reported {served:.1} ({:+.1}%, tolerance {:.1}%); counted with \
             {tokenizer}: set the workload's `tokenizer` to the model's tokenizer.json or \
             `source: server`",
            gap * 100.0,
            self.tolerance * 100.0
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_beyond_tolerance() {
        // Seed 000: 4096 planned, 2960 served.
        let check = PromptTokenCheck::new([(4096, 2960), (4096, 2960)], 0.02).expect("pairs");
        assert!(!check.within_tolerance());
        assert!(check.warning);
        assert!((check.relative_error.unwrap() - (2960.0 - 4096.0) / 4096.0).abs() < 1e-12);
        let warning = check.warning("built-in BPE").expect("warning");
        assert!(warning.contains("planned 4096.0"), "{warning}");
        assert!(warning.contains("reported 2960.0 (-27.7%"), "{warning}");
        let close = PromptTokenCheck::new([(1000, 1015)], 0.02).expect("pairs");
        assert!(close.within_tolerance());
        assert_eq!(close.warning("x"), None);
        assert_eq!(PromptTokenCheck::new([], 0.02), None);
    }

    #[test]
    fn served_counts_without_a_plan_still_give_the_mean() {
        let check = PromptTokenCheck::from_requests([(None, Some(10)), (None, Some(20))], 0.1);
        assert_eq!(check.actual_mean, Some(15.0));
        assert_eq!(check.planned_mean, None);
        assert!(!check.warning);
        let exact = PromptTokenCheck::from_requests([(Some(538), Some(538))], 0.02);
        assert_eq!(exact.relative_error, Some(0.0));
        assert!(!exact.warning);
    }
}

/// Running sums behind a [`PromptTokenCheck`], so a phase too long to keep can still state it.
#[derive(Debug, Clone, Default)]
pub struct PromptTally {
    paired: u64,
    paired_planned: f64,
    paired_served: f64,
    served: u64,
    served_sum: f64,
}

impl PromptTally {
    pub fn add(&mut self, planned: Option<u64>, actual: Option<u64>) {
        let Some(actual) = actual else { return };
        self.served += 1;
        self.served_sum += actual as f64;
        if let Some(planned) = planned {
            self.paired += 1;
            self.paired_planned += planned as f64;
            self.paired_served += actual as f64;
        }
    }

    /// The means and the error cover the requests with both counts; `actual_mean` falls back
    /// to every served count when no request has both.
    pub fn check(&self, tolerance: f64) -> PromptTokenCheck {
        let mean = |sum: f64, n: u64| (n > 0).then(|| sum / n as f64);
        let planned_mean = mean(self.paired_planned, self.paired);
        let paired_served = mean(self.paired_served, self.paired);
        let relative_error = match (planned_mean, paired_served) {
            (Some(planned), Some(served)) if planned > 0.0 => Some((served - planned) / planned),
            _ => None,
        };
        PromptTokenCheck {
            planned_mean,
            actual_mean: paired_served.or_else(|| mean(self.served_sum, self.served)),
            relative_error,
            tolerance,
            warning: relative_error.is_some_and(|e| e.abs() > tolerance),
        }
    }
}
