//! Where a capacity search's probes can decide: a percentile (or goodput) objective passes
//! only once a probe holds enough samples, so a rate search starts at the lowest rate whose
//! probe holds them, a probe below its `duration`'s reach runs longer (up to
//! `until.max_duration`), and a search no probe in `[min, max]` could decide is refused.

use std::time::Duration;

use super::schema::Issue;
use super::search::{Search, SearchLoad};
use super::slo::Objective;
use crate::figure::Stat;
use crate::probe_samples::samples_to_pass;

/// One objective's need: the fewest samples a probe must hold to pass it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleNeed {
    pub objective: Objective,
    pub samples: u64,
}

impl SampleNeed {
    /// What needs the samples, as a sentence names it: `a p95`, `a 90% goodput`.
    pub fn what(&self) -> String {
        match self.objective {
            Objective::Stat(_, stat, _) => format!("a {}", stat.name()),
            Objective::Goodput(min) => format!("a {}% goodput", min * 100.0),
            Objective::ErrorRate(_) => "the error rate".into(),
        }
    }

    /// The lowest rate at which a probe of `window` holds the samples.
    pub fn rate_for(&self, window: Duration) -> f64 {
        self.samples as f64 / window.as_secs_f64()
    }
}

impl Search {
    /// Each objective that needs samples to pass (percentiles, goodput); the error rate and
    /// `max` limits are judged on their value.
    pub fn sample_needs(&self) -> Vec<SampleNeed> {
        self.objectives()
            .into_iter()
            .filter_map(|objective| {
                let q = match objective {
                    Objective::Stat(_, stat, _) => stat.quantile()?,
                    // A share above `min` passes from the same count as a `min`-quantile.
                    Objective::Goodput(min) => min,
                    Objective::ErrorRate(_) => return None,
                };
                Some(SampleNeed {
                    objective,
                    samples: samples_to_pass(q),
                })
            })
            .collect()
    }

    /// The need every probe must meet to pass: the objective needing the most samples.
    pub fn largest_need(&self) -> Option<SampleNeed> {
        self.sample_needs().into_iter().max_by_key(|n| n.samples)
    }

    /// The longest a probe may run: `until.max_duration` when set, else `duration`.
    pub fn longest_probe(&self) -> Duration {
        self.probe
            .until
            .as_ref()
            .map_or(self.probe.duration.0, |u| {
                u.max_duration.0.max(self.probe.duration.0)
            })
    }

    /// The first load probed: `min`, or for a rate search the lowest whole rate at which
    /// the longest probe holds the samples its objectives need, if that is higher.
    pub fn first_load(&self) -> f64 {
        match (self.load, self.largest_need()) {
            (SearchLoad::Rate, Some(need)) => {
                let reach = need.rate_for(self.longest_probe()).ceil().min(self.max);
                self.min.max(reach)
            }
            _ => self.min,
        }
    }

    /// Why the first probe is above `min`, when it is: `started at 5 req/s: below it a 20s
    /// probe holds fewer than the 99 samples a p95 needs`.
    pub fn start_note(&self) -> Option<String> {
        let (first, why) = self.start_reason()?;
        Some(format!("started at {} req/s: {why}", number(first)))
    }

    /// The first load when it is above `min`, and why.
    pub fn start_reason(&self) -> Option<(f64, String)> {
        let need = self.largest_need()?;
        let first = self.first_load();
        (first > self.min).then(|| {
            let why = format!(
                "below it a {} probe holds fewer than the {} samples {} needs",
                humantime::format_duration(self.longest_probe()),
                need.samples,
                need.what()
            );
            (first, why)
        })
    }

    /// How long the probe at `load` runs: `duration`, or for a rate too low to hold the
    /// samples in it, long enough to hold them, up to the longest probe.
    pub fn probe_duration(&self, load: f64) -> Duration {
        let base = self.probe.duration.0;
        let Some(need) = self
            .largest_need()
            .filter(|_| self.load == SearchLoad::Rate)
        else {
            return base;
        };
        let wanted = Duration::from_secs_f64((need.samples as f64 / load).ceil());
        wanted.clamp(base, self.longest_probe().max(base))
    }
}

