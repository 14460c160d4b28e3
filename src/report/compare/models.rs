//! Mixes in `compare`: each model (each archetype) both sides of a phase sent, set side by
//! side as a phase of its own (`phase [model]`, `phase {archetype}`), its figures and
//! records that group's alone.

use crate::client::RequestRecord;
use crate::metrics::{MixFigures, PhaseSummary};
use crate::report::model::PhaseResult;

/// The views of `base` and `new` for every model both have, in `new`'s order.
pub fn shared_models(base: &PhaseResult, new: &PhaseResult) -> Vec<(PhaseResult, PhaseResult)> {
    new.models
        .iter()
        .filter_map(|n| {
            let b = base.models.iter().find(|b| b.model == n.model)?;
            let label = format!("[{}]", n.model);
            let of = |r: &RequestRecord| r.model.as_deref() == Some(n.model.as_str());
            Some((view(base, &b.of, &label, of), view(new, &n.of, &label, of)))
        })
        .collect()
}

/// The views of `base` and `new` for every archetype both have, in `new`'s order.
pub fn shared_archetypes(base: &PhaseResult, new: &PhaseResult) -> Vec<(PhaseResult, PhaseResult)> {
    new.archetypes
        .iter()
        .filter_map(|n| {
            let b = base
                .archetypes
                .iter()
                .find(|b| b.archetype == n.archetype)?;
            let label = format!("{{{}}}", n.archetype);
            let of = |r: &RequestRecord| r.archetype.as_deref() == Some(n.archetype.as_str());
            Some((view(base, &b.of, &label, of), view(new, &n.of, &label, of)))
        })
        .collect()
}

/// `phase` as if it had sent only one group's requests (`of` picks its records): that
/// group's counts, rates, goodput and figures over the phase's elapsed time, and its
/// records.
fn view(
    phase: &PhaseResult,
    group: &MixFigures,
    label: &str,
    of: impl Fn(&RequestRecord) -> bool,
) -> PhaseResult {
    let mut view = phase.clone();
    view.header.phase = format!("{} {label}", phase.header.phase);
    view.summary = PhaseSummary {
        requests: group.requests,
        success: group.requests - group.errors,
        errors: group.errors,
        elapsed: phase.summary.elapsed,
        request_rate: group.request_rate,
        output_tokens_per_second: group.output_tokens_per_second,
        total_input_tokens: group.total_input_tokens,
        total_output_tokens: group.total_output_tokens,
        goodput: group.goodput.clone(),
        figures: group.figures,
        ..PhaseSummary::default()
    };
    view.request_timings.retain(of);
    view.models = Vec::new();
    view.archetypes = Vec::new();
    view.slo = group.slo.clone();
    view.sessions = None;
    view
}
