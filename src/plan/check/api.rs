//! Checks on what a phase's API can carry: embeddings and rerank requests encode their
//! inputs and generate nothing, so generation settings there are mistakes, not no-ops.

use std::collections::BTreeSet;

use super::escape;
use crate::plan::model::*;
use crate::plan::schema::Issue;

/// Body fields that only mean something to a generating API.
const GENERATION_BODY_KEYS: [&str; 9] = [
    "max_tokens",
    "max_completion_tokens",
    "stream",
    "stream_options",
    "temperature",
    "ignore_eos",
    "min_tokens",
    "reasoning_effort",
    "chat_template_kwargs",
];

pub(super) fn check_apis(plan: &Plan, issues: &mut Vec<Issue>) {
    // Each (target, workload) pair once, however many phases use it.
    let mut pairs = BTreeSet::new();
    for phase in &plan.phases {
        if let (Some(t), Some(w)) = (&phase.target, &phase.workload)
            && plan.targets.contains_key(t)
            && plan.workloads.contains_key(w)
        {
            pairs.insert((t.as_str(), w.as_str()));
        }
    }
    let mut encoding_phases = false;
    let (mut targets_seen, mut workloads_seen) = (BTreeSet::new(), BTreeSet::new());
    for (t, w) in pairs {
        let api = plan.targets[t].api;
        let workload = &plan.workloads[w];
        let p = format!("/workloads/{}", escape(w));
        check_chat_only(&p, t, api, workload, issues);
        check_response_format_api(&p, t, api, workload, issues);
        let target_body = format!("/targets/{}/body", escape(t));
        if typed_events_api(api).is_some() {
            if workloads_seen.insert(w) {
                check_typed_events(&p, t, api, workload, issues);
            }
            if targets_seen.insert(t) {
                check_typed_events_body(&target_body, api, &plan.targets[t].body, issues);
            }
        }
        if api.generates() {
            if workload.batch.is_some() {
                issues.push(
                    Issue::new(
                        format!("{p}/batch"),
                        format!(
                            "`batch` applies to `api: embeddings` or `api: rerank`; target `{t}` \
                             uses `api: {}`",
                            api_name(api)
                        ),
                    )
                    .at_key(),
                );
            }
            continue;
        }
        encoding_phases = true;
        check_encoding_pair(&p, t, api, workload, issues);
        if workloads_seen.insert(w) {
            check_encoding(&p, t, api, workload, issues);
        }
        if targets_seen.insert(t) {
            check_body(&target_body, api, &plan.targets[t].body, issues);
        }
    }
    if encoding_phases {
        check_encoding_slo(plan, issues);
    }
}

/// `tools` and `images` go only to a chat API.
fn check_chat_only(p: &str, t: &str, api: Api, workload: &Workload, issues: &mut Vec<Issue>) {
    if api != Api::Chat && workload.tools.is_some() {
        issues.push(
            Issue::new(
                format!("{p}/tools"),
                format!(
                    "`tools` applies to `api: chat`; target `{t}` uses `api: {}`",
                    api_name(api)
                ),
            )
            .at_key(),
        );
    }
    if api != Api::Chat && workload.images.is_some() {
        issues.push(
            Issue::new(
                format!("{p}/images"),
                format!(
                    "`images` go as chat content parts and apply to `api: chat`; target \
                     `{t}` uses `api: {}`",
                    api_name(api)
                ),
            )
            .at_key(),
        );
    }
}

/// Structured output goes to chat, completions and Responses; Messages has no
/// `response_format`, and embeddings and rerank write no text.
fn check_response_format_api(
    p: &str,
    t: &str,
    api: Api,
    workload: &Workload,
    issues: &mut Vec<Issue>,
) {
    if workload.response_format.is_none()
        || matches!(api, Api::Chat | Api::Completions | Api::Responses)
    {
        return;
    }
    issues.push(
        Issue::new(
            format!("{p}/response_format"),
            format!(
                "`response_format` applies to `api: chat`, `completions` or `responses`; \
                 target `{t}` uses `api: {}`, which takes none",
                api_name(api)
            ),
        )
        .at_key(),
    );
}

/// An encoding API answers in one body: nothing to cancel mid-stream.
fn check_encoding_pair(p: &str, t: &str, api: Api, workload: &Workload, issues: &mut Vec<Issue>) {
    if workload.cancel.is_some() {
        issues.push(
            Issue::new(
                format!("{p}/cancel"),
                format!(
                    "`cancel` drops a stream mid-generation; target `{t}` uses `api: {}`, \
                     which answers in one body",
                    api_name(api)
                ),
            )
            .at_key(),
        );
    }
}

/// Embeddings and rerank generate nothing: a limit on a generated figure never holds.
fn check_encoding_slo(plan: &Plan, issues: &mut Vec<Issue>) {
    let Some(slo) = &plan.slo else {
        return;
    };
    for figure in slo.limits.keys().filter(|f| f.spec().generated) {
        let key = figure.name();
        issues.push(
            Issue::new(
                format!("/slo/{}", escape(key)),
                format!("embeddings and rerank responses have no `{key}`"),
            )
            .at_key()
            .hint(Some("limit `e2e` instead".into())),
        );
    }
}

