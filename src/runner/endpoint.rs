//! From plan types to the client's plain values: a target resolves to one `Endpoint`, which
//! with a workload becomes a phase's `ClientConfig`; the model name is decided here once; the
//! report's copy of a plan is redacted.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use hyper::header::HeaderName;
use indexmap::IndexMap;

use crate::client::{
    self, ClientConfig, ClientError, ConnectionSettings, Endpoint, HttpVersion, REDACTED,
    RequestIdFormat, RequestIdSettings, ResolvedTimeouts, Sampling, TlsSettings, TraceContextMode,
    is_secret_header, merge_body,
};
use crate::plan::{self, Plan, Target, Workload};
use crate::report::EndpointFacts;

/// Longest a connection may take to open unless the target sets `timeout.connect`: without
/// it a dead server would hold a phase forever.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest silence allowed inside a stream unless the target sets `timeout.idle`.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// The model requests name: the target's, else a simulator's own (default `sim`); `None` for
/// a remote target without one (the runner then asks its `/v1/models`).
pub fn model_name(target: &Target) -> Option<String> {
    if let Some(model) = &target.model {
        return Some(model.clone());
    }
    let simulator = target.simulator.as_ref()?;
    Some(
        simulator
            .model
            .clone()
            .unwrap_or_else(|| crate::sim::DEFAULT_MODEL.to_string()),
    )
}

/// The plan's timeouts as durations.
pub fn timeouts(timeouts: Option<&plan::Timeouts>) -> ResolvedTimeouts {
    match timeouts {
        None => ResolvedTimeouts::default(),
        Some(t) => ResolvedTimeouts {
            connect: t.connect.map(|d| d.0),
            first_byte: t.first_byte.map(|d| d.0),
            idle: t.idle.map(|d| d.0),
            total: t.total.map(|d| d.0),
        },
    }
}

/// The target's `connection:` settings over the client's defaults.
pub fn connection(connection: Option<&plan::TargetConnection>) -> ConnectionSettings {
    let defaults = ConnectionSettings::default();
    match connection {
        None => defaults,
        Some(c) => ConnectionSettings {
            reuse: c.reuse.unwrap_or(defaults.reuse),
            idle_timeout: c.idle_timeout.map_or(defaults.idle_timeout, |d| d.0),
        },
    }
}

/// What `target` resolves to, once per run: its base URL, TLS files and Unix socket joined to
/// `plan_dir`, the API key read from the variable it names, its headers, HTTP version and
/// request-id header. A simulator target's base URL is empty until the simulator listens.
pub fn resolve(target: &Target, plan_dir: &Path) -> Result<Endpoint, ClientError> {
    Ok(Endpoint {
        base_url: target
            .base_url
            .as_deref()
            .unwrap_or_default()
            .trim_end_matches('/')
            .to_string(),
        tls: tls_settings(target, plan_dir),
        unix_socket: target.unix_socket.as_ref().map(|p| plan_dir.join(p)),
        proxy: target.proxy.clone(),
        headers: target
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        api_key: api_key(target)?,
        api_key_header: target.api_key_header.clone(),
        http: match target.http {
            Some(plan::TargetHttp::Http2) => HttpVersion::Http2,
            Some(plan::TargetHttp::Http1) | None => HttpVersion::Http1,
        },
        request_id: request_id_settings(target),
    })
}

/// The configuration for one phase's requests to `endpoint`: `target`'s API, model, timeouts
/// and body with `workload`'s merged over it, and `workload`'s sampling. `max_connections` is
/// the phase's concurrency (or its open-loop in-flight cap).
pub fn request_config(
    endpoint: &Endpoint,
    target: &Target,
    workload: &Workload,
    max_connections: usize,
) -> Result<ClientConfig, ClientError> {
    let model =
        model_name(target).ok_or_else(|| ClientError("the target names no model".to_string()))?;
    let mut body = target.body.clone();
    merge_body(&mut body, &workload.body);
    Ok(ClientConfig {
        endpoint: endpoint.clone(),
        api: target.api,
        model,
        timeouts: timeouts(target.timeout.as_ref()),
        body,
        sampling: Sampling {
            temperature: workload.temperature,
            ignore_eos: workload.ignore_eos,
            min_tokens: workload.min_tokens,
            seed: workload.seed,
        },
        max_connections: max_connections.max(1),
        connection: connection(target.connection.as_ref()),
        trace_context: match target.trace_context {
            plan::TraceContext::W3c => TraceContextMode::W3c,
            plan::TraceContext::Off => TraceContextMode::Off,
        },
        tools: workload.tools.as_ref().map(tool_settings),
        cancel: workload
            .cancel
            .as_ref()
            .map(|c| cancel_settings(c, workload.seed.unwrap_or(0))),
        // Set by the phase when its workload checks replies.
        keep_replies: false,
    })
}