/// A rate search whose every load is too low to decide an objective within the longest
/// probe the plan allows: refused at the search (`p` is its pointer), naming the shortest
/// probe, or the percentile, that would work.
pub fn check_decidable(p: &str, s: &Search, issues: &mut Vec<Issue>) {
    if s.load != SearchLoad::Rate || !(s.max.is_finite() && s.max > 0.0) {
        return;
    }
    let longest = s.longest_probe();
    if longest.is_zero() {
        return;
    }
    let holds = (s.max * longest.as_secs_f64()).floor() as u64;
    for need in s.sample_needs().into_iter().filter(|n| n.samples > holds) {
        let shortest = (need.samples as f64 / s.max).ceil();
        let key = if s.probe.until.is_some() {
            format!("`until: {{max_duration: {shortest}s}}`")
        } else {
            format!("`duration: {shortest}s`")
        };
        let mut hint = format!(
            "probes of at least {shortest}s decide it at {} req/s ({key})",
            number(s.max)
        );
        if let Some((stat, samples)) = lower_percentile(need.objective, holds) {
            hint.push_str(&format!(
                ", or ask for a {} (it passes from {samples} samples, which {} probes hold from {} req/s)",
                stat.name(),
                humantime::format_duration(longest),
                number((samples as f64 / longest.as_secs_f64()).ceil())
            ));
        }
        issues.push(
            Issue::new(
                p,
                format!(
                    "no rate in {}–{} req/s can decide `{}`: {} passes from {} samples, and a {} probe holds at most {holds} (at {} req/s)",
                    number(s.min),
                    number(s.max),
                    need.objective.name(),
                    need.what(),
                    need.samples,
                    humantime::format_duration(longest),
                    number(s.max),
                ),
            )
            .hint(Some(hint)),
        );
    }
}

/// The highest percentile below `objective`'s that `holds` samples can pass.
fn lower_percentile(objective: Objective, holds: u64) -> Option<(Stat, u64)> {
    let Objective::Stat(_, stat, _) = objective else {
        return None;
    };
    let q = stat.quantile()?;
    Stat::PERCENTILES
        .into_iter()
        .rev()
        .filter_map(|s| Some((s, s.quantile()?)))
        .filter(|&(_, lower)| lower < q)
        .map(|(s, lower)| (s, samples_to_pass(lower)))
        .find(|&(_, samples)| samples <= holds)
}

/// A load as the search states it: `5`, `12.5`.
fn number(load: f64) -> String {
    let text = format!("{load:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Fraction, HumanDuration, Probe, Slo};

    fn search(min: f64, max: f64, slo: &str, duration: u64) -> Search {
        Search {
            load: SearchLoad::Rate,
            min,
            max,
            slo: serde_json::from_str::<Slo>(slo).unwrap(),
            goodput: None,
            precision: Fraction(0.05),
            probe: Probe {
                duration: HumanDuration(Duration::from_secs(duration)),
                warmup: None,
                until: None,
            },
            max_probes: None,
        }
    }

    #[test]
    fn a_rate_search_starts_where_its_probe_holds_the_samples() {
        let s = search(1.0, 64.0, r#"{"ttft": {"p95": "400ms"}}"#, 20);
        assert_eq!(s.first_load(), 5.0);
        assert_eq!(
            s.start_note().unwrap(),
            "started at 5 req/s: below it a 20s probe holds fewer than the 99 samples a p95 needs"
        );
        assert_eq!(s.probe_duration(5.0), Duration::from_secs(20));
        // `min` above the reach: unchanged, nothing to say.
        let s = search(10.0, 64.0, r#"{"ttft": {"p95": "400ms"}}"#, 20);
        assert_eq!((s.first_load(), s.start_note()), (10.0, None));
    }

    #[test]
    fn max_duration_lets_lower_rates_run_longer() {
        let mut s = search(1.0, 64.0, r#"{"ttft": {"p95": "400ms"}}"#, 20);
        s.probe.until = Some(
            serde_json::from_str(
                r#"{"stable": ["ttft.p95"], "within": 0.05, "max_duration": "50s"}"#,
            )
            .unwrap(),
        );
        assert_eq!(s.first_load(), 2.0);
        assert_eq!(s.probe_duration(2.0), Duration::from_secs(50));
        assert_eq!(s.probe_duration(3.0), Duration::from_secs(33));
        assert_eq!(s.probe_duration(10.0), Duration::from_secs(20));
    }

    #[test]
    fn a_search_no_probe_can_decide_is_refused_with_what_would_work() {
        let s = search(1.0, 64.0, r#"{"ttft": {"p99": "400ms"}}"#, 6);
        let mut issues = Vec::new();
        check_decidable("/phases/0/search", &s, &mut issues);
        assert_eq!(issues.len(), 1);
        let text = format!("{:?}", issues[0]);
        assert!(text.contains("a p99 passes from 505 samples"), "{text}");
        assert!(text.contains("probes of at least 8s"), "{text}");
        assert!(text.contains("ask for a p95"), "{text}");
        let s = search(1.0, 64.0, r#"{"ttft": {"p99": "400ms"}}"#, 8);
        let mut issues = Vec::new();
        check_decidable("/phases/0/search", &s, &mut issues);
        assert!(issues.is_empty(), "{issues:?}");
    }
}
