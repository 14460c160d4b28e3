//! Checks on a phase's `mix` of archetypes: shares that sum to 100%, workloads that exist,
//! no `workload` beside it, and archetypes a mix can draw from request by request.

use super::models::{MixKind, check_shares};
use crate::plan::diag::did_you_mean_or_list;
use crate::plan::model::*;
use crate::plan::schema::Issue;
use crate::plan::source::escape;

/// A phase's `mix`, at `p` (the phase's pointer).
pub(super) fn check_phase_mix(plan: &Plan, p: &str, phase: &Phase, issues: &mut Vec<Issue>) {
    let Some(mix) = &phase.mix else {
        return;
    };
    let at = format!("{p}/mix");
    if phase.workload.is_some() {
        issues.push(
            Issue::new(&at, "a phase takes `workload` or `mix`, not both")
                .at_key()
                .hint(Some(
                    "remove `workload:`; each archetype of the mix names its workload".into(),
                )),
        );
    }
    let kind = MixKind {
        what: "workload",
        example: "for example `mix: {short-chat: 70%, long-rag: 30%}`",
        absent: "leave out a workload that gets no requests",
    };
    check_shares(&at, mix, &kind, issues);
    let known: Vec<&str> = plan.workloads.keys().map(String::as_str).collect();
    let mut lead: Option<(&str, &Workload)> = None;
    for name in mix.names() {
        let here = format!("{at}/{}", escape(name));
        let Some(workload) = plan.workloads.get(name) else {
            issues.push(
                Issue::new(&here, format!("no workload named `{name}`"))
                    .at_key()
                    .hint(Some(did_you_mean_or_list(name, &known))),
            );
            continue;
        };
        if let Some(why) = undrawable(workload) {
            let message = format!("`{name}` {why}: a mix draws its requests one by one");
            issues.push(Issue::new(&here, message).at_key().hint(Some(
                "mix single-request workloads; run this one in a phase of its own".into(),
            )));
            continue;
        }
        match lead {
            None => lead = Some((name, workload)),
            Some((first, first_workload)) => {
                if let Some(setting) = differing_request_setting(first_workload, workload) {
                    issues.push(
                        Issue::new(
                            &here,
                            format!(
                                "`{name}` sets `{setting}` unlike `{first}`: a mix's requests \
                                 share one set of request settings"
                            ),
                        )
                        .at_key()
                        .hint(Some(format!(
                            "give every archetype of the mix the same `{setting}` (prompt \
                             lengths, images and models may differ)"
                        ))),
                    );
                }
            }
        }
    }
}

/// Why a workload cannot be one archetype among others, if it cannot.
fn undrawable(w: &Workload) -> Option<&'static str> {
    if w.trace.is_some() {
        Some("replays a trace with its own arrival times")
    } else if w.session.is_some() {
        Some("runs sessions, whose turns follow one another")
    } else if w.conversation.is_some() {
        Some("runs conversations, whose turns follow one another")
    } else {
        None
    }
}

/// The first request-level setting (sent with every request of the phase, not part of a
/// prompt) on which two archetypes differ.
fn differing_request_setting(a: &Workload, b: &Workload) -> Option<&'static str> {
    let same = [
        ("body", a.body == b.body),
        ("temperature", a.temperature == b.temperature),
        ("ignore_eos", a.ignore_eos == b.ignore_eos),
        ("min_tokens", a.min_tokens == b.min_tokens),
        ("tools", a.tools == b.tools),
        ("cancel", a.cancel == b.cancel),
        ("batch", a.batch == b.batch),
        ("tokenizer", a.tokenizer == b.tokenizer),
        ("salt", a.salt == b.salt),
    ];
    same.into_iter().find(|(_, same)| !same).map(|(key, _)| key)
}