fn check_encoding(p: &str, target: &str, api: Api, w: &Workload, issues: &mut Vec<Issue>) {
    let name = api_name(api);
    let generation = [
        ("output_tokens", w.output_tokens.is_some()),
        ("ignore_eos", w.ignore_eos.is_some()),
        ("min_tokens", w.min_tokens.is_some()),
        ("temperature", w.temperature.is_some()),
        ("conversation", w.conversation.is_some()),
    ];
    for (key, set) in generation {
        if set {
            issues.push(
                Issue::new(
                    format!("{p}/{key}"),
                    format!(
                        "`{key}` does not apply to `api: {name}` (target `{target}`): it \
                         generates no tokens"
                    ),
                )
                .at_key()
                .hint(Some(format!(
                    "remove `{key}`, or use a workload of its own for this target"
                ))),
            );
        }
    }
    if w.trace.is_some() {
        issues.push(
            Issue::new(
                format!("{p}/trace"),
                format!("a trace replays generation requests; `api: {name}` takes `input_tokens` or a dataset"),
            )
            .at_key(),
        );
    }
    if w.batch == Some(0) {
        issues.push(Issue::new(
            format!("{p}/batch"),
            "must be at least 1, found 0",
        ));
    }
    check_body(&format!("{p}/body"), api, &w.body, issues);
}

fn check_body(
    p: &str,
    api: Api,
    body: &serde_json::Map<String, serde_json::Value>,
    issues: &mut Vec<Issue>,
) {
    for key in GENERATION_BODY_KEYS {
        if body.contains_key(key) {
            issues.push(
                Issue::new(
                    format!("{p}/{}", escape(key)),
                    format!(
                        "`{key}` is a generation setting; `api: {}` requests do not take it",
                        api_name(api)
                    ),
                )
                .at_key(),
            );
        }
    }
}

/// Body fields of chat and completions that the Responses API names otherwise or lacks.
const NOT_RESPONSES_BODY_KEYS: [(&str, &str); 7] = [
    ("max_tokens", "use `max_output_tokens`"),
    ("max_completion_tokens", "use `max_output_tokens`"),
    ("messages", "the Responses API takes `input`"),
    ("prompt", "the Responses API takes `input`"),
    (
        "stream_options",
        "usage always comes with `response.completed`",
    ),
    ("ignore_eos", "the Responses API has no such setting"),
    ("min_tokens", "the Responses API has no such setting"),
];

/// Body fields of chat and completions that the Messages API names otherwise or lacks.
const NOT_MESSAGES_BODY_KEYS: [(&str, &str); 6] = [
    ("max_completion_tokens", "use `max_tokens`"),
    ("prompt", "the Messages API takes `messages`"),
    ("input", "the Messages API takes `messages`"),
    (
        "stream_options",
        "usage always comes with `message_start` and `message_delta`",
    ),
    ("ignore_eos", "the Messages API has no such setting"),
    ("min_tokens", "the Messages API has no such setting"),
];

/// The API's name in messages and the body fields it cannot take, for the APIs of typed
/// events (not chat's chunk shape).
fn typed_events_api(api: Api) -> Option<(&'static str, &'static [(&'static str, &'static str)])> {
    match api {
        Api::Responses => Some(("the Responses API", &NOT_RESPONSES_BODY_KEYS)),
        Api::Messages => Some(("the Messages API", &NOT_MESSAGES_BODY_KEYS)),
        Api::Chat | Api::Completions | Api::Embeddings | Api::Rerank => None,
    }
}

/// Workload settings an API of typed events cannot carry.
fn check_typed_events(p: &str, target: &str, api: Api, w: &Workload, issues: &mut Vec<Issue>) {
    let Some((title, _)) = typed_events_api(api) else {
        return;
    };
    for (key, set) in [
        ("ignore_eos", w.ignore_eos.is_some()),
        ("min_tokens", w.min_tokens.is_some()),
    ] {
        if set {
            issues.push(
                Issue::new(
                    format!("{p}/{key}"),
                    format!(
                        "`{key}` does not apply to `api: {}` (target `{target}`): {title} has \
                         no such setting",
                        api_name(api)
                    ),
                )
                .at_key()
                .hint(Some(format!(
                    "remove `{key}`, or use a workload of its own for this target"
                ))),
            );
        }
    }
    check_typed_events_body(&format!("{p}/body"), api, &w.body, issues);
}

fn check_typed_events_body(
    p: &str,
    api: Api,
    body: &serde_json::Map<String, serde_json::Value>,
    issues: &mut Vec<Issue>,
) {
    let Some((title, keys)) = typed_events_api(api) else {
        return;
    };
    for (key, why) in keys {
        if body.contains_key(*key) {
            issues.push(
                Issue::new(
                    format!("{p}/{}", escape(key)),
                    format!("`{key}` is not a field of {title}: {why}"),
                )
                .at_key(),
            );
        }
    }
}

fn api_name(api: Api) -> &'static str {
    match api {
        Api::Chat => "chat",
        Api::Completions => "completions",
        Api::Embeddings => "embeddings",
        Api::Rerank => "rerank",
        Api::Responses => "responses",
        Api::Messages => "messages",
    }
}
