//! Accepting connections and serving each one over HTTP/1.1, with keep-alive closes and resets.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::header::HeaderValue;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::routes::route;
use crate::sim::keepalive::{Activity, Busy, Tracked};
use crate::sim::state::Shared;

pub(super) async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Small SSE writes must not wait on Nagle + delayed ACK.
                    let _ = stream.set_nodelay(true);
                    connections.spawn(serve_connection(stream, shared.clone()));
                }
                // e.g. out of file descriptors: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    connections.shutdown().await;
}

/// The accepted socket; when `reset` is set, closing it sends RST instead of FIN.
struct ConnIo {
    inner: TcpStream,
    reset: Arc<AtomicBool>,
}

impl Drop for ConnIo {
    fn drop(&mut self) {
        if self.reset.load(Relaxed) {
            let _ = self.inner.set_zero_linger();
        }
    }
}

impl AsyncRead for ConnIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for ConnIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let peer = stream.peer_addr().ok().map(crate::sim::control::Peer);
    if super::transports::opens_with_h2_preface(&stream).await {
        return super::transports::serve_h2c(stream, shared, peer).await;
    }
    let reset = Arc::new(AtomicBool::new(false));
    let io = TokioIo::new(ConnIo {
        inner: stream,
        reset: reset.clone(),
    });
    let activity = Arc::new(Activity::new());
    let service = {
        let (shared, activity) = (shared.clone(), activity.clone());
        service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            if let Some(peer) = peer {
                request.extensions_mut().insert(peer);
            }
            let busy = Busy::start(activity.clone());
            let (shared, reset) = (shared.clone(), reset.clone());
            async move {
                let mut response = route(shared.clone(), reset, request).await?;
                if shared.settings.close_after_response {
                    // What llama.cpp's server announces, though it closes after each response.
                    response
                        .headers_mut()
                        .insert("keep-alive", HeaderValue::from_static("timeout=5, max=100"));
                }
                Ok::<_, io::Error>(response.map(|body| Tracked { body, _busy: busy }))
            }
        })
    };
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        // Idle keep-alive connections stay open unless `keep_alive_timeout` says otherwise: a
        // benchmark may pause between phases.
        .header_read_timeout(None)
        .keep_alive(true)
        .serve_connection(io, service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        () = activity.close_due(&shared.settings) => {}
    }
    // Unannounced: no `Connection: close` header, the socket just closes once idle. The
    // grace lets a response's last bytes go out; a connection still idle after it is dropped.
    connection.as_mut().graceful_shutdown();
    let flushed = tokio::time::timeout(CLOSE_GRACE, connection.as_mut()).await;
    if flushed.is_err() && activity.is_busy() {
        // A request that slipped in before the close is served to its end.
        let _ = connection.await;
    }
}

/// How long a connection being closed may take to flush before its socket is dropped.
const CLOSE_GRACE: Duration = Duration::from_millis(200);
