//! Checks on one target: where it points, its metrics endpoints, key variable and timeouts.

use crate::plan::model::Target;
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
        (None, Some(_)) => {}
    }
}

fn check_metrics(p: &str, t: &Target, issues: &mut Vec<Issue>) {
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
    if let Some(interval) = t.metrics_interval
        && interval.0 < std::time::Duration::from_millis(100)
    {
        issues.push(Issue::new(
            format!("{p}/metrics_interval"),
            "expected at least 100ms between scrapes",
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
