//! A run's targets: each resolved once, models discovered, client settings checked,
//! simulators started, and the endpoint each phase's requests go to.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use crate::client;
use crate::plan;
use crate::schedule::PhaseSettings;
use crate::sim::{self, SimHandle};

use super::options::RunError;

/// How long model discovery waits for `/models`.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// One target as a run resolved it, with the HTTP client its side traffic (discovery, scrapes,
/// hooks) goes through.
struct Resolved {
    endpoint: client::Endpoint,
    side: reqwest::Client,
}

/// The endpoints of the targets a run's phases use, each resolved once when the run starts.
pub(super) struct Targets {
    by_name: HashMap<String, Resolved>,
}

impl Targets {
    /// Resolve each of `names` (targets of `plan`) against `plan_dir`: TLS files read, API
    /// key variables read, proxies parsed.
    pub(super) fn resolve<'n>(
        plan: &plan::Plan,
        names: impl IntoIterator<Item = &'n str>,
        plan_dir: &Path,
    ) -> Result<Targets, RunError> {
        let mut by_name = HashMap::new();
        for name in names {
            if by_name.contains_key(name) {
                continue;
            }
            let Some(target) = plan.targets.get(name) else {
                continue;
            };
            let invalid =
                |e: client::ClientError| RunError::InvalidInput(format!("target `{name}`: {e}"));
            let endpoint = super::endpoint::resolve(target, plan_dir).map_err(invalid)?;
            let side = endpoint.side_client(None).map_err(invalid)?;
            by_name.insert(name.to_string(), Resolved { endpoint, side });
        }
        Ok(Targets { by_name })
    }

    fn get(&self, name: &str) -> Result<&Resolved, RunError> {
        self.by_name
            .get(name)
            .ok_or_else(|| RunError::Failed(format!("target `{name}` was never resolved")))
    }
}

/// A server target that names no model gets the first one its `/models` lists, as serving
/// engines expose exactly the model they serve; the report's plan then names it.
pub(super) async fn discover_models(
    plan: &mut plan::Plan,
    targets: &Targets,
    quiet: bool,
) -> Result<(), RunError> {
    for (name, target) in plan.targets.iter_mut() {
        let Some(resolved) = targets.by_name.get(name) else {
            continue;
        };
        if target.base_url.is_none() || super::endpoint::model_name(target).is_some() {
            continue;
        }
        let url = resolved.endpoint.models_url();
        let shown = super::redact::redact_url(&url);
        let secrets = super::redact::url_secrets(&url);
        let redacted = |text: String| super::redact::redact_text(text, &secrets);
        let not_found = |why: String| {
            RunError::InvalidInput(redacted(format!(
                "target `{name}` names no model and {shown} {why}; set `model:` on the target"
            )))
        };
        let models = resolved
            .endpoint
            .list_models(&resolved.side, DISCOVERY_TIMEOUT)
            .await
            .map_err(|e| match e {
                // A server that is not up is not fixed by naming a model.
                client::ModelsError::Unreachable(why) => RunError::Failed(redacted(format!(
                    "target `{name}`: cannot ask {shown} for its model: {why}"
                ))),
                client::ModelsError::Unusable(why) => not_found(why),
            })?;
        let id = models
            .into_iter()
            .next()
            .ok_or_else(|| not_found("listed no model".to_string()))?;
        if !quiet {
            eprintln!("target `{name}`: using model `{id}` from {shown}");
        }
        target.model = Some(id);
    }
    Ok(())
}

