//! The `check` pass: semantic rules on the typed, expanded plan, all reported together.

use std::collections::HashMap;

use super::diag::did_you_mean;
use super::model::*;
use super::schema::Issue;
use super::source::escape;

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
        for (key, d) in [("ttft", &slo.ttft), ("tpot", &slo.tpot), ("e2e", &slo.e2e)] {
            if d.is_some_and(|d| d.0.is_zero()) {
                issues.push(Issue::new(
                    format!("/slo/{key}"),
                    "must be longer than zero",
                ));
            }
        }
    }
    for (name, target) in &plan.targets {
        check_target(&format!("/targets/{}", escape(name)), target, &mut issues);
    }
    for (name, workload) in &plan.workloads {
        check_workload(
            &format!("/workloads/{}", escape(name)),
            workload,
            &mut issues,
        );
    }
    check_phases(plan, &mut issues);
    issues
}

fn check_target(p: &str, t: &Target, issues: &mut Vec<Issue>) {
    match (&t.base_url, &t.simulator) {
        (Some(_), Some(_)) => issues.push(
            Issue::new(p, "a target has either `base_url` or `simulator`, not both")
                .at_key()
                .hint(Some("remove one of them".into())),
        ),
        (None, None) => issues.push(
            Issue::new(
                p,
                "a target needs `base_url` (a server) or `simulator` (the embedded one)",
            )
            .at_key()
            .hint(Some(
                "for example `base_url: http://127.0.0.1:8000/v1` or `simulator: {}`".into(),
            )),
        ),
        (Some(url), None) => {
            if !(url.starts_with("http://") || url.starts_with("https://"))
                || url.len() <= "https://".len()
            {
                issues.push(
                    Issue::new(
                        format!("{p}/base_url"),
                        format!("expected an http:// or https:// URL, found {url:?}"),
                    )
                    .hint(Some("for example http://127.0.0.1:8000/v1".into())),
                );
            }
        }
        (None, Some(_)) => {}
    }
    if let Some(url) = &t.metrics_url
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        issues.push(Issue::new(
            format!("{p}/metrics_url"),
            format!("expected an http:// or https:// URL, found {url:?}"),
        ));
    }
    if t.metrics_url.is_some() && !t.metrics.is_empty() {
        issues.push(Issue::new(
            format!("{p}/metrics"),
            "`metrics_url` and `metrics` are exclusive: list the endpoint under `metrics`",
        ));
    }
    for (i, m) in t.metrics.iter().enumerate() {
        if !(m.url.starts_with("http://") || m.url.starts_with("https://")) {
            issues.push(Issue::new(
                format!("{p}/metrics/{i}/url"),
                format!("expected an http:// or https:// URL, found {:?}", m.url),
            ));
        }
    }
    if let Some(env) = &t.api_key_env
        && (env.is_empty() || env.contains(char::is_whitespace) || env.contains('='))
    {
        issues.push(
            Issue::new(
                format!("{p}/api_key_env"),
                format!("{env:?} is not an environment variable name"),
            )
            .hint(Some(
                "name the variable that holds the key (e.g. OPENAI_API_KEY), never the key".into(),
            )),
        );
    }
    if let Some(timeout) = &t.timeout {
        for (key, d) in [
            ("connect", &timeout.connect),
            ("first_byte", &timeout.first_byte),
            ("idle", &timeout.idle),
            ("total", &timeout.total),
        ] {
            if d.is_some_and(|d| d.0.is_zero()) {
                issues.push(Issue::new(
                    format!("{p}/timeout/{key}"),
                    "a timeout must be longer than zero",
                ));
            }
        }
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
        TokenCount::Choice(ch) => {
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
    }
}

