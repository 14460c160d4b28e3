//! A run's targets: models discovered, client settings checked, simulators started, and the
//! endpoint each phase's requests go to.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use crate::plan;
use crate::schedule::PhaseSettings;
use crate::sim::{self, SimHandle};

use super::options::RunError;

/// A server target that names no model gets the first one its `/models` lists, as serving
/// engines expose exactly the model they serve; the report's plan then names it.
pub(super) async fn discover_models(
    plan: &mut plan::Plan,
    only: &[String],
    plan_dir: &Path,
) -> Result<(), RunError> {
    let used: Vec<String> = plan
        .phases
        .iter()
        .filter(|p| only.is_empty() || p.name.as_ref().is_some_and(|n| only.contains(n)))
        .filter_map(|p| p.target.clone().or_else(|| plan.defaults.target.clone()))
        .collect();
    for (name, target) in plan.targets.iter_mut() {
        let Some(base_url) = target.base_url.clone() else {
            continue;
        };
        if super::endpoint::model_name(target).is_some() || !used.contains(name) {
            continue;
        }
        let tls = super::endpoint::tls_settings(target, plan_dir);
        let socket = target.socket.as_ref().map(|p| plan_dir.join(p));
        let http = super::side::side_client(
            &tls,
            target.proxy.as_deref(),
            socket.as_deref(),
            Some(Duration::from_secs(10)),
        )
        .map_err(|e| RunError::InvalidInput(format!("target `{name}`: {e}")))?;
        let url = format!("{}/models", base_url.trim_end_matches('/'));
        let shown = super::redact::redact_url(&url);
        let secrets = super::redact::url_secrets(&url);
        let not_found = |why: String| {
            RunError::InvalidInput(super::redact::redact_text(
                format!(
                    "target `{name}` names no model and {shown} {why}; set `model:` on the target"
                ),
                &secrets,
            ))
        };
        // The key too: a server started with an API key refuses `/models` without it.
        let headers: Vec<(String, String)> = target
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let access = super::endpoint::api_key(target)
            .and_then(|key| {
                crate::client::access_headers(
                    key.as_deref(),
                    target.api_key_header.as_deref(),
                    &headers,
                )
            })
            .map_err(|e| RunError::InvalidInput(format!("target `{name}`: {e}")))?;
        let response = http
            .get(&url)
            .headers(access)
            .send()
            .await
            .map_err(|e| not_found(format!("did not answer ({e})")))?;
        let text = response
            .text()
            .await
            .map_err(|e| not_found(format!("sent no body ({e})")))?;
        let listing: serde_json::Value = serde_json::from_str(&text)
            .map_err(|_| not_found("did not return JSON".to_string()))?;
        let id = listing["data"][0]["id"]
            .as_str()
            .ok_or_else(|| not_found("listed no model".to_string()))?;
        eprintln!("target `{name}`: using model `{id}` from {shown}");
        target.model = Some(id.to_string());
    }
    Ok(())
}

/// Client settings are checked for every phase (API key variables set, a model named, TLS
/// files readable) before anything is sent; a target that skips certificate checks is
/// warned about once.
pub(super) fn check_client_settings(
    phases: &[PhaseSettings<'_>],
    plan_dir: &Path,
) -> Result<(), RunError> {
    let mut warned = std::collections::HashSet::new();
    for phase in phases {
        let invalid = |e: crate::client::ClientError| {
            RunError::InvalidInput(format!("target `{}`: {e}", phase.target_name))
        };
        super::endpoint::client_config(phase.target, String::new(), phase.workload, 1)
            .map_err(invalid)?;
        let tls = super::endpoint::tls_settings(phase.target, plan_dir);
        if phase.target.tls.is_some() {
            tls.client_config(&[]).map_err(invalid)?;
        }
        if tls.insecure_skip_verify && warned.insert(phase.target_name) {
            eprintln!(
                "warning: target `{}`: {}",
                phase.target_name,
                super::endpoint::INSECURE_WARNING
            );
        }
    }
    Ok(())
}

pub(super) type Simulators = HashMap<String, (SocketAddr, SimHandle)>;

pub(super) async fn start_simulators(phases: &[PhaseSettings<'_>]) -> Result<Simulators, RunError> {
    let mut simulators = Simulators::new();
    for phase in phases {
        if let Some(config) = &phase.target.simulator
            && !simulators.contains_key(phase.target_name)
        {
            let (addr, handle) = sim::serve(config.clone()).await.map_err(|e| {
                RunError::Failed(format!(
                    "cannot start the simulator for target `{}`: {e}",
                    phase.target_name
                ))
            })?;
            simulators.insert(phase.target_name.to_string(), (addr, handle));
        }
    }
    Ok(simulators)
}

/// Where a phase's requests go.
#[derive(Debug, Clone)]
pub(super) struct Endpoint {
    pub base_url: String,
    pub metrics_url: Option<String>,
    /// A gateway's and its replicas' endpoints; when set, scraped instead of `metrics_url`.
    pub metrics: Vec<crate::plan::MetricsEndpoint>,
    /// Scrape during the measured window this often, for the report's time series.
    pub metrics_interval: Option<std::time::Duration>,
    pub model: String,
}

pub(super) fn endpoint_for(phase: &PhaseSettings<'_>, simulators: &Simulators) -> Endpoint {
    let target = phase.target;
    match simulators.get(phase.target_name) {
        Some((addr, _)) => Endpoint {
            base_url: format!("http://{addr}/v1"),
            metrics_url: Some(format!("http://{addr}/metrics")),
            metrics: Vec::new(),
            metrics_interval: target.metrics_interval.map(|i| i.0),
            model: super::endpoint::model_name(target).unwrap_or_default(),
        },
        None => Endpoint {
            base_url: target
                .base_url
                .clone()
                .unwrap_or_default()
                .trim_end_matches('/')
                .to_string(),
            metrics_url: target.metrics_url.clone(),
            metrics: target.metrics.clone(),
            metrics_interval: target.metrics_interval.map(|i| i.0),
            model: super::endpoint::model_name(target).unwrap_or_default(),
        },
    }
}
