//! Checks on a phase's load model and the limits no real plan reaches (`plan::limits`).

use crate::plan::limits::{MAX_CONCURRENCY, MAX_PHASE_DURATION_S, MAX_RPS};
use crate::plan::model::*;
use crate::plan::schema::Issue;

/// Values that parse but cannot be meant: a run of months, a million connections.
pub(super) fn check_limits(p: &str, phase: &Phase, issues: &mut Vec<Issue>) {
    let durations = [
        ("duration", phase.duration.as_ref()),
        (
            "warmup/duration",
            phase.warmup.as_ref().and_then(|w| w.duration.as_ref()),
        ),
        ("cooldown", phase.cooldown.as_ref()),
        ("drain_timeout", phase.drain_timeout.as_ref()),
        (
            "until/max_duration",
            phase.until.as_ref().map(|u| &u.max_duration),
        ),
    ];
    for (key, d) in durations {
        if let Some(d) = d
            && d.0.as_secs() > MAX_PHASE_DURATION_S
        {
            issues.push(
                Issue::new(
                    format!("{p}/{key}"),
                    format!(
                        "{:.1} days is longer than the limit of 30 days",
                        d.0.as_secs_f64() / 86_400.0
                    ),
                )
                .hint(Some("split a long soak into several phases".into())),
            );
        }
    }
    let concurrency = [
        ("concurrency", phase.concurrency),
        (
            "rate/max_concurrency",
            phase.rate.as_ref().and_then(|r| r.max_concurrency),
        ),
    ];
    for (key, c) in concurrency {
        if let Some(c) = c
            && c > MAX_CONCURRENCY
        {
            issues.push(Issue::new(
                format!("{p}/{key}"),
                format!("{c} is more than the limit of {MAX_CONCURRENCY} concurrent requests"),
            ));
        }
    }
    if let Some(rate) = &phase.rate
        && rate.rps.is_finite()
        && rate.rps > MAX_RPS
    {
        issues.push(Issue::new(
            format!("{p}/rate/rps"),
            format!(
                "{} is more than the limit of {MAX_RPS} requests per second",
                rate.rps
            ),
        ));
    }
}

pub(super) fn check_load_model(p: &str, phase: &Phase, issues: &mut Vec<Issue>) {
    match (&phase.concurrency, &phase.rate) {
        (Some(_), Some(_)) => issues.push(
            Issue::new(
                p,
                "the phase sets both `concurrency` (closed loop) and `rate` (open loop)",
            )
            .hint(Some(
                "keep one load model; cap an open loop with `rate.max_concurrency`".into(),
            )),
        ),
        (None, None) => issues.push(Issue::new(p, "the phase has no load model").hint(Some(
            "add `concurrency: N` (closed loop) or `rate: {rps: R}` (open loop)".into(),
        ))),
        (Some(c), None) => {
            if *c == 0 {
                issues.push(Issue::new(
                    format!("{p}/concurrency"),
                    "must be at least 1, found 0",
                ));
            }
        }
        (None, Some(rate)) => {
            if !(rate.rps.is_finite() && rate.rps > 0.0) {
                issues.push(Issue::new(
                    format!("{p}/rate/rps"),
                    format!("must be greater than zero, found {}", rate.rps),
                ));
            }
            match (rate.arrival, rate.burstiness) {
                (Arrival::Gamma, Some(b)) if !(b.is_finite() && b > 0.0) => {
                    issues.push(Issue::new(
                        format!("{p}/rate/burstiness"),
                        format!("must be greater than zero, found {b}"),
                    ))
                }
                (Arrival::Constant | Arrival::Poisson, Some(_)) => issues.push(
                    Issue::new(
                        format!("{p}/rate/burstiness"),
                        "`burstiness` only applies to `arrival: gamma`",
                    )
                    .at_key(),
                ),
                (Arrival::Gamma, _) | (Arrival::Constant | Arrival::Poisson, None) => {}
            }
            if rate.max_concurrency == Some(0) {
                issues.push(Issue::new(
                    format!("{p}/rate/max_concurrency"),
                    "must be at least 1, found 0",
                ));
            }
        }
    }
}
