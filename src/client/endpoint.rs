//! One target as it resolves: where it is (base URL, socket, proxy), how it is trusted (TLS),
//! and what every request to it carries (API key, headers, HTTP version, request id). Benchmark
//! requests and side traffic (model discovery, metrics scrapes, hooks, `/tokenize`) all start
//! from the same [`Endpoint`].

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};

use super::request_id::RequestIdSettings;
use super::setup_error::ClientError;
use super::tls::TlsSettings;

/// A target's connection settings, resolved once (paths joined to the plan's directory, the
/// API key read) by the runner.
#[derive(Clone, Default, PartialEq)]
pub struct Endpoint {
    /// Base URL including `/v1`, without a trailing `/`; empty for a simulator not yet started.
    pub base_url: String,
    /// Roots, client certificate and server name for `https`.
    pub tls: TlsSettings,
    /// Connect to this Unix socket instead of the URL's host and port.
    pub unix_socket: Option<PathBuf>,
    /// An `http://` proxy to connect through; environment proxies are never used.
    pub proxy: Option<String>,
    /// Extra headers every request carries.
    pub headers: Vec<(String, String)>,
    /// The API key's value; never logged.
    pub api_key: Option<String>,
    /// Send the key as is in this header instead of `Authorization: Bearer`.
    pub api_key_header: Option<String>,
    pub http: HttpVersion,
    /// Which header carries each request's id, and in what form.
    pub request_id: RequestIdSettings,
}

/// Which HTTP the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpVersion {
    /// HTTP/1.1: one request at a time per connection, idle connections pooled.
    #[default]
    Http1,
    /// HTTP/2 (ALPN `h2` over TLS, prior knowledge in clear): every request a stream on one
    /// shared connection.
    Http2,
}

/// `headers` as `Debug` output shows them: secret values redacted.
pub(crate) fn shown_headers(headers: &[(String, String)]) -> Vec<(&str, &str)> {
    headers
        .iter()
        .map(|(name, value)| {
            let shown = if is_secret_header(name) {
                REDACTED
            } else {
                value.as_str()
            };
            (name.as_str(), shown)
        })
        .collect()
}

/// Header names whose values are secret: redacted in `Debug` output, error messages and the
/// report's copy of the plan.
pub fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "auth", "key", "token", "secret", "cookie", "password", "session",
    ]
    .iter()
    .any(|s| name.contains(s))
}

/// What stands in for a secret wherever one would have been shown.
pub const REDACTED: &str = "<redacted>";

/// The headers that give a request access to a target: its API key (as `Authorization: Bearer`
/// or in `api_key_header`) and its own headers, secrets marked sensitive. Benchmark requests
/// and side traffic (model discovery, `/tokenize`) send the same ones.
pub fn access_headers(
    api_key: Option<&str>,
    api_key_header: Option<&str>,
    extra: &[(String, String)],
) -> Result<HeaderMap, ClientError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = api_key {
        let (name, text) = match api_key_header {
            Some(name) => (
                HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| ClientError(format!("invalid api_key_header {name:?}")))?,
                key.to_string(),
            ),
            None => (header::AUTHORIZATION, format!("Bearer {key}")),
        };
        let mut value = HeaderValue::from_str(&text).map_err(|_| {
            ClientError("the API key holds characters not allowed in a header".into())
        })?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    for (name, value) in extra {
        let header_name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ClientError(format!("invalid header name {name:?}")))?;
        let mut header_value = HeaderValue::from_str(value).map_err(|_| {
            ClientError(format!(
                "header {name:?} has a value not allowed in a header"
            ))
        })?;
        if is_secret_header(name) {
            header_value.set_sensitive(true);
        }
        headers.insert(header_name, header_value);
    }
    Ok(headers)
}

impl Endpoint {
    /// The same endpoint at another base URL (a simulator's, once it listens).
    pub fn at(&self, base_url: String) -> Endpoint {
        Endpoint {
            base_url,
            ..self.clone()
        }
    }

    /// An HTTP client for side traffic with this endpoint's TLS settings, proxy and socket;
    /// environment proxies are ignored, as the benchmark's own requests ignore them.
    pub fn side_client(&self, timeout: Option<Duration>) -> Result<reqwest::Client, ClientError> {
        let mut builder = reqwest::Client::builder().no_proxy();
        if let Some(timeout) = timeout {
            builder = builder.timeout(timeout);
        }
        if let Some(socket) = &self.unix_socket {
            builder = builder.unix_socket(socket.as_path());
        }
        if let Some(url) = &self.proxy {
            builder = builder.proxy(
                reqwest::Proxy::all(url).map_err(|_| ClientError("invalid proxy URL".into()))?,
            );
        }
        // Always our TLS config, so side traffic trusts the same roots (system bundle included)
        // as the benchmark's own requests.
        builder
            .use_preconfigured_tls(self.tls.client_config(&[b"h2", b"http/1.1"])?)
            .build()
            .map_err(|e| ClientError(format!("cannot build an HTTP client: {e}")))
    }