fn check_workload(p: &str, w: &Workload, issues: &mut Vec<Issue>) {
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
    if let Some(c) = &w.input_tokens {
        check_count(&format!("{p}/input_tokens"), c, issues);
    }
    if let Some(c) = &w.output_tokens {
        check_count(&format!("{p}/output_tokens"), c, issues);
    }
    if let Some(sp) = &w.shared_prefix {
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
        if let Some(TokenCount::Fixed(n)) = w.input_tokens
            && sp.tokens >= n
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
    if let Some(d) = &w.dataset {
        if d.path.trim().is_empty() {
            issues.push(Issue::new(
                format!("{p}/dataset/path"),
                "the dataset path is empty",
            ));
        }
        if let (Some(lo), Some(hi)) = (d.min_input_tokens, d.max_input_tokens)
            && lo > hi
        {
            issues.push(Issue::new(
                format!("{p}/dataset/min_input_tokens"),
                format!("`min_input_tokens` ({lo}) is above `max_input_tokens` ({hi})"),
            ));
        }
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
}

fn check_tolerance(p: &str, t: &Tolerance, issues: &mut Vec<Issue>) {
    let fields = [
        ("default", t.default),
        ("ttft_p50", t.ttft_p50),
        ("ttft_p95", t.ttft_p95),
        ("ttft_p99", t.ttft_p99),
        ("tpot_p50", t.tpot_p50),
        ("e2e_p50", t.e2e_p50),
        ("output_tokens_per_second", t.output_tokens_per_second),
        ("error_rate", t.error_rate),
    ];
    for (key, v) in fields {
        if let Some(v) = v
            && !(v.is_finite() && v >= 0.0)
        {
            issues.push(Issue::new(
                format!("{p}/{key}"),
                format!("a tolerance must be zero or more, found {v}"),
            ));
        }
    }
}

fn check_phases(plan: &Plan, issues: &mut Vec<Issue>) {
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
    let names: Vec<&str> = plan
        .phases
        .iter()
        .filter_map(|ph| ph.name.as_deref())
        .collect();
    for (i, phase) in plan.phases.iter().enumerate() {
        let p = format!("/phases/{i}");
        if let Some(original) = &phase.recheck {
            match first_index.get(original.as_str()) {
                Some(j) if *j < i => {}
                Some(j) if *j == i => {
                    issues.push(Issue::new(
                        format!("{p}/recheck"),
                        "a phase cannot recheck itself",
                    ));
                    continue;
                }
                Some(j) => {
                    issues.push(
                        Issue::new(
                            format!("{p}/recheck"),
                            format!("recheck of `{original}` comes before it (phases[{j}])"),
                        )
                        .hint(Some(format!("move this recheck after `{original}`"))),
                    );
                    continue;
                }
                None => {
                    issues.push(
                        Issue::new(
                            format!("{p}/recheck"),
                            format!("no phase named `{original}` to recheck"),
                        )
                        .hint(did_you_mean(original, names.iter().copied())),
                    );
                    continue;
                }
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
    }
}

/// Longest duration a phase, warmup, cooldown or drain may have: 30 days.
pub const MAX_PHASE_DURATION_S: u64 = 30 * 24 * 3600;
/// Most concurrent requests (closed loop) or in-flight cap (open loop) a phase may ask for.
pub const MAX_CONCURRENCY: u32 = 1_000_000;
/// Highest open-loop request rate, requests per second.
pub const MAX_RPS: f64 = 1_000_000.0;

/// Values that parse but cannot be meant: a run of months, a million connections.
fn check_limits(p: &str, phase: &Phase, issues: &mut Vec<Issue>) {
    let durations = [
        ("duration", phase.duration.as_ref()),
        (
            "warmup/duration",
            phase.warmup.as_ref().and_then(|w| w.duration.as_ref()),
        ),
        ("cooldown", phase.cooldown.as_ref()),
        ("drain_timeout", phase.drain_timeout.as_ref()),
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

fn check_phase(plan: &Plan, p: &str, phase: &Phase, issues: &mut Vec<Issue>) {
    check_limits(p, phase, issues);
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
    } else if phase.search.is_some() {
        super::search::check_search(p, phase, issues);
    } else {
        check_load_model(p, phase, issues);
        if phase.duration.is_none() && phase.requests.is_none() {
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
    if let Some(t) = &phase.tolerance {
        check_tolerance(&format!("{p}/tolerance"), t, issues);
    }
    if phase.tags.iter().any(|t| t.trim().is_empty()) {
        issues.push(Issue::new(format!("{p}/tags"), "tags must not be empty"));
    }
}

fn check_load_model(p: &str, phase: &Phase, issues: &mut Vec<Issue>) {
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
