//! The HTTP/1.1 connection pool: connect (TCP, TLS), hand out idle connections that are still
//! usable, take them back only when the server allows it.
//!
//! The pool is ours rather than a general HTTP client's so that each request knows whether it
//! ran on a reused connection and whether any response byte arrived on it: that is what the
//! retry rule in `exchange.rs` needs.

use std::io;
use std::pin::Pin;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::HeaderMap;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{CONNECTION, HeaderValue};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::config::{ClientError, ConnectionSettings};
use super::tls::{TlsSettings, describe_handshake_error};

/// Where connections go: host, port and, for `https`, the TLS set-up.
pub(crate) struct Origin {
    host: String,
    port: u16,
    /// The `Host` header every request carries.
    pub host_header: HeaderValue,
    tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
}

impl Origin {
    pub fn new(url: &reqwest::Url, tls: &TlsSettings) -> Result<Self, ClientError> {
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
        let tls = match url.scheme() {
            "https" => {
                let name = tls.server_name(&host)?;
                let config = tls.client_config(&[b"http/1.1"])?;
                Some((tokio_rustls::TlsConnector::from(Arc::new(config)), name))
            }
            _ => None,
        };
        Ok(Origin {
            host,
            port,
            host_header,
            tls,
        })
    }
}

/// A plain or TLS socket that counts the bytes read from it.
struct Stream {
    inner: Inner,
    read: Arc<AtomicU64>,
}

enum Inner {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = match &mut self.inner {
            Inner::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Inner::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        };
        if let Poll::Ready(Ok(())) = polled {
            let n = (buf.filled().len() - before) as u64;
            self.read.fetch_add(n, Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.inner {
            Inner::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Inner::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.inner {
            Inner::Plain(s) => Pin::new(s).poll_flush(cx),
            Inner::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.inner {
            Inner::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Inner::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// One HTTP/1.1 connection, lent to one request at a time.
pub(crate) struct Lease {
    pub sender: SendRequest<Full<Bytes>>,
    /// Bytes read from the socket so far, TLS records included.
    read: Arc<AtomicU64>,
    /// Opened for the request holding it (not taken from the pool).
    pub fresh: bool,
    /// Requests the server still allows on it (`Keep-Alive: max=`).
    remaining: Option<u32>,
    /// How long opening it took; taken by the first request on it.
    pub setup: Option<ConnectionSetup>,
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
}

/// A connection waiting in the pool.
struct Idle {
    lease: Lease,
    /// When the client stops trusting the server to keep it open.
    deadline: Instant,
}

/// Why a connection could not be made.
#[derive(Debug)]
pub(crate) enum ConnectError {
    Timeout(Duration),
    Failed(String),
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
        let close = headers
            .get_all(CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|token| token.trim().eq_ignore_ascii_case("close"));
        let mut parsed = headers
            .get("keep-alive")
            .and_then(|v| v.to_str().ok())
            .map(parse_keep_alive)
            .unwrap_or_default();
        parsed.close = close;
        parsed
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

/// Idle connections for one target, most recently used last.
pub(crate) struct Pool {
    origin: Origin,
    settings: ConnectionSettings,
    connect_timeout: Option<Duration>,
    max_idle: usize,
    idle: Mutex<Vec<Idle>>,
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
            idle: Mutex::new(Vec::new()),
        }
    }

    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The most recently used idle connection still open and within its deadline.
    pub fn checkout(&self) -> Option<Lease> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        while let Some(entry) = idle.pop() {
            if entry.deadline > now && !entry.lease.sender.is_closed() {
                return Some(entry.lease);
            }
        }
        None
    }

    /// Give a connection back after its response body ended; `server` is what the response's
    /// headers said. Dropped instead when reuse is off or the server will close it.
    pub fn checkin(&self, mut lease: Lease, server: ServerKeepAlive) {
        if !self.settings.reuse || server.close || lease.sender.is_closed() {
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
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() >= self.max_idle {
            idle.remove(0);
        }
        idle.push(Idle {
            lease,
            deadline: Instant::now() + keep,
        });
    }

    /// Open a new connection: TCP (no Nagle), TLS for `https`, the HTTP/1.1 handshake.
    pub async fn connect(&self) -> Result<Lease, ConnectError> {
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
        let origin = &self.origin;
        let at = format!("{}:{}", origin.host, origin.port);
        let started = Instant::now();
        let tcp = TcpStream::connect((origin.host.as_str(), origin.port))
            .await
            .map_err(|e| ConnectError::Failed(format!("tcp connect to {at}: {e}")))?;
        let connected = Instant::now();
        // Small request writes and SSE reads must not wait on Nagle + delayed ACK.
        let _ = tcp.set_nodelay(true);
        let mut setup = ConnectionSetup {
            connect_ms: ms_between(started, connected),
            tls_ms: None,
        };
        let inner = match &origin.tls {
            None => Inner::Plain(tcp),
            Some((connector, name)) => {
                let tls = connector.connect(name.clone(), tcp).await.map_err(|e| {
                    ConnectError::Failed(describe_handshake_error(&e, &origin.host))
                })?;
                setup.tls_ms = Some(ms_between(connected, Instant::now()));
                Inner::Tls(Box::new(tls))
            }
        };
        let read = Arc::new(AtomicU64::new(0));
        let stream = Stream {
            inner,
            read: read.clone(),
        };
        let (sender, connection) = http1::Builder::new()
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| ConnectError::Failed(format!("HTTP handshake with {at}: {e}")))?;
        // The connection task ends when the socket closes or every handle to it is dropped.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Lease {
            sender,
            read,
            fresh: true,
            remaining: None,
            setup: Some(setup),
        })
    }
}

fn ms_between(from: Instant, to: Instant) -> f64 {
    to.duration_since(from).as_secs_f64() * 1000.0
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
