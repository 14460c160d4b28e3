//! The `check` pass: semantic rules on the typed, expanded plan, all reported together.

mod api;
mod archetypes;
mod load;
mod models;
mod phase;
mod target;
mod workload;

use super::model::*;
use super::schema::Issue;
use super::source::escape;

use phase::check_phases;
use target::check_target;
use workload::check_workload;

/// Every semantic problem of an expanded plan, at pointers into the expanded document.
pub fn check(plan: &Plan) -> Vec<Issue> {
    let mut issues = Vec::new();
    if plan.version != PLAN_VERSION {
        issues.push(
            Issue::new(
                "/version",
                format!("unsupported plan version {}", plan.version),
            )
            .hint(Some(format!("this build reads version {PLAN_VERSION}"))),
        );
    }
    if plan.name.trim().is_empty() {
        issues.push(Issue::new("/name", "the plan name is empty"));
    }
    if plan.targets.is_empty() {
        issues.push(Issue::new("/targets", "no targets: a plan needs at least one").at_key());
    }
    if plan.phases.is_empty() {
        issues.push(Issue::new("/phases", "no phases: a plan needs at least one").at_key());
    }
    if let Some(slo) = &plan.slo {
        super::slo::check_slo("/slo", slo, &mut issues);
    }
    if let Some(history) = &plan.history {
        check_history(history, &mut issues);
    }
    for (name, target) in &plan.targets {
        check_target(&format!("/targets/{}", escape(name)), target, &mut issues);
        models::check_adapters(&format!("/targets/{}", escape(name)), target, &mut issues);
    }
    for (name, workload) in &plan.workloads {
        let p = format!("/workloads/{}", escape(name));
        check_workload(&p, workload, &mut issues);
        models::check_model_mix(&p, workload, &mut issues);
    }
    models::check_mix_targets(plan, &mut issues);
    check_phases(plan, &mut issues);
    api::check_apis(plan, &mut issues);
    issues.extend(super::hooks::timing_issues(plan));
    for (p, phase) in plan.phases.iter().enumerate() {
        if let Some(until) = &phase.until {
            super::until::check_until(&format!("/phases/{p}/until"), until, &mut issues);
        }
        if let Some(until) = phase.search.as_ref().and_then(|s| s.probe.until.as_ref()) {
            let pointer = format!("/phases/{p}/search/probe/until");
            super::until::check_until(&pointer, until, &mut issues);
        }
    }
    issues
}

/// The `history:` section: every watched figure is one a run records.
fn check_history(history: &HistorySettings, issues: &mut Vec<Issue>) {
    use crate::figure::path::FigurePath;
    use crate::plan::diag::explain_figure_path;
    for (i, figure) in history.watch.iter().flatten().enumerate() {
        if figure == "capacity" {
            continue;
        }
        if let Err(e) = figure.parse::<FigurePath>() {
            issues.push(Issue::new(
                format!("/history/watch/{i}"),
                format!(
                    "`{figure}` is not a figure: {}",
                    explain_figure_path(figure, &e, &["capacity"])
                ),
            ));
        }
    }
}
