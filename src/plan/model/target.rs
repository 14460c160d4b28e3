//! A plan's targets: where requests go and how they get there (TLS, HTTP version, proxy,
//! socket, connection reuse, timeouts, metrics endpoints).

mod metrics;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{HumanDuration, TokenizerSpec};
pub use crate::api::Api;
use crate::sim::SimConfig;
pub use metrics::{MetricsEndpoint, MetricsRole, TargetMetrics};

/// An endpoint to benchmark: a remote `base_url`, or the embedded `simulator`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// Base URL including `/v1`, e.g. `http://127.0.0.1:8000/v1`. Exclusive with `simulator`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Run the embedded simulator on loopback for this target. Exclusive with `base_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulator: Option<SimConfig>,
    #[serde(default)]
    pub api: Api,
    /// Model name sent in requests; a simulator target defaults to `sim`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Name of the environment variable holding the API key (never the key itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Send the API key as is in this header (e.g. `api-key`, `x-api-key`) instead of
    /// `Authorization: Bearer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_header: Option<String>,
    /// TLS towards an `https` base URL: extra CA, client certificate, server name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TargetTls>,
    /// HTTP version: `"1.1"` (default; pooled connections, one request each at a time) or
    /// `"2"` (ALPN `h2` over TLS, prior knowledge in clear; all requests share one connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<TargetHttp>,
    /// Connect to this Unix socket (relative to the plan file) instead of the base URL's host
    /// and port; the URL, `http://`, still gives the path and `Host` header. (`socket`, its old
    /// name, is still read.)
    #[serde(default, alias = "socket", skip_serializing_if = "Option::is_none")]
    pub unix_socket: Option<String>,
    /// Reach the target through this HTTP proxy (`http://host:port`): a `CONNECT` tunnel for
    /// an `https` base URL, absolute-form requests for an `http` one. Environment proxy
    /// variables are never used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    /// Extra HTTP headers.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Timeouts>,
    /// Prometheus metrics scraped before and after each phase: the server's endpoint, or a
    /// gateway's and its replicas' (`metrics_url`, the old name of the one-URL form, is still
    /// read).
    #[serde(
        default,
        alias = "metrics_url",
        deserialize_with = "metrics::read",
        skip_serializing_if = "Option::is_none"
    )]
    pub metrics: Option<TargetMetrics>,
    /// Also scrape the metrics endpoints this often during each measured window (default
    /// `1s`, at least `100ms`; `off` or `0` for never): the report's gauge ranges and means
    /// come from those samples, with a time series of requests running and waiting, KV-cache
    /// usage, token and request rates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_interval: Option<crate::plan::MetricsInterval>,
    /// How prompts for this target are counted in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<TokenizerSpec>,
    /// Extra request body fields (`chat_template_kwargs`, `reasoning_effort`, …).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub body: serde_json::Map<String, Value>,
    /// How connections to the target are kept between requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<TargetConnection>,
    /// The request-id header each request carries (default `x-request-id` holding a UUID
    /// derived from the readable id, which the report keeps beside it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<TargetRequestId>,
    /// The W3C `traceparent` header each request carries: `w3c` (default; its trace id is
    /// kept in the record) or `off`.
    #[serde(default, skip_serializing_if = "TraceContext::is_default")]
    pub trace_context: TraceContext,
    /// What an hour of the deployment costs: each phase then reports its price per million
    /// output tokens and per million tokens. Not part of the deployment's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<crate::plan::TargetCost>,
    /// The power gauge in the target's metrics (default `DCGM_FI_DEV_POWER_USAGE`, watts,
    /// summed over its devices): each phase then reports mean watts and joules per output
    /// token and per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<crate::plan::TargetPower>,
}

/// Whether requests carry a W3C `traceparent` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceContext {
    /// A `traceparent` whose trace id is derived from the run and the request index.
    #[default]
    W3c,
    /// No trace context header.
    Off,
}

impl TraceContext {
    fn is_default(&self) -> bool {
        *self == TraceContext::W3c
    }
}

/// Which header carries each request's id, and in what form.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetRequestId {
    /// Header name (default `x-request-id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// `uuid` (default), `plain` or `off`.
    #[serde(default)]
    pub format: RequestIdForm,
}

/// What the request-id header holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RequestIdForm {
    /// A UUID (version-4 layout) derived from the readable id, the same on every rerun:
    /// accepted by servers that validate the header (FastAPI request-id middlewares).
    #[default]
    Uuid,
    /// The readable id, `<run>-<phase>-<n>`.
    Plain,
    /// No request-id header.
    Off,
}

/// TLS towards a target. Paths are relative to the plan file; files are read when the run
/// starts, and their contents never appear in a report, journal or error.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetTls {
    /// PEM file of CA certificates trusted besides the system's and the bundled web roots
    /// (an internal CA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_cert: Option<String>,
    /// Accept any server certificate: still encrypted, no longer authenticated. Prints a
    /// warning and is recorded in the report.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_verify: bool,
    /// PEM client certificate, for servers that require one (mutual TLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cert: Option<String>,
    /// PEM private key of `client_cert`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key: Option<String>,
    /// Name checked against the server's certificate (and sent as SNI) instead of the URL's
    /// host, e.g. when connecting by IP address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
}

/// A target's HTTP version, written as a string (`"1.1"` or `"2"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum TargetHttp {
    #[serde(rename = "1.1")]
    Http1,
    #[serde(rename = "2")]
    Http2,
}

/// How connections to a target are kept between requests.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetConnection {
    /// Keep connections open for later requests (default true); `false` opens a new
    /// connection for every request, to measure that case on purpose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<bool>,
    /// How long an idle connection is kept for the next request (default `4s`, below common
    /// server keep-alive timeouts); a server's shorter `Keep-Alive: timeout=` wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<HumanDuration>,
    /// Connections opened before each phase's measured window, so its first requests do not
    /// pay connection set-up. Default: a closed loop's concurrency, none for an open loop or a
    /// replay (their warmup windows leave the connections they needed); `0` turns it off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm: Option<u32>,
}

/// Per-request time limits.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Timeouts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<HumanDuration>,
    /// From request start to the response headers and first byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte: Option<HumanDuration>,
    /// Longest allowed gap between two chunks of a stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<HumanDuration>,
    /// Whole request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<HumanDuration>,
}
