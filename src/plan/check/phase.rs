//! Checks on the phase list: names, rechecks, references to targets and workloads, bounds,
//! warmups and tolerances.

use std::collections::HashMap;

use super::load::{check_limits, check_load_model};
use crate::plan::diag::did_you_mean;
use crate::plan::model::*;
use crate::plan::schema::Issue;
use crate::plan::tolerance::Tolerance;

pub(super) fn check_phases(plan: &Plan, issues: &mut Vec<Issue>) {
    let first_index = index_names(plan, issues);
    let names: Vec<&str> = plan
        .phases
        .iter()
        .filter_map(|ph| ph.name.as_deref())
        .collect();
    for (i, phase) in plan.phases.iter().enumerate() {
        let p = format!("/phases/{i}");
        if let Some(original) = &phase.recheck {
            if !recheck_is_valid(&p, i, original, &first_index, &names, issues) {
                continue;
            }
        } else if phase.tolerance.is_some() {
            issues.push(
                Issue::new(
                    format!("{p}/tolerance"),
                    "`tolerance` only applies to a recheck",
                )
                .at_key()
                .hint(Some(
                    "add `recheck: <phase>`, or remove the tolerance".into(),
                )),
            );
        }
        check_phase(plan, &p, phase, issues);
        if let Some(other) = &phase.compare_to {
            check_compare_to(&p, phase, other, &names, issues);
        }
    }
}

/// `compare_to` names another phase of the plan.
fn check_compare_to(p: &str, phase: &Phase, other: &str, names: &[&str], issues: &mut Vec<Issue>) {
    if phase.name.as_deref() == Some(other) {
        issues.push(Issue::new(
            format!("{p}/compare_to"),
            "a phase cannot be compared to itself",
        ));
    } else if !names.contains(&other) {
        issues.push(
            Issue::new(
                format!("{p}/compare_to"),
                format!("no phase is named `{other}`"),
            )
            .hint(did_you_mean(other, names.iter().copied())),
        );
    }
}

/// Each phase name's first index; missing, empty and duplicate names are reported.
fn index_names<'a>(plan: &'a Plan, issues: &mut Vec<Issue>) -> HashMap<&'a str, usize> {
    let mut first_index: HashMap<&str, usize> = HashMap::new();
    for (i, phase) in plan.phases.iter().enumerate() {
        let p = format!("/phases/{i}");
        match phase.name.as_deref() {
            None => issues.push(Issue::new(&p, "a phase needs a `name`").hint(Some(
                "names identify phases in the report and in rechecks".into(),
            ))),
            Some(n) if n.trim().is_empty() => {
                issues.push(Issue::new(format!("{p}/name"), "the phase name is empty"))
            }
            Some(n) => {
                if let Some(j) = first_index.get(n) {
                    issues.push(
                        Issue::new(
                            format!("{p}/name"),
                            format!("duplicate phase name `{n}` (also phases[{j}])"),
                        )
                        .hint(Some(
                            "phase names must be unique after matrix expansion".into(),
                        )),
                    );
                } else {
                    first_index.insert(n, i);
                }
            }
        }
    }
    first_index
}

/// A recheck must name an earlier phase; false (reported) when it does not, and the phase's
/// own checks are skipped.
fn recheck_is_valid(
    p: &str,
    i: usize,
    original: &str,
    first_index: &HashMap<&str, usize>,
    names: &[&str],
    issues: &mut Vec<Issue>,
) -> bool {
    match first_index.get(original) {
        Some(j) if *j < i => true,
        Some(j) if *j == i => {
            issues.push(Issue::new(
                format!("{p}/recheck"),
                "a phase cannot recheck itself",
            ));
            false
        }
        Some(j) => {
            issues.push(
                Issue::new(
                    format!("{p}/recheck"),
                    format!("recheck of `{original}` comes before it (phases[{j}])"),
                )
                .hint(Some(format!("move this recheck after `{original}`"))),
            );
            false
        }
        None => {
            issues.push(
                Issue::new(
                    format!("{p}/recheck"),
                    format!("no phase named `{original}` to recheck"),
                )
                .hint(did_you_mean(original, names.iter().copied())),
            );
            false
        }
    }
}

