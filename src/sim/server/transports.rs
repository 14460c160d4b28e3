//! Transports beyond HTTP/1.1 over TCP: HTTP/2 with prior knowledge (h2c) on the same port,
//! recognised by its connection preface, and a Unix socket listener that relays to the
//! loopback port, so clients can be tested over both.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::{TcpStream, UnixListener};
use tokio::task::JoinHandle;

use super::routes::route;
use crate::sim::SimConfig;
use crate::sim::state::Shared;

/// What every HTTP/2 connection starts with (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Whether the client opened with the HTTP/2 preface; the bytes stay unread.
pub(super) async fn opens_with_h2_preface(stream: &TcpStream) -> bool {
    let mut buf = [0u8; PREFACE.len()];
    // The preface comes in one write in practice; a short peek is retried a few times.
    for _ in 0..50 {
        match stream.peek(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) if buf[..n] != PREFACE[..n] => return false,
            Ok(n) if n == PREFACE.len() => return true,
            Ok(_) => tokio::time::sleep(Duration::from_millis(1)).await,
        }
    }
    false
}

/// Serve one h2c connection: every stream is routed as an HTTP/1.1 request is.
pub(super) async fn serve_h2c(
    stream: TcpStream,
    shared: Arc<Shared>,
    peer: Option<crate::sim::control::Peer>,
) {
    // Unread on HTTP/2: a reset fault does not cut a connection other streams share.
    let reset = Arc::new(AtomicBool::new(false));
    let service = service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
        if let Some(peer) = peer {
            request.extensions_mut().insert(peer);
        }
        let (shared, reset) = (shared.clone(), reset.clone());
        async move { route(shared, reset, request).await }
    });
    let _ = http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .max_concurrent_streams(1024)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// A simulator reachable on a Unix socket; dropped, the listener stops and the socket file is
/// removed; [`UnixSim::shutdown`] also stops the simulator.
pub struct UnixSim {
    handle: Option<super::SimHandle>,
    pub path: PathBuf,
    relay: JoinHandle<()>,
}

impl UnixSim {
    /// The simulator behind the socket (its loopback address, its counters).
    pub fn handle(&self) -> Option<&super::SimHandle> {
        self.handle.as_ref()
    }

    pub async fn shutdown(mut self) {
        self.relay.abort();
        if let Some(handle) = self.handle.take() {
            handle.shutdown().await;
        }
    }
}

impl Drop for UnixSim {
    fn drop(&mut self) {
        self.relay.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Start a simulator and listen on the Unix socket `path`, each connection relayed byte for
/// byte to the simulator's loopback port.
pub async fn serve_unix(config: SimConfig, path: &Path) -> io::Result<UnixSim> {
    let (addr, handle) = super::serve(config).await?;
    let listener = UnixListener::bind(path)?;
    let relay = tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(mut server) = TcpStream::connect(addr).await {
                    let _ = server.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    Ok(UnixSim {
        handle: Some(handle),
        path: path.to_path_buf(),
        relay,
    })
}
