//! Checks on one target: where it points, its metrics endpoints, key variable and timeouts.

use crate::plan::model::{Target, TargetMetrics};
use crate::plan::schema::Issue;

pub(super) fn check_target(p: &str, t: &Target, issues: &mut Vec<Issue>) {
    check_endpoint(p, t, issues);
    check_metrics(p, t, issues);
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
    check_timeouts(p, t, issues);
    check_endpoint_access(p, t, issues);
    check_request_id(p, t, issues);
    if let Some(cost) = &t.cost {
        crate::plan::cost::check_cost(&format!("{p}/cost"), cost, issues);
    }
    if let Some(power) = &t.power {
        crate::plan::power::check_power(&format!("{p}/power"), power, power_sampled(t), issues);
    }
    if let Some(power) = t.simulator.as_ref().and_then(|s| s.power.as_ref()) {
        crate::plan::power::check_sim_power(&format!("{p}/simulator/power"), power, issues);
    }
}

/// Whether a target's metrics are sampled during the window, as its energy needs.
fn power_sampled(t: &Target) -> Result<(), &'static str> {
    if t.metrics.is_none() && t.simulator.is_none() {
        return Err("`power` needs the target's `metrics` endpoint to read the gauge from");
    }
    if crate::plan::MetricsInterval::resolve(t.metrics_interval).is_none() {
        return Err("`power` needs samples during the window: `metrics_interval` is off");
    }
    Ok(())
}

/// A request-id header name must be a valid HTTP header name.
fn check_request_id(p: &str, t: &Target, issues: &mut Vec<Issue>) {
    let Some(header) = t.request_id.as_ref().and_then(|r| r.header.as_deref()) else {
        return;
    };
    if hyper::header::HeaderName::from_bytes(header.as_bytes()).is_err() {
        issues.push(
            Issue::new(
                format!("{p}/request_id/header"),
                format!("{header:?} is not a valid HTTP header name"),
            )
            .hint(Some(
                "use letters, digits and dashes, e.g. x-request-id".into(),
            )),
        );
    }
}

/// TLS settings need an `https` server; a key header needs a key; a certificate needs its key.
fn check_endpoint_access(p: &str, t: &Target, issues: &mut Vec<Issue>) {
    check_api_key_header(p, t, issues);
    if t.unix_socket.is_some()
        && !t
            .base_url
            .as_deref()
            .is_some_and(|u| u.starts_with("http://"))
    {
        issues.push(
            Issue::new(
                format!("{p}/unix_socket"),
                "`unix_socket` needs an http:// base_url",
            )
            .at_key()
            .hint(Some(
                "the URL gives the path and Host header, e.g. http://localhost/v1".into(),
            )),
        );
    }
    check_proxy(p, t, issues);
    check_tls(p, t, issues);
}

/// A key header needs a key, and a name HTTP allows.
fn check_api_key_header(p: &str, t: &Target, issues: &mut Vec<Issue>) {
    if let Some(header) = &t.api_key_header {
        if t.api_key_env.is_none() {
            issues.push(
                Issue::new(
                    format!("{p}/api_key_header"),
                    "`api_key_header` needs `api_key_env`",
                )
                .hint(Some(
                    "name the variable that holds the key in `api_key_env`".into(),
                )),
            );
        }
        if header.is_empty() || !header.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
            issues.push(Issue::new(
                format!("{p}/api_key_header"),
                format!("{header:?} is not an HTTP header name"),
            ));
        }
    }
}

/// A proxy is an http:// URL without credentials.
fn check_proxy(p: &str, t: &Target, issues: &mut Vec<Issue>) {
    if let Some(proxy) = &t.proxy {
        let authority = proxy.strip_prefix("http://").unwrap_or_default();
        let authority = authority.split('/').next().unwrap_or_default();
        // Credentials would be copied into the report with the plan: refused, never quoted.
        let problem = if authority.is_empty() {
            Some("expected an http:// proxy URL")
        } else if authority.contains('@') {
            Some("proxy credentials are not supported")
        } else {
            None
        };
        if let Some(problem) = problem {
            issues.push(
                Issue::new(format!("{p}/proxy"), problem)
                    .hint(Some("for example http://127.0.0.1:3128".into())),
            );
        }
    }
}

/// TLS settings need an `https` server; a certificate needs its key.
fn check_tls(p: &str, t: &Target, issues: &mut Vec<Issue>) {
    let Some(tls) = &t.tls else { return };
    if !t
        .base_url
        .as_deref()
        .is_some_and(|u| u.starts_with("https://"))
    {
        issues.push(
            Issue::new(
                format!("{p}/tls"),
                "`tls` applies only to an https:// base_url",
            )
            .at_key(),
        );
    }
    if tls.client_cert.is_some() != tls.client_key.is_some() {
        issues.push(
            Issue::new(
                format!("{p}/tls"),
                "`client_cert` and `client_key` go together",
            )
            .at_key()
            .hint(Some("set both, or neither".into())),
        );
    }
    if tls.insecure_skip_verify && tls.ca_cert.is_some() {
        issues.push(Issue::new(
            format!("{p}/tls/ca_cert"),
            "`ca_cert` has no effect with `insecure_skip_verify: true`; remove one of them",
        ));
    }
}

/// Exactly one of a server URL or the embedded simulator.
fn check_endpoint(p: &str, t: &Target, issues: &mut Vec<Issue>) {
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
        (None, Some(sim)) => {
            if let (Some(asked), Some(served)) = (&t.model, &sim.model)
                && asked != served
                && sim.accept_any_model != Some(true)
            {
                issues.push(
                    Issue::new(
                        format!("{p}/model"),
                        format!(
                            "requests ask for model `{asked}`, and the simulator serves \
                             `{served}`: it would answer 404 to every one"
                        ),
                    )
                    .hint(Some(
                        "name the model once, on the target (the simulator serves it), or \
                         set `accept_any_model: true` under `simulator:`"
                            .into(),
                    )),
                );
            }
        }
    }
}

fn check_metrics(p: &str, t: &Target, issues: &mut Vec<Issue>) {
    let is_http = |url: &str| url.starts_with("http://") || url.starts_with("https://");
    match &t.metrics {
        Some(TargetMetrics::Url(url)) if !is_http(url) => issues.push(Issue::new(
            format!("{p}/metrics"),
            format!("expected an http:// or https:// URL, found {url:?}"),
        )),
        Some(TargetMetrics::Endpoints(endpoints)) => {
            for (i, m) in endpoints.iter().enumerate() {
                if !is_http(&m.url) {
                    issues.push(Issue::new(
                        format!("{p}/metrics/{i}/url"),
                        format!("expected an http:// or https:// URL, found {:?}", m.url),
                    ));
                }
            }
        }
        Some(TargetMetrics::Url(_)) | None => {}
    }
    if let Some(crate::plan::MetricsInterval::Every(interval)) = t.metrics_interval
        && interval.0 < std::time::Duration::from_millis(100)
    {
        issues.push(Issue::new(
            format!("{p}/metrics_interval"),
            "expected at least 100ms between scrapes, or `off`",
        ));
    }
}

fn check_timeouts(p: &str, t: &Target, issues: &mut Vec<Issue>) {
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
