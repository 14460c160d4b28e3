//! Checks on model mixes and simulated adapters: shares that sum to 100%, one model per
//! request, and names a simulator target serves.

use crate::plan::diag::did_you_mean_or_list;
use crate::plan::model::*;
use crate::plan::model_mix::{ModelMix, SUM_TOLERANCE};
use crate::plan::schema::Issue;
use crate::plan::source::escape;
use crate::sim::SimConfig;

/// A workload's `models`: at least one name, each share above 0 and at most 100%, the
/// shares summing to 100%, and no `body.model` beside it.
pub(super) fn check_model_mix(p: &str, w: &Workload, issues: &mut Vec<Issue>) {
    let Some(mix) = &w.models else {
        return;
    };
    let kind = MixKind {
        what: "model",
        example: "for example `models: {base: 60%, adapter-a: 40%}`",
        absent: "leave out a model that gets no requests",
    };
    check_shares(&format!("{p}/models"), mix, &kind, issues);
    if w.body.contains_key("model") {
        issues.push(
            Issue::new(
                format!("{p}/body/model"),
                "`models` names each request's model; a `model` in the body would fight it",
            )
            .at_key(),
        );
    }
}

/// What a mix's names are, for its messages.
pub(super) struct MixKind {
    /// `model`, `workload`.
    pub what: &'static str,
    /// A hint for an empty mix.
    pub example: &'static str,
    /// How to give a name no requests.
    pub absent: &'static str,
}

/// A mix at `at`: at least one name, each share above 0 and at most 100%, the shares
/// summing to 100%. False when the mix is refused.
pub(super) fn check_shares(
    at: &str,
    mix: &ModelMix,
    kind: &MixKind,
    issues: &mut Vec<Issue>,
) -> bool {
    let before = issues.len();
    if mix.0.is_empty() {
        let message = format!("lists no {}", kind.what);
        issues.push(
            Issue::new(at, message)
                .at_key()
                .hint(Some(kind.example.into())),
        );
        return false;
    }
    let mut shares_valid = true;
    for (name, weight) in &mix.0 {
        let here = format!("{at}/{}", escape(name));
        if name.trim().is_empty() {
            let message = format!("a {} name must not be empty", kind.what);
            issues.push(Issue::new(&here, message).at_key());
        }
        if !(weight.0.is_finite() && weight.0 > 0.0 && weight.0 <= 1.0) {
            shares_valid = false;
            issues.push(
                Issue::new(
                    here,
                    format!("a share must be above 0% and at most 100%, found {weight}"),
                )
                .hint(Some(format!(
                    "write a percentage (`30%`) or a fraction (`0.3`); {}",
                    kind.absent
                ))),
            );
        }
    }
    let total = mix.total();
    if shares_valid && (total - 1.0).abs() > SUM_TOLERANCE {
        issues.push(
            Issue::new(
                at,
                format!("the shares sum to {}, not 100%", percent(total)),
            )
            .at_key()
            .hint(Some(format!(
                "the shares are {}",
                mix.0
                    .iter()
                    .map(|(name, w)| format!("{name} {}", percent(w.0)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        );
    }
    issues.len() == before
}

/// `57.5%`, without a float's noise.
fn percent(fraction: f64) -> String {
    let rounded = (fraction * 1e4).round() / 1e2;
    format!("{rounded}%")
}

/// Every name of a mix that a phase sends to a simulator target must be served by it: its
/// model or one of its adapters (unless it accepts any model). A real server's refusals
/// show as that model's errors in the report.
pub(super) fn check_mix_targets(plan: &Plan, issues: &mut Vec<Issue>) {
    let mut reported = std::collections::BTreeSet::new();
    let phases = plan.phases.iter().flat_map(|phase| {
        let mixed = phase
            .mix
            .iter()
            .flat_map(|mix| mix.names().map(str::to_string));
        let names = phase.workload.iter().cloned().chain(mixed);
        names.map(move |name| (phase, name))
    });
    for (phase, workload_name) in phases {
        let workload_name = &workload_name;
        let Some(target_name) = &phase.target else {
            continue;
        };
        let (Some(target), Some(workload)) = (
            plan.targets.get(target_name),
            plan.workloads.get(workload_name),
        ) else {
            continue;
        };
        let (Some(sim), Some(mix)) = (&target.simulator, &workload.models) else {
            continue;
        };
        if sim.accept_any_model == Some(true) {
            continue;
        }
        let served = served_names(target, sim);
        for name in mix.names() {
            if served.iter().any(|s| s == name)
                || !reported.insert((workload_name.clone(), name.to_string()))
            {
                continue;
            }
            let names: Vec<&str> = served.iter().map(String::as_str).collect();
            issues.push(
                Issue::new(
                    format!(
                        "/workloads/{}/models/{}",
                        escape(workload_name),
                        escape(name)
                    ),
                    format!(
                        "the simulator target `{target_name}` does not serve `{name}`: it \
                         would answer 404 to every request for it"
                    ),
                )
                .at_key()
                .hint(Some(format!(
                    "{} (or add it to the simulator's `adapters.names`)",
                    did_you_mean_or_list(name, &names)
                ))),
            );
        }
    }
}

/// The names a simulator target serves: its model, then its adapters.
fn served_names(target: &Target, sim: &SimConfig) -> Vec<String> {
    let base = sim
        .model
        .clone()
        .or_else(|| target.model.clone())
        .unwrap_or_else(|| crate::sim::DEFAULT_MODEL.to_string());
    let adapters = sim.adapters.iter().flat_map(|a| a.names.iter().cloned());
    std::iter::once(base).chain(adapters).collect()
}

/// A simulator's `adapters`: named, distinct, none named like the base model, and at least
/// one resident at a time.
pub(super) fn check_adapters(p: &str, target: &Target, issues: &mut Vec<Issue>) {
    let Some(sim) = &target.simulator else {
        return;
    };
    let Some(adapters) = &sim.adapters else {
        return;
    };
    let at = format!("{p}/simulator/adapters");
    let served = served_names(target, sim);
    let base = &served[0];
    for (i, name) in adapters.names.iter().enumerate() {
        let here = format!("{at}/names/{i}");
        if name.trim().is_empty() {
            issues.push(Issue::new(here, "an adapter name must not be empty"));
        } else if name == base {
            issues.push(Issue::new(
                here,
                format!("`{name}` is the base model's name; an adapter needs its own"),
            ));
        } else if adapters.names[..i].contains(name) {
            issues.push(Issue::new(here, format!("`{name}` is listed twice")));
        }
    }
    if adapters.max_resident == Some(0) {
        issues.push(Issue::new(
            format!("{at}/max_resident"),
            "at least one adapter must fit (vLLM's `--max-loras` is at least 1)",
        ));
    }
}
