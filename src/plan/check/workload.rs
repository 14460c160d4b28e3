//! Checks on one workload: its prompt source, token counts, shared prefix and dataset.

use crate::plan::count::{ChoiceLength, TokenCount};
use crate::plan::model::*;
use crate::plan::schema::Issue;

pub(super) fn check_workload(p: &str, w: &Workload, issues: &mut Vec<Issue>) {
    check_source_count(p, w, issues);
    if let Some(c) = &w.input_tokens {
        check_count(&format!("{p}/input_tokens"), c, issues);
    }
    if let Some(c) = &w.output_tokens {
        check_count(&format!("{p}/output_tokens"), c, issues);
    }
    if let Some(sp) = &w.shared_prefix {
        check_shared_prefix(p, sp, w.input_tokens.as_ref(), issues);
    }
    if let Some(t) = w.temperature
        && !(t.is_finite() && (0.0..=2.0).contains(&t))
    {
        issues.push(Issue::new(
            format!("{p}/temperature"),
            format!("must be between 0 and 2, found {t}"),
        ));
    }
    if let Some(tol) = w.prompt_tolerance
        && !(tol.is_finite() && tol >= 0.0)
    {
        issues.push(Issue::new(
            format!("{p}/prompt_tolerance"),
            format!("must be zero or more, found {tol}"),
        ));
    }
    if w.body.contains_key("cache_salt") && !matches!(w.salt, Some(SaltMode::None | SaltMode::Text))
    {
        issues.push(Issue::new(
            format!("{p}/body/cache_salt"),
            "the run's salt would replace it; set `salt: none` to send this one".to_string(),
        ));
    }
    if let Some(d) = &w.dataset {
        check_dataset(&format!("{p}/dataset"), d, issues);
    }
    if let Some(t) = &w.trace
        && !(t.time_scale.is_finite() && t.time_scale > 0.0)
    {
        issues.push(Issue::new(
            format!("{p}/trace/time_scale"),
            "must be greater than zero",
        ));
    }
    if let Some(c) = &w.conversation
        && c.turns == 0
    {
        issues.push(Issue::new(
            format!("{p}/conversation/turns"),
            "must be at least 1 turn",
        ));
    }
    if let Some(s) = &w.session {
        check_session(&format!("{p}/session"), s, w, issues);
    }
    if let Some(t) = &w.tools {
        check_tools(&format!("{p}/tools"), t, issues);
    }
    if let Some(images) = &w.images {
        check_images(&format!("{p}/images"), images, w, issues);
    }
    check_reply_checks(p, w, issues);
    if let Some(c) = &w.cancel {
        crate::plan::cancel::check_cancel(&format!("{p}/cancel"), c, issues);
        if w.session.is_some() {
            issues.push(
                Issue::new(
                    format!("{p}/cancel"),
                    "a session's turns carry the replies before them: a cancelled turn would \
                     end its session, so `cancel` and `session` do not go together",
                )
                .at_key(),
            );
        }
    }
}

/// What each reply is checked against: its `response_format` and its `score`.
fn check_reply_checks(p: &str, w: &Workload, issues: &mut Vec<Issue>) {
    if let Some(s) = &w.score {
        crate::plan::score::check_score(&format!("{p}/score"), s, w.dataset.is_some(), issues);
    }
    if let Some(f) = &w.response_format {
        crate::plan::response_format::check_response_format(
            &format!("{p}/response_format"),
            f,
            issues,
        );
    }
}

/// Valid sides, pool and count; synthetic prompts without sessions or a trace (a session's
/// history and a trace's timed requests carry no images).
fn check_images(p: &str, images: &crate::plan::Images, w: &Workload, issues: &mut Vec<Issue>) {
    crate::plan::images::check_images(p, images, issues);
    if let Some(count) = &images.count {
        check_count(&format!("{p}/count"), count, issues);
    }
    let other = match (&w.session, &w.trace, &w.dataset) {
        (Some(_), _, _) => Some("session"),
        (None, Some(_), _) => Some("trace"),
        (None, None, Some(_)) => Some("dataset"),
        (None, None, None) => None,
    };
    if let Some(other) = other {
        let hint = (other == "dataset")
            .then(|| "a dataset row names its own image files: `images: [a.jpg, …]`".into());
        issues.push(
            Issue::new(
                p,
                format!("generated images go with synthetic prompts, not with a `{other}`"),
            )
            .at_key()
            .hint(hint),
        );
    }
}

