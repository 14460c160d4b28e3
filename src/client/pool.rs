//! The connection pool: connect (TCP or a Unix socket, TLS), hand out idle HTTP/1.1
//! connections that are still usable and take them back only when the server allows it, or
//! share one HTTP/2 connection among all requests.
//!
//! The pool is ours rather than a general HTTP client's so that each request knows whether it
//! ran on a reused connection and whether any response byte arrived on it: that is what the
//! retry rule in `exchange.rs` needs.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper::header::{CONNECTION, HeaderName, HeaderValue};
use hyper::{HeaderMap, Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::{TcpStream, UnixStream};

use super::config::{ClientConfig, ConnectionSettings};
use super::endpoint::HttpVersion;
use super::failure::{ConnectError, ms_since};
use super::proxy::{Proxy, tunnel};
use super::setup_error::ClientError;
use super::socket::{Inner, Stream};
use super::tls::describe_handshake_error;

/// Where connections go: host, port (or a Unix socket) and, for `https`, the TLS set-up.
pub(crate) struct Origin {
    host: String,
    port: u16,
    /// Connect here instead of `host:port`.
    unix_socket: Option<PathBuf>,
    /// Connect through this proxy: a tunnel for `https`, absolute-form requests for `http`.
    proxy: Option<Proxy>,
    /// `host:port` as a `CONNECT` names it.
    authority: String,
    /// HTTP/2: prior knowledge in clear, ALPN `h2` over TLS.
    pub http2: bool,
    /// The `Host` header every request carries.
    pub host_header: HeaderValue,
    tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
}

impl Origin {
    pub fn new(url: &reqwest::Url, config: &ClientConfig) -> Result<Self, ClientError> {
        let (tls, http, unix_socket) = (
            &config.endpoint.tls,
            config.endpoint.http,
            config.endpoint.unix_socket.clone(),
        );
        let proxy = config
            .endpoint
            .proxy
            .as_deref()
            .map(Proxy::parse)
            .transpose()?;
        let bad = |why: &str| ClientError(format!("invalid base_url {:?}: {why}", url.as_str()));
        // An IPv6 literal comes bracketed, as the URL writes it.
        let host = url
            .host_str()
            .ok_or_else(|| bad("no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = url.port_or_known_default().ok_or_else(|| bad("no port"))?;
        let authority = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            (None, _) => return Err(bad("no host")),
        };
        let host_header =
            HeaderValue::from_str(&authority).map_err(|_| bad("host not allowed in a header"))?;
        let http2 = http == HttpVersion::Http2;
        if proxy.is_some() && unix_socket.is_some() {
            return Err(bad("a Unix socket target cannot go through a proxy"));
        }
        if proxy.is_some() && http2 && url.scheme() == "http" {
            return Err(bad("HTTP/2 through a proxy needs an https:// base_url"));
        }
        let tls = match url.scheme() {
            "https" if unix_socket.is_some() => {
                return Err(bad("a Unix socket target takes an http:// base_url"));
            }
            "https" => {
                let name = tls.server_name(&host)?;
                let alpn: &[&[u8]] = if http2 { &[b"h2"] } else { &[b"http/1.1"] };
                let config = tls.client_config(alpn)?;
                Some((tokio_rustls::TlsConnector::from(Arc::new(config)), name))
            }
            _ => None,
        };
        Ok(Origin {
            host,
            port,
            unix_socket,
            proxy,
            authority: format!("{}:{port}", url.host_str().unwrap_or_default()),
            http2,
            host_header,
            tls,
        })
    }
}

/// Sends requests on one connection.
pub(crate) enum Sender {
    Http1(http1::SendRequest<Full<Bytes>>),
    /// Cloned for each request: the streams share the connection.
    Http2(http2::SendRequest<Full<Bytes>>),
}

impl Sender {
    pub async fn send(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, hyper::Error> {
        match self {
            Sender::Http1(s) => {
                s.ready().await?;
                s.send_request(request).await
            }
            Sender::Http2(s) => {
                s.ready().await?;
                s.send_request(request).await
            }
        }
    }

    pub fn is_closed(&self) -> bool {
        match self {
            Sender::Http1(s) => s.is_closed(),
            Sender::Http2(s) => s.is_closed(),
        }
    }
}

/// One connection lent to one request: an HTTP/1.1 one exclusively, an HTTP/2 one shared.
pub(crate) struct Lease {
    pub sender: Sender,
    /// Bytes read from the socket so far, TLS records included.
    read: Arc<AtomicU64>,
    /// Opened for the request holding it (not taken from the pool).
    pub fresh: bool,
    /// Requests the server still allows on it (`Keep-Alive: max=`).
    remaining: Option<u32>,
    /// How long opening it took; taken by the first request on it.
    pub setup: Option<ConnectionSetup>,
    /// The last request's deadline timer, for the next one on this connection.
    pub timer: Option<super::failure::Timer>,
}

/// A new connection's set-up times, milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct ConnectionSetup {
    /// TCP connect (name resolution included).
    pub connect_ms: f64,
    /// TLS handshake, for `https`.
    pub tls_ms: Option<f64>,
}

impl Lease {
    pub fn bytes_read(&self) -> u64 {
        self.read.load(Relaxed)
    }

    /// Another stream on the same HTTP/2 connection.
    fn share(&self) -> Option<Lease> {
        let Sender::Http2(sender) = &self.sender else {
            return None;
        };
        Some(Lease {
            sender: Sender::Http2(sender.clone()),
            read: self.read.clone(),
            fresh: false,
            remaining: None,
            setup: None,
            timer: None,
        })
    }

    pub fn is_multiplexed(&self) -> bool {
        matches!(self.sender, Sender::Http2(_))
    }
}

/// A connection waiting in the pool.
struct Idle {
    lease: Lease,
    /// When the client stops trusting the server to keep it open.
    deadline: Instant,
}

/// What a response's headers say about keeping its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerKeepAlive {
    /// `Connection: close`.
    pub close: bool,
    /// `Keep-Alive: timeout=N`.
    pub timeout: Option<Duration>,
    /// `Keep-Alive: max=N`: requests still allowed on the connection.
    pub max: Option<u32>,
}

impl ServerKeepAlive {
    pub fn from_headers(headers: &HeaderMap) -> Self {
        const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
        // One pass over the few headers a response has costs less than two hashed lookups.
        let mut close = false;
        let mut keep_alive = None;
        for (name, value) in headers {
            if *name == CONNECTION {
                close |= value.to_str().is_ok_and(|v| {
                    v.split(',')
                        .any(|token| token.trim().eq_ignore_ascii_case("close"))
                });
            } else if *name == KEEP_ALIVE && keep_alive.is_none() {
                // The first `Keep-Alive` header counts, as a lookup would find it.
                keep_alive = Some(value.to_str().map(parse_keep_alive).unwrap_or_default());
            }
        }
        ServerKeepAlive {
            close,
            ..keep_alive.unwrap_or_default()
        }
    }
}

/// `timeout=5, max=100` (either part optional, any order, unknown parts ignored).
pub fn parse_keep_alive(value: &str) -> ServerKeepAlive {
    let mut out = ServerKeepAlive::default();
    for part in value.split(',') {
        let Some((key, number)) = part.split_once('=') else {
            continue;
        };
        let number = number.trim().trim_matches('"');
        match key.trim().to_ascii_lowercase().as_str() {
            "timeout" => {
                out.timeout = number
                    .parse::<u64>()
                    .ok()
                    .map(Duration::from_secs)
                    .or(out.timeout);
            }
            "max" => out.max = number.parse().ok().or(out.max),
            _ => {}
        }
    }
    out
}

/// Idle connections for one target, least recently used first.
///
/// Checkout takes the least recently used one, so under steady load every pooled connection
/// carries requests and none sits idle past its deadline: taking the most recently used would
/// leave the deepest ones idle until they expire, and the next burst would reopen them.
pub(crate) struct Pool {
    origin: Origin,
    settings: ConnectionSettings,
    connect_timeout: Option<Duration>,
    max_idle: usize,
    idle: Mutex<VecDeque<Idle>>,
    /// HTTP/2 with reuse: the one connection every request opens a stream on.
    shared: tokio::sync::Mutex<Option<Lease>>,
}

impl Pool {
    pub fn new(
        origin: Origin,
        settings: ConnectionSettings,
        connect_timeout: Option<Duration>,
        max_idle: usize,
    ) -> Self {
        Pool {
            origin,
            settings,
            connect_timeout,
            max_idle: max_idle.max(1),
            idle: Mutex::new(VecDeque::new()),
            shared: tokio::sync::Mutex::new(None),
        }
    }

    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The least recently used idle connection still open and within its deadline at `now`;
    /// expired ones met on the way are dropped.
    pub fn checkout(&self, now: Instant) -> Option<Lease> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(entry) = idle.pop_front() {
            if entry.deadline > now && !entry.lease.sender.is_closed() {
                return Some(entry.lease);
            }
        }
        None
    }

    /// Give a connection back after its response body ended at `now`; `server` is what the
    /// response's headers said. Dropped instead when reuse is off or the server will close it.
    pub fn checkin(&self, mut lease: Lease, server: ServerKeepAlive, now: Instant) {
        let shared = lease.is_multiplexed();
        if shared || !self.settings.reuse || server.close || lease.sender.is_closed() {
            return;
        }
        if let Some(max) = server.max {
            lease.remaining = Some(max);
        }
        if let Some(remaining) = lease.remaining.as_mut() {
            if *remaining == 0 {
                return;
            }
            *remaining -= 1;
        }
        let keep = server.timeout.map_or(self.settings.idle_timeout, |t| {
            t.min(self.settings.idle_timeout)
        });
        if keep.is_zero() {
            return;
        }
        lease.fresh = false;
        self.keep_idle(lease, now + keep);
    }

    fn keep_idle(&self, lease: Lease, deadline: Instant) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() >= self.max_idle {
            idle.pop_front();
        }
        idle.push_back(Idle { lease, deadline });
    }

    /// Open connections until `count` wait in the pool (one shared connection for HTTP/2), so
    /// the first requests of a window do not pay connection set-up. Returns how many wait
    /// ready, those a warmup left included; on a failure, those opened so far stay and the
    /// error is returned.
    pub async fn warm(&self, count: usize) -> (usize, Option<ConnectError>) {
        if !self.settings.reuse || count == 0 || self.settings.idle_timeout.is_zero() {
            return (0, None);
        }
        if self.origin.http2 {
            return match self.connect().await {
                Ok(_) => (1, None),
                Err(e) => (0, Some(e)),
            };
        }
        let waiting = self.idle.lock().unwrap_or_else(|p| p.into_inner()).len();
        let wanted = count.min(self.max_idle).saturating_sub(waiting);
        let opens = (0..wanted).map(|_| self.open_in_time());
        let mut ready = waiting.min(count);
        let mut failure = None;
        for result in futures_util::future::join_all(opens).await {
            match result {
                Ok(mut lease) => {
                    // Not part of any request's latency: no request reports its set-up.
                    (lease.fresh, lease.setup) = (false, None);
                    self.keep_idle(lease, Instant::now() + self.settings.idle_timeout);
                    ready += 1;
                }
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        (ready, failure)
    }

    /// Open a new connection: TCP (no Nagle), TLS for `https`, the HTTP/1.1 handshake.
    pub async fn connect(&self) -> Result<Lease, ConnectError> {
        if !(self.origin.http2 && self.settings.reuse) {
            return self.open_in_time().await;
        }
        // One HTTP/2 connection, opened by the first request; later ones wait for it.
        let mut shared = self.shared.lock().await;
        if let Some(lease) = shared.as_ref().filter(|l| !l.sender.is_closed()) {
            return Ok(lease.share().expect("an HTTP/2 lease"));
        }
        let lease = self.open_in_time().await?;
        *shared = lease.share();
        Ok(lease)
    }

    async fn open_in_time(&self) -> Result<Lease, ConnectError> {
        let open = self.open();
        match self.connect_timeout {
            None => open.await,
            Some(limit) => match tokio::time::timeout(limit, open).await {
                Ok(result) => result,
                Err(_) => Err(ConnectError::Timeout(limit)),
            },
        }
    }

    async fn open(&self) -> Result<Lease, ConnectError> {
        let (inner, setup) = self.open_socket().await?;
        let at = self.origin.shown();
        let read = Arc::new(AtomicU64::new(0));
        let io = TokioIo::new(Stream {
            inner,
            read: read.clone(),
        });
        let handshake_failed =
            |e: hyper::Error| ConnectError::Failed(format!("HTTP handshake with {at}: {e}"));
        // Each connection task ends when the socket closes or every handle to it is dropped.
        let sender = if self.origin.http2 {
            let (sender, connection) = http2::Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                .handshake(io)
                .await
                .map_err(handshake_failed)?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            Sender::Http2(sender)
        } else {
            let (sender, connection) = http1::Builder::new()
                .handshake(io)
                .await
                .map_err(handshake_failed)?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            Sender::Http1(sender)
        };
        Ok(Lease {
            sender,
            read,
            fresh: true,
            remaining: None,
            setup: Some(setup),
            timer: None,
        })
    }

    /// TCP (no Nagle) or the Unix socket, then TLS for `https`, timed.
    async fn open_socket(&self) -> Result<(Inner, ConnectionSetup), ConnectError> {
        let origin = &self.origin;
        let at = origin.shown();
        let started = Instant::now();
        if let Some(path) = &origin.unix_socket {
            let unix = UnixStream::connect(path)
                .await
                .map_err(|e| connect_error(&e, "server", &at))?;
            let setup = ConnectionSetup {
                connect_ms: ms_since(started, Instant::now()),
                tls_ms: None,
            };
            return Ok((Inner::Unix(unix), setup));
        }
        let (host, port, what) = match &origin.proxy {
            Some(proxy) => (proxy.host.as_str(), proxy.port, "proxy"),
            None => (origin.host.as_str(), origin.port, "server"),
        };
        let mut tcp = TcpStream::connect((host, port)).await.map_err(|e| {
            let scheme = if origin.tls.is_some() && origin.proxy.is_none() {
                "https"
            } else {
                "http"
            };
            connect_error(&e, what, &format!("{scheme}://{host}:{port}"))
        })?;
        if origin.proxy.is_some() && origin.tls.is_some() {
            tunnel(&mut tcp, &origin.authority)
                .await
                .map_err(ConnectError::Failed)?;
        }
        let connected = Instant::now();
        // Small request writes and SSE reads must not wait on Nagle + delayed ACK.
        let _ = tcp.set_nodelay(true);
        let mut setup = ConnectionSetup {
            connect_ms: ms_since(started, connected),
            tls_ms: None,
        };
        let Some((connector, name)) = &origin.tls else {
            return Ok((Inner::Plain(tcp), setup));
        };
        let tls = connector
            .connect(name.clone(), tcp)
            .await
            .map_err(|e| ConnectError::Failed(describe_handshake_error(&e, &origin.host)))?;
        setup.tls_ms = Some(ms_since(connected, Instant::now()));
        if origin.http2 && tls.get_ref().1.alpn_protocol() != Some(b"h2".as_slice()) {
            return Err(ConnectError::Failed(format!(
                "{at} did not agree to HTTP/2 in the TLS handshake (ALPN); set http: \"1.1\""
            )));
        }
        Ok((Inner::Tls(Box::new(tls)), setup))
    }
}

/// A failed connect to the `what` (`server` or `proxy`) at `at`; a refused one says what it
/// usually means.
fn connect_error(err: &std::io::Error, what: &str, at: &str) -> ConnectError {
    if err.kind() == std::io::ErrorKind::ConnectionRefused {
        ConnectError::Refused(super::failure::refused_message(what, at))
    } else if err.to_string().contains("lookup address") {
        // getaddrinfo's failure, which std reports with no kind of its own.
        ConnectError::Unresolved(format!("connect to {at}: {err}"))
    } else {
        ConnectError::Failed(format!("connect to {at}: {err}"))
    }
}

impl Origin {
    /// Where connections go, for messages.
    fn shown(&self) -> String {
        match (&self.unix_socket, &self.proxy) {
            (Some(path), _) => format!("unix socket {}", path.display()),
            (None, Some(proxy)) => format!("{}:{} through {}", self.host, self.port, proxy.shown()),
            (None, None) => format!("{}:{}", self.host, self.port),
        }
    }

    /// Requests name the whole URL: HTTP/2 (its pseudo-headers), or plain HTTP through a
    /// proxy (absolute form).
    pub fn absolute_uri(&self) -> bool {
        self.http2 || (self.proxy.is_some() && self.tls.is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_alive_header_parsing() {
        let ka = parse_keep_alive("timeout=5, max=100");
        assert_eq!(ka.timeout, Some(Duration::from_secs(5)));
        assert_eq!(ka.max, Some(100));
        let ka = parse_keep_alive(" MAX=0 ,Timeout=\"2\", foo=bar, junk");
        assert_eq!(
            (ka.timeout, ka.max),
            (Some(Duration::from_secs(2)), Some(0))
        );
        assert_eq!(parse_keep_alive("timeout=soon"), ServerKeepAlive::default());
        assert_eq!(parse_keep_alive(""), ServerKeepAlive::default());
    }

    #[test]
    fn connection_close_is_seen_among_other_tokens() {
        let mut headers = HeaderMap::new();
        headers.insert(CONNECTION, HeaderValue::from_static("keep-alive, Close"));
        headers.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        let ka = ServerKeepAlive::from_headers(&headers);
        assert!(ka.close);
        assert_eq!(ka.timeout, Some(Duration::from_secs(5)));
        headers.insert(CONNECTION, HeaderValue::from_static("keep-alive"));
        assert!(!ServerKeepAlive::from_headers(&headers).close);
    }
}
