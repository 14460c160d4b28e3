//! How a run reached each target beyond its URL: the facts a reader needs before trusting
//! the connection figures (a certificate check that was skipped, a client certificate).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One target's connection facts; a plain `http` target with defaults has none.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct EndpointFacts {
    /// HTTP/2 targets: how requests used connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<String>,
    /// The Unix socket connected to, as the plan gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_socket: Option<String>,
    /// The HTTP proxy connected through (credentials removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    /// `https` targets: whether the server's certificate was checked (`false` with
    /// `tls.insecure_skip_verify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_verified: Option<bool>,
    /// A client certificate was presented (mutual TLS); its key is never recorded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client_certificate: bool,
    /// The header carrying the API key when it is not `Authorization: Bearer`; the key's
    /// value is never recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_header: Option<String>,
    /// What a reader should know about how the target was reached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}
