//! Where a run came from beyond its plan: the plan's git checkout, and each target's server
//! as it states itself (`/models`, `/version`, the `Server` header, `/metrics`).

use std::path::Path;
use std::time::Duration;

use indexmap::IndexMap;

use crate::plan::LoadedPlan;
use crate::report::{Provenance, RepositoryState, SaltUsed, ServerIdentity};
use crate::schedule::PhaseSettings;

use super::targets::{PhaseTarget, Simulators, Targets};

/// How long each identity request may take; a server that does not answer is not described.
const IDENTITY_TIMEOUT: Duration = Duration::from_secs(5);

/// The run's provenance before its first phase: the plan's checkout, each target the phases
/// use as its server states itself, and the run's salt.
pub(super) async fn run_provenance(
    loaded: &LoadedPlan,
    phases: &[PhaseSettings<'_>],
    targets: &Targets,
    simulators: &Simulators,
    salt: &str,
) -> Provenance {
    let mut servers: Vec<ServerIdentity> = Vec::new();
    for phase in phases {
        if servers.iter().any(|s| s.target == phase.target_name) {
            continue;
        }
        if let Ok(target) = targets.for_phase(phase, simulators) {
            let simulator = phase.target.simulator.is_some();
            servers.push(identify(phase.target_name, &target, simulator).await);
        }
    }
    Provenance {
        repository: repository(&loaded.source_path),
        servers,
        salt: Some(salt.to_string()),
    }
}

/// How `phase` salts its prompts in a run whose targets are `servers`.
pub(super) fn phase_salt(phase: &PhaseSettings<'_>, servers: &[ServerIdentity]) -> SaltUsed {
    let engine = servers
        .iter()
        .find(|s| s.target == phase.target_name)
        .and_then(|s| s.engine.as_deref());
    // Anthropic's Messages API has no `cache_salt`: its prompts carry the salt in the text.
    let takes = super::salt::engine_takes_cache_salt(engine)
        && phase.target.api != crate::plan::Api::Messages;
    super::salt::salt_used(phase.workload.salt, takes)
}

/// The git checkout `plan_path` is in: `HEAD`, whether tracked files have changes, the
/// branch. `None` outside a checkout or without `git`.
pub(super) fn repository(plan_path: &Path) -> Option<RepositoryState> {
    let dir = match plan_path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "HEAD"])?;
    let dirty = !git(&["status", "--porcelain", "--untracked-files=no"])?.is_empty();
    let branch = git(&["rev-parse", "--abbrev-ref", "HEAD"]).filter(|b| b != "HEAD");
    Some(RepositoryState {
        commit,
        dirty,
        branch,
    })
}