/// Each tool definition a function with a name; the result length a valid count.
fn check_tools(p: &str, t: &Tools, issues: &mut Vec<Issue>) {
    for (i, tool) in t.definitions.iter().flatten().enumerate() {
        let at = format!("{p}/definitions/{i}");
        let kind = tool.get("type").and_then(|k| k.as_str());
        let name = tool.pointer("/function/name").and_then(|n| n.as_str());
        match (kind, name) {
            (Some("function"), Some(name)) if !name.is_empty() => {}
            (Some("function"), _) => issues.push(Issue::new(
                at,
                "a function tool needs `function: {name: …}` with a non-empty name",
            )),
            _ => issues.push(
                Issue::new(
                    at,
                    "expected a tool `{type: function, function: {name, …}}`",
                )
                .hint(Some(
                    "OpenAI's function-calling schema; leave out `definitions` for the \
                         built-in set"
                        .into(),
                )),
            ),
        }
    }
    if t.definitions.as_ref().is_some_and(Vec::is_empty) {
        issues.push(Issue::new(
            format!("{p}/definitions"),
            "must list at least one tool (leave it out for the built-in set)",
        ));
    }
    if let Some(c) = &t.result_tokens {
        check_count(&format!("{p}/result_tokens"), c, issues);
    }
}

/// A session's turns, its user-message length and header; synthetic prompts only.
fn check_session(p: &str, s: &Session, w: &Workload, issues: &mut Vec<Issue>) {
    if s.turns == 0 {
        issues.push(Issue::new(format!("{p}/turns"), "must be at least 1 turn"));
    }
    if w.dataset.is_some() || w.trace.is_some() || w.conversation.is_some() {
        issues.push(
            Issue::new(
                p,
                "a session builds its own synthetic turns: it takes no `dataset`, `trace` or \
                 `conversation`",
            )
            .at_key(),
        );
    }
    if let Some(c) = &s.user_tokens {
        check_count(&format!("{p}/user_tokens"), c, issues);
    }
    if let Some(name) = &s.affinity_header
        && hyper::header::HeaderName::from_bytes(name.as_bytes()).is_err()
    {
        issues.push(Issue::new(
            format!("{p}/affinity_header"),
            format!("`{name}` is not a valid HTTP header name"),
        ));
    }
    if let Some(ThinkTime::Exponential { mean }) = &s.think_time
        && mean.0.is_zero()
    {
        issues.push(Issue::new(
            format!("{p}/think_time/mean"),
            "must be longer than zero",
        ));
    }
}

/// Exactly one prompt source.
fn check_source_count(p: &str, w: &Workload, issues: &mut Vec<Issue>) {
    let sources = [
        w.input_tokens.is_some(),
        w.dataset.is_some(),
        w.trace.is_some(),
    ];
    match sources.iter().filter(|s| **s).count() {
        0 => issues.push(
            Issue::new(
                p,
                "a workload needs a prompt source: `input_tokens`, `dataset` or `trace`",
            )
            .at_key(),
        ),
        1 => {}
        _ => issues.push(
            Issue::new(
                p,
                "a workload takes one prompt source: `input_tokens`, `dataset` or `trace`",
            )
            .at_key()
            .hint(Some("keep one of them".into())),
        ),
    }
}

fn check_shared_prefix(
    p: &str,
    sp: &SharedPrefix,
    input_tokens: Option<&TokenCount>,
    issues: &mut Vec<Issue>,
) {
    if sp.tokens == 0 {
        issues.push(Issue::new(
            format!("{p}/shared_prefix/tokens"),
            "must be at least 1 token",
        ));
    }
    if sp.groups == 0 {
        issues.push(Issue::new(
            format!("{p}/shared_prefix/groups"),
            "must be at least 1 group",
        ));
    }
    if let Some(TokenCount::Fixed(n)) = input_tokens
        && sp.tokens >= *n
    {
        issues.push(
            Issue::new(
                format!("{p}/shared_prefix/tokens"),
                format!(
                    "the shared prefix ({}) must be shorter than the prompt ({n} input tokens)",
                    sp.tokens
                ),
            )
            .hint(Some(
                "each request adds a unique suffix after the shared prefix".into(),
            )),
        );
    }
}

