//! Side traffic to a target (model discovery, metrics scrapes, hooks) over the same TLS
//! settings, proxy and socket as its benchmark requests.

use std::path::Path;

use crate::client::{ClientError, TlsSettings};
use crate::plan::Plan;

use super::endpoint::tls_settings;

/// An HTTP client for a target's side traffic (model discovery, metrics scrapes, hooks) with
/// its TLS settings, proxy and socket; environment proxies are ignored, as the benchmark's own
/// requests ignore them.
pub fn side_client(
    tls: &TlsSettings,
    proxy: Option<&str>,
    socket: Option<&Path>,
    timeout: Option<std::time::Duration>,
) -> Result<reqwest::Client, ClientError> {
    let mut builder = reqwest::Client::builder().no_proxy();
    if let Some(timeout) = timeout {
        builder = builder.timeout(timeout);
    }
    if let Some(socket) = socket {
        builder = builder.unix_socket(socket);
    }
    let builder = match proxy {
        Some(url) => builder
            .proxy(reqwest::Proxy::all(url).map_err(|_| ClientError("invalid proxy URL".into()))?),
        None => builder,
    };
    // Always our TLS config, so side traffic trusts the same roots (system bundle included)
    // as the benchmark's own requests.
    builder
        .use_preconfigured_tls(tls.client_config(&[b"h2", b"http/1.1"])?)
        .build()
        .map_err(|e| ClientError(format!("cannot build an HTTP client: {e}")))
}

/// Side traffic that speaks for a phase's client: the same TLS, proxy, socket, API key and
/// headers as its benchmark requests (`/tokenize` calibration).
pub fn side_access(
    config: &crate::client::ClientConfig,
    timeout: Option<std::time::Duration>,
) -> Result<(reqwest::Client, reqwest::header::HeaderMap), ClientError> {
    let client = side_client(
        &config.tls,
        config.proxy.as_deref(),
        config.unix_socket.as_deref(),
        timeout,
    )?;
    let headers = crate::client::access_headers(
        config.api_key.as_deref(),
        config.api_key_header.as_deref(),
        &config.headers,
    )?;
    Ok((client, headers))
}

/// Side-traffic clients: one per target that sets TLS, a proxy or a socket, else the shared
/// plain one.
pub struct SideClients {
    plain: reqwest::Client,
    by_target: std::collections::HashMap<String, reqwest::Client>,
}

impl SideClients {
    pub fn new(plan: &Plan, plan_dir: &Path) -> Result<SideClients, ClientError> {
        let mut by_target = std::collections::HashMap::new();
        for (name, target) in &plan.targets {
            if target.tls.is_none() && target.proxy.is_none() && target.socket.is_none() {
                continue;
            }
            let socket = target.socket.as_ref().map(|p| plan_dir.join(p));
            let client = side_client(
                &tls_settings(target, plan_dir),
                target.proxy.as_deref(),
                socket.as_deref(),
                None,
            )
            .map_err(|e| ClientError(format!("target `{name}`: {e}")))?;
            by_target.insert(name.clone(), client);
        }
        Ok(SideClients {
            plain: side_client(&TlsSettings::default(), None, None, None)?,
            by_target,
        })
    }

    pub fn for_target(&self, name: &str) -> &reqwest::Client {
        self.by_target.get(name).unwrap_or(&self.plain)
    }
}
