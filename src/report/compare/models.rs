//! Model mixes in `compare`: each model both sides of a phase served, set side by side as a
//! phase of its own (`phase [model]`), its figures and records that model's alone.

use crate::metrics::{ModelFigures, PhaseSummary};
use crate::report::model::PhaseResult;

/// The views of `base` and `new` for every model both have, in `new`'s order.
pub fn shared_models(base: &PhaseResult, new: &PhaseResult) -> Vec<(PhaseResult, PhaseResult)> {
    new.models
        .iter()
        .filter_map(|n| {
            let b = base.models.iter().find(|b| b.model == n.model)?;
            Some((view(base, b), view(new, n)))
        })
        .collect()
}

/// `phase` as if it had sent only `model`'s requests: that model's counts, rates and figures
/// over the phase's elapsed time, and its records.
fn view(phase: &PhaseResult, model: &ModelFigures) -> PhaseResult {
    let mut view = phase.clone();
    view.header.phase = format!("{} [{}]", phase.header.phase, model.model);
    view.summary = PhaseSummary {
        requests: model.requests,
        success: model.requests - model.errors,
        errors: model.errors,
        elapsed: phase.summary.elapsed,
        request_rate: model.request_rate,
        output_tokens_per_second: model.output_tokens_per_second,
        total_input_tokens: model.total_input_tokens,
        total_output_tokens: model.total_output_tokens,
        figures: model.figures,
        ..PhaseSummary::default()
    };
    view.request_timings
        .retain(|r| r.model.as_deref() == Some(model.model.as_str()));
    view.models = Vec::new();
    view.sessions = None;
    view
}