fn check_dataset(p: &str, d: &Dataset, issues: &mut Vec<Issue>) {
    match (d.generate.is_some(), d.path.trim().is_empty()) {
        (false, true) => issues.push(Issue::new(
            format!("{p}/path"),
            "the dataset path is empty: give a `path`, or `generate: copy | arithmetic | \
             json_extract`",
        )),
        (true, false) => issues.push(
            Issue::new(
                format!("{p}/generate"),
                "a generated set has no file: give `generate` or `path`, not both",
            )
            .at_key(),
        ),
        _ => {}
    }
    for (key, set) in [("rows", d.rows.is_some()), ("seed", d.seed.is_some())] {
        if set && d.generate.is_none() {
            issues.push(
                Issue::new(
                    format!("{p}/{key}"),
                    format!("`{key}` applies to a generated set (`generate`)"),
                )
                .at_key(),
            );
        }
    }
    if d.rows == Some(0) {
        issues.push(Issue::new(format!("{p}/rows"), "must be at least 1 row"));
    }
    if let (Some(lo), Some(hi)) = (d.min_input_tokens, d.max_input_tokens)
        && lo > hi
    {
        issues.push(Issue::new(
            format!("{p}/min_input_tokens"),
            format!("`min_input_tokens` ({lo}) is above `max_input_tokens` ({hi})"),
        ));
    }
}

fn check_count(p: &str, c: &TokenCount, issues: &mut Vec<Issue>) {
    let bounds = |min: Option<u32>, max: Option<u32>, issues: &mut Vec<Issue>| {
        if let (Some(lo), Some(hi)) = (min, max)
            && lo > hi
        {
            issues.push(Issue::new(
                format!("{p}/min"),
                format!("`min` ({lo}) is above `max` ({hi})"),
            ));
        }
    };
    match c {
        TokenCount::Fixed(n) => {
            if *n == 0 {
                issues.push(Issue::new(p, "must be at least 1 token"));
            }
        }
        TokenCount::Normal(n) => {
            if !(n.mean.is_finite() && n.mean >= 1.0) {
                issues.push(Issue::new(
                    format!("{p}/mean"),
                    format!("must be at least 1, found {}", n.mean),
                ));
            }
            if !(n.stddev.is_finite() && n.stddev >= 0.0) {
                issues.push(Issue::new(
                    format!("{p}/stddev"),
                    format!("must be zero or more, found {}", n.stddev),
                ));
            }
            bounds(n.min, n.max, issues);
        }
        TokenCount::LogNormal(n) => {
            if !(n.median.is_finite() && n.median >= 1.0) {
                issues.push(Issue::new(
                    format!("{p}/median"),
                    format!("must be at least 1, found {}", n.median),
                ));
            }
            if !(n.sigma.is_finite() && n.sigma >= 0.0) {
                issues.push(Issue::new(
                    format!("{p}/sigma"),
                    format!("must be zero or more, found {}", n.sigma),
                ));
            }
            bounds(n.min, n.max, issues);
        }
        TokenCount::Uniform(u) => {
            if u.min == 0 {
                issues.push(Issue::new(format!("{p}/min"), "must be at least 1 token"));
            }
            bounds(Some(u.min), Some(u.max), issues);
        }
        TokenCount::Choice(ch) => check_choice(p, ch, issues),
    }
}

fn check_choice(p: &str, ch: &ChoiceLength, issues: &mut Vec<Issue>) {
    if ch.values.is_empty() {
        issues.push(Issue::new(
            format!("{p}/values"),
            "needs at least one value",
        ));
    }
    if ch.values.contains(&0) {
        issues.push(Issue::new(
            format!("{p}/values"),
            "every value must be at least 1 token",
        ));
    }
    if let Some(w) = &ch.weights {
        if w.len() != ch.values.len() {
            issues.push(Issue::new(
                format!("{p}/weights"),
                format!(
                    "{} weights for {} values; give one weight per value",
                    w.len(),
                    ch.values.len()
                ),
            ));
        }
        if w.iter().any(|x| !x.is_finite() || *x < 0.0) || w.iter().sum::<f64>() <= 0.0 {
            issues.push(Issue::new(
                format!("{p}/weights"),
                "weights must be zero or more, and not all zero",
            ));
        }
    }
}