/// A workload's cancellations as the client takes them.
pub fn cancel_settings(cancel: &plan::Cancel, seed: u64) -> client::CancelSettings {
    let point = match cancel.after {
        plan::CancelAfter::Tokens(n) => client::CancelPoint::Deltas(u64::from(n)),
        plan::CancelAfter::Time(time) => client::CancelPoint::Time(time.0),
    };
    let from = cancel.from.map(|d| d.0).unwrap_or_default();
    client::CancelSettings::new(cancel.fraction.0, point, from, seed)
}

/// [`request_config`] for `target` resolved against the working directory, at `base_url`:
/// for library use and tests that hold a target but no plan file.
pub fn client_config(
    target: &Target,
    base_url: String,
    workload: &Workload,
    max_connections: usize,
) -> Result<ClientConfig, ClientError> {
    let endpoint = resolve(target, Path::new(""))?.at(base_url);
    request_config(&endpoint, target, workload, max_connections)
}

/// The API key from the environment variable the target names.
fn api_key(target: &Target) -> Result<Option<String>, ClientError> {
    let Some(var) = &target.api_key_env else {
        return Ok(None);
    };
    match std::env::var(var) {
        Ok(key) if !key.is_empty() => Ok(Some(key)),
        Ok(_) | Err(std::env::VarError::NotPresent) => Err(ClientError(format!(
            "the API key variable {var} is not set; export it or remove api_key_env"
        ))),
        Err(std::env::VarError::NotUnicode(_)) => Err(ClientError(format!(
            "the API key variable {var} does not hold valid UTF-8"
        ))),
    }
}

/// The tools a workload offers: its definitions or the built-in set, and its choice.
pub fn tool_settings(tools: &plan::Tools) -> client::ToolSettings {
    client::ToolSettings {
        definitions: tools
            .definitions
            .clone()
            .unwrap_or_else(crate::workload::builtin_tools),
        choice: tools.choice.map(|choice| {
            serde_json::Value::String(
                match choice {
                    plan::ToolChoice::Auto => "auto",
                    plan::ToolChoice::Required => "required",
                    plan::ToolChoice::None => "none",
                }
                .into(),
            )
        }),
    }
}

/// The target's request-id header; a name `validate` accepted always parses.
fn request_id_settings(target: &Target) -> RequestIdSettings {
    let mut settings = RequestIdSettings::default();
    let Some(spec) = &target.request_id else {
        return settings;
    };
    if let Some(name) = spec
        .header
        .as_deref()
        .and_then(|h| HeaderName::from_bytes(h.as_bytes()).ok())
    {
        settings.header = name;
    }
    settings.format = match spec.format {
        plan::RequestIdForm::Uuid => RequestIdFormat::Uuid,
        plan::RequestIdForm::Plain => RequestIdFormat::Plain,
        plan::RequestIdForm::Off => RequestIdFormat::Off,
    };
    settings
}

/// The target's `tls:` settings with relative paths resolved against `plan_dir`.
fn tls_settings(target: &Target, plan_dir: &Path) -> TlsSettings {
    let Some(tls) = &target.tls else {
        return TlsSettings::default();
    };
    let path = |p: &Option<String>| p.as_ref().map(|p| plan_dir.join(p));
    TlsSettings {
        ca_cert: path(&tls.ca_cert),
        insecure_skip_verify: tls.insecure_skip_verify,
        client_cert: path(&tls.client_cert),
        client_key: path(&tls.client_key),
        server_name: tls.server_name.clone(),
    }
}

/// What the certificate check being off means, printed at the start and kept in the report.
pub const INSECURE_WARNING: &str = "tls.insecure_skip_verify is set: the server's certificate is \
     not checked, so the connection is encrypted but not authenticated";

/// How an HTTP/2 target's requests use connections, as the report states it.
pub const HTTP2_CONNECTIONS: &str = "HTTP/2: every request of a phase is a stream on one \
     shared connection (up to the server's stream limit); with connection.reuse false, one \
     connection per request";

/// Per target: how it is reached beyond its URL, for the report.
pub fn endpoint_facts(plan: &Plan) -> BTreeMap<String, EndpointFacts> {
    plan.targets
        .iter()
        .filter_map(|(name, target)| {
            let https = target
                .base_url
                .as_deref()
                .is_some_and(|u| u.starts_with("https://"));
            let tls = target.tls.as_ref();
            let skip = tls.is_some_and(|t| t.insecure_skip_verify);
            let http2 = target.http == Some(plan::TargetHttp::Http2);
            let facts = EndpointFacts {
                http: http2.then(|| HTTP2_CONNECTIONS.to_string()),
                unix_socket: target.unix_socket.clone(),
                proxy: target.proxy.as_deref().map(super::redact::redact_url),
                tls_verified: https.then_some(!skip),
                client_certificate: tls.is_some_and(|t| t.client_cert.is_some()),
                api_key_header: target.api_key_header.clone(),
                warnings: if skip && https {
                    vec![INSECURE_WARNING.to_string()]
                } else {
                    Vec::new()
                },
            };
            (facts != EndpointFacts::default()).then(|| (name.clone(), facts))
        })
        .collect()
}

