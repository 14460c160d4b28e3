//! Capacity search: a phase that probes loads until it finds the most the target sustains
//! within its objectives. Types and their checks; the search loop is `runner::search`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema::Issue;
use super::slo::{Objective, Slo, check_slo};
use super::{Fraction, HumanDuration, Phase, Warmup};
use crate::figure::Stat;

/// `search:` on a phase, in place of `concurrency` or `rate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Search {
    /// What the probes vary: `concurrency` (closed loop) or `rate` (open loop, req/s).
    pub load: SearchLoad,
    /// Lowest load probed (the first probe).
    pub min: f64,
    /// Highest load probed.
    pub max: f64,
    /// Objectives every probe must meet to pass.
    pub slo: Slo,
    /// At least this share of requests must meet every per-request limit of `slo` (each
    /// figure's loosest limit); the `max` limits then serve as those per-request limits
    /// instead of objectives of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<GoodputObjective>,
    /// Stop when the bracket's upper end is within this fraction of its lower end (0.05 = 5%).
    #[serde(default = "default_precision")]
    pub precision: Fraction,
    pub probe: Probe,
    /// Most probes to run; by default the most the search can need.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_probes: Option<u32>,
}

/// `goodput: {min: 90%}`: the share of requests within every per-request limit a probe needs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoodputObjective {
    /// Smallest share of requests (successful and within every per-request limit), between 0
    /// and 1 exclusive (`90%` or `0.9`); every request is `max` in `slo`.
    pub min: Fraction,
}

fn default_precision() -> Fraction {
    Fraction(0.05)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchLoad {
    Rate,
    Concurrency,
}

/// How each probe runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// How long a probe runs; a rate search runs a probe longer where this is too short to
    /// hold the samples its objectives need, up to `until.max_duration`.
    pub duration: HumanDuration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Warmup>,
    /// End a probe early once its estimates are stable; `max_duration` is the longest a probe
    /// may run when it needs more samples than `duration` holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<super::until::Until>,
}

impl Search {
    /// What a probe is judged on: the `slo`'s objectives and, with `goodput`, the share of
    /// requests within the per-request limits in place of the `max` limits.
    pub fn objectives(&self) -> Vec<Objective> {
        let mut objectives = self.slo.objectives();
        if let Some(goodput) = self.goodput {
            objectives.retain(|o| !matches!(o, Objective::Stat(_, Stat::Max, _)));
            objectives.push(Objective::Goodput(goodput.min.0));
        }
        objectives
    }

    /// The most probes the search runs: doubling from the first load to `max`, then bisecting the last
    /// doubling (a ratio of 2) geometrically down to `precision`; capped by `max_probes`.
    pub fn worst_case_probes(&self) -> u32 {
        let ratio = (self.max / self.first_load()).max(1.0);
        let doublings = ratio.log2().ceil().max(0.0) as u32 + 1;
        let halvings = (2f64.ln() / self.precision.0.ln_1p())
            .log2()
            .ceil()
            .max(0.0) as u32;
        let bound = doublings + halvings;
        self.max_probes.map_or(bound, |m| m.min(bound))
    }
}

/// Problems with a search phase, at `p` (the phase's path).
pub fn check_search(p: &str, phase: &Phase, issues: &mut Vec<Issue>) {
    let Some(s) = &phase.search else { return };
    let at = |field: &str| format!("{p}/search/{field}");
    if phase.concurrency.is_some() || phase.rate.is_some() {
        issues.push(Issue::new(p, "a search phase sets its own load").hint(Some(
            "remove `concurrency`/`rate`; `search.load` names what varies".into(),
        )));
    }
    if phase.recheck.is_some() {
        issues.push(Issue::new(p, "a recheck cannot search"));
    }
    if !phase.before.is_empty() || !phase.after.is_empty() || !phase.during.is_empty() {
        issues.push(Issue::new(
            p,
            "a search phase takes no `before`/`during`/`after` hooks",
        ));
    }
    if !(s.min.is_finite() && s.min > 0.0) {
        issues.push(Issue::new(
            at("min"),
            format!("must be greater than zero, found {}", s.min),
        ));
    }
    if !(s.max.is_finite() && s.max >= s.min) {
        issues.push(Issue::new(
            at("max"),
            format!("must be at least `min`, found {}", s.max),
        ));
    }
    if s.load == SearchLoad::Concurrency && (s.min.fract() != 0.0 || s.max.fract() != 0.0) {
        issues.push(Issue::new(
            at("min"),
            "a concurrency search needs whole `min` and `max`",
        ));
    }
    let precision = s.precision.0;
    if !(precision.is_finite() && precision > 0.0 && precision < 1.0) {
        issues.push(Issue::new(
            at("precision"),
            format!("must be between 0 and 1 (0.05 = 5%), found {precision}"),
        ));
    }
    check_slo(&at("slo"), &s.slo, issues);
    if let Some(goodput) = s.goodput {
        let min = goodput.min.0;
        if !(min.is_finite() && min > 0.0 && min < 1.0) {
            issues.push(
                Issue::new(
                    at("goodput/min"),
                    format!("must be between 0 and 1, both excluded (0.9 = 90%), found {min}"),
                )
                .hint((min >= 1.0).then(|| {
                    "every request within a limit is `max` in `slo`, without `goodput`".into()
                })),
            );
        }
        if s.slo.request_limits().is_empty() {
            issues.push(
                Issue::new(at("goodput"), "goodput needs a per-request limit in `slo`").hint(Some(
                    "set e.g. `slo: {e2e: {max: 2s}}`: the limit each request must meet".into(),
                )),
            );
        }
    }
    if s.objectives().is_empty() {
        issues.push(
            Issue::new(at("slo"), "the search has no objective").hint(Some(
                "set e.g. `ttft: {p99: 2s}` or `error_rate: 0.01`".into(),
            )),
        );
    }
    if s.probe.duration.0.is_zero() {
        issues.push(Issue::new(at("probe/duration"), "must be longer than zero"));
    }
}