/// `target` as its server states itself; every field it does not send stays empty.
pub(super) async fn identify(name: &str, target: &PhaseTarget, simulator: bool) -> ServerIdentity {
    let mut identity = ServerIdentity {
        target: name.to_string(),
        model: (!target.model.is_empty()).then(|| target.model.clone()),
        ..ServerIdentity::default()
    };
    let headers = target.endpoint.access_headers().unwrap_or_default();
    let get = |url: String| {
        target
            .side
            .get(url)
            .headers(headers.clone())
            .timeout(IDENTITY_TIMEOUT)
            .send()
    };
    if let Ok(response) = get(target.endpoint.models_url()).await {
        identity.server_header = response
            .headers()
            .get(reqwest::header::SERVER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        if let Some(text) = bounded_text(response).await
            && let Ok(listing) = serde_json::from_str::<serde_json::Value>(&text)
        {
            identity.engine = listing["data"][0]["owned_by"]
                .as_str()
                .and_then(engine_of_owner);
        }
    }
    let origin = origin(&target.endpoint.base_url);
    if let Some(version) = json_of(get(format!("{origin}/version")).await).await {
        identity.engine_version = version["version"].as_str().map(str::to_string);
    }
    if identity.engine_version.is_none()
        && let Some(props) = json_of(get(format!("{origin}/props")).await).await
    {
        // llama.cpp's server states its build in `/props`.
        identity.engine_version = props["build_info"].as_str().map(str::to_string);
        if identity.engine_version.is_some() && identity.engine.is_none() {
            identity.engine = Some("llama.cpp".to_string());
        }
    }
    if identity.engine.is_none() {
        identity.engine = identity
            .server_header
            .as_deref()
            .and_then(|h| h.split('/').next())
            .and_then(engine_of_owner);
    }
    if simulator {
        identity.engine = Some("servebench-sim".to_string());
    }
    if let Some(url) = &target.metrics_url
        && let Ok(text) = super::scrape::fetch(&target.side, url).await
    {
        let (uptime_s, info) = metrics_identity(&text, unix_now_s());
        identity.uptime_s = uptime_s;
        identity.info = info;
    }
    identity
}

async fn json_of(response: Result<reqwest::Response, reqwest::Error>) -> Option<serde_json::Value> {
    let response = response.ok().filter(|r| r.status().is_success())?;
    serde_json::from_str(&bounded_text(response).await?).ok()
}

/// The most an identity answer is read: a model list or a version is a few KiB; a server
/// that answers with more is not read to its end.
const IDENTITY_BODY_CAP: usize = 1 << 20;

/// The body as text, or none when it is larger than [`IDENTITY_BODY_CAP`] or breaks off.
async fn bounded_text(mut response: reqwest::Response) -> Option<String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        if body.len() + chunk.len() > IDENTITY_BODY_CAP {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    String::from_utf8(body).ok()
}

fn unix_now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `scheme://host:port` of a base URL.
fn origin(base_url: &str) -> String {
    reqwest::Url::parse(base_url)
        .map(|url| url.origin().ascii_serialization())
        .unwrap_or_else(|_| base_url.trim_end_matches("/v1").to_string())
}

/// The engine an `owned_by` (or `Server` header product) names.
fn engine_of_owner(owner: &str) -> Option<String> {
    let engine = match owner.to_ascii_lowercase().as_str() {
        "vllm" => "vllm",
        "sglang" => "sglang",
        "llamacpp" | "llama.cpp" => "llama.cpp",
        "tgi" | "text-generation-inference" => "tgi",
        "servebench" => "servebench-sim",
        _ => return None,
    };
    Some(engine.to_string())
}

/// From a `/metrics` exposition: the server's uptime at `now_s` (from
/// `process_start_time_seconds`), and the labels of its `*_info` series (vLLM's config
/// gauges), each as `<series>.<label>`.
pub(super) fn metrics_identity(text: &str, now_s: f64) -> (Option<f64>, IndexMap<String, String>) {
    let mut uptime_s = None;
    let mut info = IndexMap::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix("process_start_time_seconds")
            && let Some(start) = rest
                .split_whitespace()
                .last()
                .and_then(|v| v.parse::<f64>().ok())
        {
            uptime_s = Some((now_s - start).max(0.0));
            continue;
        }
        let Some((name, labelled)) = line.split_once('{') else {
            continue;
        };
        if !name.ends_with("_info") {
            continue;
        }
        let Some(end) = labelled.rfind('}') else {
            continue;
        };
        for (label, value) in super::scrape::labels::pairs(&labelled[..end]) {
            info.insert(format!("{name}.{label}"), value);
        }
    }
    (uptime_s, info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_and_info_labels_come_from_the_exposition() {
        let text = "# HELP process_start_time_seconds Start time\n\
                    process_start_time_seconds 1000.5\n\
                    vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\"} 1.0\n\
                    vllm:num_requests_running{model_name=\"m\"} 0\n";
        let (uptime, info) = metrics_identity(text, 1100.5);
        assert_eq!(uptime, Some(100.0));
        assert_eq!(
            info.get("vllm:cache_config_info.block_size")
                .map(String::as_str),
            Some("16")
        );
        assert_eq!(info.len(), 2);
    }

    #[test]
    fn engines_are_named_from_their_owner_field() {
        assert_eq!(engine_of_owner("vllm").as_deref(), Some("vllm"));
        assert_eq!(engine_of_owner("llamacpp").as_deref(), Some("llama.cpp"));
        assert_eq!(engine_of_owner("someone"), None);
    }
}