/// `plan` with the values of its targets' secret headers replaced by [`REDACTED`], and any
/// `vars` value that holds one of them too: what a report may keep of a plan.
pub fn redact_plan(
    plan: &Plan,
    vars: &IndexMap<String, serde_json::Value>,
) -> (Plan, IndexMap<String, serde_json::Value>) {
    let mut plan = plan.clone();
    let mut secrets = super::redact::plan_url_secrets(&plan);
    for target in plan.targets.values_mut() {
        let metrics = target.metrics.as_mut().map(|m| m.urls_mut());
        for url in target
            .base_url
            .iter_mut()
            .chain(metrics.into_iter().flatten())
        {
            *url = super::redact::redact_url(url);
        }
        for (name, value) in target.headers.iter_mut() {
            if is_secret_header(name) && !value.is_empty() {
                secrets.push(std::mem::replace(value, REDACTED.to_string()));
            }
        }
    }
    let redact_vars = |vars: &IndexMap<String, serde_json::Value>| {
        vars.iter()
            .map(|(name, value)| {
                let text = value.to_string();
                let holds_secret = secrets.iter().any(|s| text.contains(s.as_str()));
                let value = if holds_secret {
                    serde_json::Value::String(REDACTED.to_string())
                } else {
                    value.clone()
                };
                (name.clone(), value)
            })
            .collect::<IndexMap<_, _>>()
    };
    let vars = redact_vars(vars);
    // The plan keeps its own copy of `vars`; it may quote the same secrets.
    plan.vars = redact_vars(&plan.vars);
    (plan, vars)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn config_reads_key_merges_body_and_maps_settings() {
        let mut target = Target {
            base_url: Some("http://127.0.0.1:1/v1".into()),
            model: Some("m".into()),
            api: plan::Api::Completions,
            // Any variable that is always set stands in for a key variable.
            api_key_env: Some("PATH".into()),
            connection: Some(plan::TargetConnection {
                reuse: Some(false),
                idle_timeout: Some(plan::HumanDuration(Duration::from_secs(2))),
                warm: None,
            }),
            ..Default::default()
        };
        target.headers.insert("X-A".into(), "1".into());
        target.body.insert("top_k".into(), serde_json::json!(5));
        let mut workload = Workload {
            temperature: Some(0.0),
            ignore_eos: Some(true),
            ..Default::default()
        };
        workload.body.insert("top_k".into(), serde_json::json!(7));
        let cfg = client_config(&target, "http://x/v1".into(), &workload, 0).expect("config");
        assert_eq!(
            cfg.endpoint.api_key.as_deref(),
            std::env::var("PATH").ok().as_deref()
        );
        assert_eq!(cfg.api, client::Api::Completions);
        assert_eq!(cfg.body["top_k"], 7);
        assert_eq!(cfg.sampling.ignore_eos, Some(true));
        assert_eq!(cfg.max_connections, 1);
        assert_eq!(
            cfg.endpoint.headers,
            vec![("X-A".to_string(), "1".to_string())]
        );
        assert!(!cfg.connection.reuse);
        assert_eq!(cfg.connection.idle_timeout, Duration::from_secs(2));

        target.api_key_env = Some("SERVEBENCH_SURELY_UNSET_VARIABLE_1".into());
        let err = client_config(&target, "http://x/v1".into(), &workload, 1)
            .expect_err("unset key variable");
        assert!(
            err.to_string()
                .contains("SERVEBENCH_SURELY_UNSET_VARIABLE_1")
        );
        target.model = None;
        target.api_key_env = None;
        assert!(client_config(&target, "http://x/v1".into(), &workload, 1).is_err());
    }

    #[test]
    fn model_name_is_decided_once() {
        let mut target = Target::default();
        assert_eq!(model_name(&target), None);
        target.simulator = Some(Default::default());
        assert_eq!(model_name(&target).as_deref(), Some("sim"));
        target.simulator = Some(crate::sim::SimConfig {
            model: Some("tiny".into()),
            ..Default::default()
        });
        assert_eq!(model_name(&target).as_deref(), Some("tiny"));
        target.model = Some("named".into());
        assert_eq!(model_name(&target).as_deref(), Some("named"));
    }

    #[test]
    fn defaults_keep_connections_below_server_keep_alive() {
        let settings = connection(None);
        assert!(settings.reuse);
        assert!(settings.idle_timeout < Duration::from_secs(5));
    }
}