    /// The API key and headers, as benchmark requests send them.
    pub fn access_headers(&self) -> Result<reqwest::header::HeaderMap, ClientError> {
        access_headers(
            self.api_key.as_deref(),
            self.api_key_header.as_deref(),
            &self.headers,
        )
    }

    /// Where the served models are listed.
    pub fn models_url(&self) -> String {
        format!("{}/models", self.base_url.trim_end_matches('/'))
    }

    /// The model ids `/models` lists, in its order, asked through `http` (a
    /// [`side_client`](Self::side_client)) with the key: a server started with an API key
    /// refuses `/models` without it.
    pub async fn list_models(
        &self,
        http: &reqwest::Client,
        timeout: Duration,
    ) -> Result<Vec<String>, ModelsError> {
        let unusable = |why: String| ModelsError::Unusable(why);
        let headers = self.access_headers().map_err(|e| unusable(e.to_string()))?;
        let response = http
            .get(self.models_url())
            .headers(headers)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| self.unreachable(&e, timeout))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| unusable(format!("sent no body ({e})")))?;
        if !status.is_success() {
            return Err(unusable(format!("answered {status}")));
        }
        let listing: serde_json::Value =
            serde_json::from_str(&text).map_err(|_| unusable("did not return JSON".to_string()))?;
        Ok(listing["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["id"].as_str().map(str::to_string))
            .collect())
    }
}

impl Endpoint {
    /// Why a side request got no answer: a refused connection says what it usually means.
    fn unreachable(&self, err: &reqwest::Error, timeout: Duration) -> ModelsError {
        if super::failure::is_refused(err) {
            let (what, at) = match (&self.unix_socket, &self.proxy) {
                (Some(path), _) => ("server", format!("unix socket {}", path.display())),
                (None, Some(_)) => ("proxy", "the target's proxy".to_string()),
                (None, None) => ("server", self.origin()),
            };
            return ModelsError::Unreachable(super::failure::refused_message(what, &at));
        }
        if err.is_timeout() {
            return ModelsError::Unreachable(format!("did not answer within {timeout:?}"));
        }
        ModelsError::Unreachable(format!(
            "did not answer ({})",
            super::failure::error_chain(err)
        ))
    }

    /// `scheme://host:port` of the base URL, as a person would type it.
    fn origin(&self) -> String {
        reqwest::Url::parse(&self.base_url)
            .map(|url| url.origin().ascii_serialization())
            .unwrap_or_else(|_| self.base_url.clone())
    }
}

/// Why `/models` gave no list of models. The text completes "`<models URL>` …".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelsError {
    /// Nothing answered: the connection was refused, failed or timed out.
    Unreachable(String),
    /// Something answered, but not with a list of models (a status, no JSON).
    Unusable(String),
}

impl fmt::Display for ModelsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelsError::Unreachable(why) | ModelsError::Unusable(why) => f.write_str(why),
        }
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers = shown_headers(&self.headers);
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("tls", &self.tls)
            .field("unix_socket", &self.unix_socket)
            .field("proxy", &self.proxy.as_ref().map(|_| "<set>"))
            .field("headers", &headers)
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .field("api_key_header", &self.api_key_header)
            .field("http", &self.http)
            .field("request_id", &self.request_id)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_key_secret_headers_and_the_proxy() {
        let endpoint = Endpoint {
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: Some("sk-hidden".into()),
            headers: vec![
                ("X-Api-Key".into(), "hidden-too".into()),
                ("X-Team".into(), "bench".into()),
            ],
            proxy: Some("http://user:pw@proxy:3128".into()),
            ..Endpoint::default()
        };
        let text = format!("{endpoint:?}");
        for secret in ["sk-hidden", "hidden-too", "pw@proxy"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(text.contains("bench"), "{text}");
    }

    #[test]
    fn access_headers_carry_the_key_and_headers() {
        let endpoint = Endpoint {
            api_key: Some("k1".into()),
            api_key_header: Some("api-key".into()),
            headers: vec![("X-Team".into(), "bench".into())],
            ..Endpoint::default()
        };
        let headers = endpoint.access_headers().expect("headers");
        assert_eq!(headers["api-key"], "k1");
        assert_eq!(headers["x-team"], "bench");
        assert!(headers.get("authorization").is_none());
        let moved = endpoint.at("http://elsewhere/v1".into());
        assert_eq!(moved.base_url, "http://elsewhere/v1");
        assert_eq!(moved.api_key, endpoint.api_key);
        assert_eq!(moved.models_url(), "http://elsewhere/v1/models");
    }
}