/// Before the first phase, every server target the phases use is connected to (TCP, TLS
/// where the URL says so, the HTTP handshake) with the phase's own client settings, sending
/// nothing: a target that cannot be reached stops the run before anything is sent.
pub(super) async fn check_reachable(
    phases: &[PhaseSettings<'_>],
    targets: &Targets,
) -> Result<(), RunError> {
    let mut checked = std::collections::HashSet::new();
    for phase in phases {
        if phase.target.simulator.is_some() || !checked.insert(phase.target_name) {
            continue;
        }
        let endpoint = &targets.get(phase.target_name)?.endpoint;
        // The check opens a connection only: the model it would name is never sent.
        let mut target = phase.target.clone();
        target
            .model
            .get_or_insert_with(|| "reachability".to_string());
        let invalid = |e: client::ClientError| {
            RunError::InvalidInput(format!("target `{}`: {e}", phase.target_name))
        };
        let mut config = super::endpoint::request_config(endpoint, &target, phase.workload, 1)
            .map_err(invalid)?;
        config
            .timeouts
            .connect
            .get_or_insert(super::endpoint::DEFAULT_CONNECT_TIMEOUT);
        let client = client::Client::new(config).map_err(invalid)?;
        if let Err(why) = client.warm_connections(1).await {
            let secrets = super::redact::url_secrets(&endpoint.base_url);
            return Err(RunError::Failed(super::redact::redact_text(
                format!("target `{}`: {why}", phase.target_name),
                &secrets,
            )));
        }
    }
    Ok(())
}

/// Client settings are checked for every phase (a model named, the body and headers usable)
/// before anything is sent; a target that skips certificate checks is warned about once.
pub(super) fn check_client_settings(
    phases: &[PhaseSettings<'_>],
    targets: &Targets,
) -> Result<(), RunError> {
    let mut warned = std::collections::HashSet::new();
    for phase in phases {
        let invalid = |e: client::ClientError| {
            RunError::InvalidInput(format!("target `{}`: {e}", phase.target_name))
        };
        let endpoint = &targets.get(phase.target_name)?.endpoint;
        super::endpoint::request_config(endpoint, phase.target, phase.workload, 1)
            .map_err(invalid)?;
        if endpoint.tls.insecure_skip_verify && warned.insert(phase.target_name) {
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

/// A simulator target's settings, serving the model the target names when the simulator
/// names none: the name the requests carry is the name it serves.
pub(super) fn simulator_config(target: &plan::Target) -> Option<sim::SimConfig> {
    let mut config = target.simulator.clone()?;
    if config.model.is_none() {
        config.model.clone_from(&target.model);
    }
    Some(config)
}

pub(super) async fn start_simulators(phases: &[PhaseSettings<'_>]) -> Result<Simulators, RunError> {
    let mut simulators = Simulators::new();
    for phase in phases {
        if let Some(config) = simulator_config(phase.target)
            && !simulators.contains_key(phase.target_name)
        {
            let (addr, handle) = sim::serve(config).await.map_err(|e| {
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

/// Where a phase's requests go, and what its scrapes and hooks reach.
#[derive(Debug, Clone)]
pub(super) struct PhaseTarget {
    /// The target's endpoint, at the started simulator's address for a simulator target.
    pub endpoint: client::Endpoint,
    /// The HTTP client for the target's side traffic (scrapes, hooks).
    pub side: reqwest::Client,
    /// The target's one metrics endpoint (`metrics: URL`, or a simulator's).
    pub metrics_url: Option<String>,
    /// A gateway's and its replicas' endpoints (`metrics:` as a list).
    pub metrics: Vec<crate::plan::MetricsEndpoint>,
    /// Scrape during the measured window this often (`None`: not at all).
    pub metrics_interval: Option<std::time::Duration>,
    pub model: String,
}

impl Targets {
    pub(super) fn for_phase(
        &self,
        phase: &PhaseSettings<'_>,
        simulators: &Simulators,
    ) -> Result<PhaseTarget, RunError> {
        let target = phase.target;
        let resolved = self.get(phase.target_name)?;
        let (endpoint, metrics_url, metrics) = match simulators.get(phase.target_name) {
            Some((addr, _)) => (
                resolved.endpoint.at(format!("http://{addr}/v1")),
                Some(format!("http://{addr}/metrics")),
                Vec::new(),
            ),
            None => (
                resolved.endpoint.clone(),
                target
                    .metrics
                    .as_ref()
                    .and_then(|m| m.url())
                    .map(str::to_string),
                target
                    .metrics
                    .as_ref()
                    .map_or_else(Vec::new, |m| m.endpoints().to_vec()),
            ),
        };
        Ok(PhaseTarget {
            endpoint,
            side: resolved.side.clone(),
            metrics_url,
            metrics,
            metrics_interval: crate::plan::MetricsInterval::resolve(target.metrics_interval),
            model: super::endpoint::model_name(target).unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ExpandOptions, prepare_from_value};
    use crate::schedule::{Schedule, ScheduleOptions};

    fn loaded() -> plan::LoadedPlan {
        let doc = serde_json::json!({
            "version": 1,
            "name": "resolve",
            "targets": {
                "edge": {
                    "base_url": "https://edge.internal:8443/v1/",
                    "model": "m",
                    // Any variable that is always set stands in for a key variable.
                    "api_key_env": "PATH",
                    "api_key_header": "api-key",
                    "tls": {"ca_cert": "certs/ca.pem", "server_name": "edge.internal"},
                    "proxy": "http://127.0.0.1:3128",
                    "http": "2",
                    "headers": {"X-Team": "bench"},
                    "request_id": {"header": "x-trace", "format": "plain"}
                },
                "local": {"base_url": "http://localhost/v1", "model": "m",
                          "unix_socket": "run/engine.sock"},
                "unused": {"base_url": "http://127.0.0.1:1/v1", "model": "m",
                           "api_key_env": "SERVEBENCH_SURELY_UNSET_VARIABLE_2"}
            },
            "workloads": {"chat": {"input_tokens": 32, "output_tokens": 8}},
            "defaults": {"target": "edge", "workload": "chat"},
            "phases": [
                {"name": "a", "concurrency": 1, "requests": 1},
                {"name": "b", "concurrency": 2, "requests": 1},
                {"name": "c", "target": "local", "concurrency": 1, "requests": 1}
            ],
        });
        match prepare_from_value(doc, "test plan", &ExpandOptions::default()) {
            Ok(loaded) => loaded,
            Err(e) => panic!("test plan is invalid: {e}"),
        }
    }

    fn write_ca(dir: &Path) -> std::path::PathBuf {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = params.self_signed(&key).expect("CA");
        let path = dir.join("certs/ca.pem");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(&path, ca.pem()).expect("write");
        path
    }

    #[test]
    fn a_target_is_resolved_once_with_every_setting() {
        let plan_dir = tempfile::tempdir().expect("dir");
        let ca = write_ca(plan_dir.path());
        let loaded = loaded();
        let options = ScheduleOptions {
            only: &[],
            shard: None,
            start_at: None,
        };
        let schedule = Schedule::new(&loaded.plan, &options).expect("schedule");
        let names = schedule.phases.iter().map(|p| p.target_name);
        // The unused target's unset key variable does not matter: only used ones resolve.
        let targets = Targets::resolve(&loaded.plan, names, plan_dir.path()).expect("resolves");
        assert_eq!(targets.by_name.len(), 2);
        // The CA was read when the target resolved; the phases reuse that, never the file.
        std::fs::remove_file(&ca).expect("remove");
        let simulators = Simulators::new();
        let [a, b] = [&schedule.phases[0], &schedule.phases[1]]
            .map(|phase| targets.for_phase(phase, &simulators).expect("phase target"));
        assert_eq!(a.endpoint, b.endpoint);
        let endpoint = &a.endpoint;
        assert_eq!(endpoint.base_url, "https://edge.internal:8443/v1");
        assert_eq!(endpoint.tls.ca_cert.as_deref(), Some(ca.as_path()));
        assert_eq!(endpoint.tls.server_name.as_deref(), Some("edge.internal"));
        assert_eq!(
            endpoint.api_key.as_deref(),
            std::env::var("PATH").ok().as_deref()
        );
        assert_eq!(endpoint.api_key_header.as_deref(), Some("api-key"));
        assert_eq!(endpoint.proxy.as_deref(), Some("http://127.0.0.1:3128"));
        assert_eq!(endpoint.http, client::HttpVersion::Http2);
        assert_eq!(
            endpoint.headers,
            vec![("X-Team".to_string(), "bench".to_string())]
        );
        assert_eq!(endpoint.request_id.header.as_str(), "x-trace");
        assert_eq!(endpoint.request_id.format, client::RequestIdFormat::Plain);

        let local = targets
            .for_phase(&schedule.phases[2], &simulators)
            .expect("phase target");
        assert_eq!(
            local.endpoint.unix_socket.as_deref(),
            Some(plan_dir.path().join("run/engine.sock").as_path())
        );

        // A phase's client configuration is built from that endpoint.
        let phase = &schedule.phases[1];
        let config =
            super::super::endpoint::request_config(endpoint, phase.target, phase.workload, 2)
                .expect("config");
        assert_eq!(&config.endpoint, endpoint);
        assert_eq!(config.max_connections, 2);

        // Resolving reads the key: a used target whose variable is unset fails up front.
        let err = Targets::resolve(&loaded.plan, ["unused"], plan_dir.path())
            .err()
            .expect("unset key variable");
        assert!(
            err.to_string().contains(
                "target `unused`: the API key variable SERVEBENCH_SURELY_UNSET_VARIABLE_2"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_simulator_serves_its_targets_model_unless_it_names_its_own() {
        let target = |model: Option<&str>, served: Option<&str>| plan::Target {
            model: model.map(str::to_string),
            simulator: Some(sim::SimConfig {
                model: served.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        };
        let served = |t: &plan::Target| simulator_config(t).and_then(|c| c.model);
        assert_eq!(
            served(&target(Some("llama"), None)).as_deref(),
            Some("llama")
        );
        assert_eq!(
            served(&target(Some("llama"), Some("own"))).as_deref(),
            Some("own")
        );
        assert_eq!(
            served(&target(None, None)),
            None,
            "the simulator's default, `sim`"
        );
        assert!(simulator_config(&plan::Target::default()).is_none());
    }
}