/// The phase's target and workload exist.
fn check_references(plan: &Plan, p: &str, phase: &Phase, issues: &mut Vec<Issue>) {
    let names = |m: Vec<&str>| m.join("`, `");
    match &phase.target {
        None => {
            let hint = match plan.targets.keys().collect::<Vec<_>>().as_slice() {
                [only] => format!("add `target: {only}` or set `defaults.target`"),
                _ => "add `target:` or set `defaults.target`".to_string(),
            };
            issues.push(Issue::new(p, "the phase has no target").hint(Some(hint)));
        }
        Some(t) if !plan.targets.contains_key(t) => {
            let known: Vec<&str> = plan.targets.keys().map(String::as_str).collect();
            let hint = did_you_mean(t, known.iter().copied())
                .unwrap_or_else(|| format!("targets are `{}`", names(known.clone())));
            issues.push(
                Issue::new(format!("{p}/target"), format!("no target named `{t}`"))
                    .hint(Some(hint)),
            );
        }
        Some(_) => {}
    }
    match &phase.workload {
        None if phase.mix.is_some() => {}
        None => issues.push(
            Issue::new(p, "the phase has no workload")
                .hint(Some("add `workload:` or set `defaults.workload`".into())),
        ),
        Some(w) if !plan.workloads.contains_key(w) => {
            let known: Vec<&str> = plan.workloads.keys().map(String::as_str).collect();
            let hint = did_you_mean(w, known.iter().copied())
                .unwrap_or_else(|| format!("workloads are `{}`", names(known.clone())));
            issues.push(
                Issue::new(format!("{p}/workload"), format!("no workload named `{w}`"))
                    .hint(Some(hint)),
            );
        }
        Some(_) => {}
    }
}

fn check_phase(plan: &Plan, p: &str, phase: &Phase, issues: &mut Vec<Issue>) {
    check_limits(p, phase, issues);
    check_references(plan, p, phase, issues);
    super::archetypes::check_phase_mix(plan, p, phase, issues);
    let replays_trace = phase
        .workload
        .as_ref()
        .and_then(|w| plan.workloads.get(w))
        .is_some_and(|w| w.trace.is_some());
    if replays_trace {
        // A trace sets its own arrival times and, by default, its own length (one pass).
        if phase.concurrency.is_some() || phase.rate.is_some() {
            issues.push(
                Issue::new(p, "a trace replay takes its arrival times from the trace").hint(Some(
                    "remove `concurrency`/`rate`; scale the trace with `trace.time_scale`".into(),
                )),
            );
        }
    } else if let Some(search) = &phase.search {
        crate::plan::search::check_search(p, phase, issues);
        crate::plan::decidable::check_decidable(&format!("{p}/search"), search, issues);
    } else {
        let sessions = phase
            .workload
            .as_ref()
            .and_then(|w| plan.workloads.get(w))
            .is_some_and(|w| w.session.is_some());
        let completions = phase
            .target
            .as_ref()
            .and_then(|t| plan.targets.get(t))
            .is_some_and(|t| t.api == Api::Completions);
        if sessions && completions {
            issues.push(
                Issue::new(p, "sessions carry chat history: they need a chat target")
                    .hint(Some("set the target's `api: chat`".into())),
            );
        }
        check_load_model(p, phase, issues);
        if phase.duration.is_none() && phase.requests.is_none() && phase.until.is_none() {
            issues.push(
                Issue::new(p, "the phase has no bound").hint(Some(
                    "add `duration` (e.g. 60s) and/or `requests` (a count), or set them in `defaults`"
                        .into(),
                )),
            );
        }
    }
    if phase.duration.is_some_and(|d| d.0.is_zero()) {
        issues.push(Issue::new(
            format!("{p}/duration"),
            "must be longer than zero",
        ));
    }
    if phase.requests == Some(0) {
        issues.push(Issue::new(
            format!("{p}/requests"),
            "must be at least 1, found 0",
        ));
    }
    if let Some(w) = &phase.warmup {
        check_warmup(p, w, issues);
    }
    if let Some(t) = &phase.tolerance {
        check_tolerance(&format!("{p}/tolerance"), t, issues);
    }
    if let Some(on) = &phase.on_target_down {
        on.check(p, issues);
    }
    if phase.tags.iter().any(|t| t.trim().is_empty()) {
        issues.push(Issue::new(format!("{p}/tags"), "tags must not be empty"));
    }
}

/// A warmup is bounded by time or by requests.
fn check_warmup(p: &str, w: &Warmup, issues: &mut Vec<Issue>) {
    match (&w.duration, &w.requests) {
        (None, None) => issues.push(
            Issue::new(
                format!("{p}/warmup"),
                "a warmup needs `duration` or `requests`",
            )
            .hint(Some(
                "for example `warmup: {duration: 10s}`, or remove it".into(),
            )),
        ),
        (Some(_), Some(_)) => issues.push(
            Issue::new(
                format!("{p}/warmup"),
                "a warmup takes `duration` or `requests`, not both",
            )
            .at_key(),
        ),
        (Some(_), None) | (None, Some(_)) => {}
    }
}

fn check_tolerance(p: &str, t: &Tolerance, issues: &mut Vec<Issue>) {
    for (key, v) in t.entries() {
        if !(v.is_finite() && v >= 0.0) {
            issues.push(Issue::new(
                format!("{p}/{key}"),
                format!("a tolerance must be zero or more, found {v}"),
            ));
        }
    }
}
