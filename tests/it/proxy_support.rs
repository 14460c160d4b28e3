//! A tiny loopback HTTP proxy for the tests: `CONNECT host:port` opens a tunnel; a request in
//! absolute form (`POST http://host:port/path`) is relayed to that host as it came. It counts
//! both, so a test can tell its traffic went through it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

#[derive(Debug, Default)]
pub struct ProxyCounts {
    pub tunnels: AtomicUsize,
    pub absolute_form: AtomicUsize,
}

/// A running proxy; stops when dropped.
pub struct TestProxy {
    pub addr: SocketAddr,
    pub counts: Arc<ProxyCounts>,
    task: JoinHandle<()>,
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestProxy {
    pub async fn start() -> TestProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let counts = Arc::new(ProxyCounts::default());
        let shared = counts.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(relay(client, shared.clone()));
            }
        });
        TestProxy { addr, counts, task }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Read the first request head, then connect where it points and relay both ways.
async fn relay(mut client: TcpStream, counts: Arc<ProxyCounts>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match client.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&head)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let mut parts = line.split_whitespace();
    let (method, target) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let authority = if method == "CONNECT" {
        counts.tunnels.fetch_add(1, Ordering::Relaxed);
        target.to_string()
    } else if let Some(rest) = target.strip_prefix("http://") {
        counts.absolute_form.fetch_add(1, Ordering::Relaxed);
        rest.split('/').next().unwrap_or_default().to_string()
    } else {
        let _ = client
            .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    };
    let Ok(mut server) = TcpStream::connect(authority.as_str()).await else {
        let _ = client
            .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    };
    let _ = server.set_nodelay(true);
    let _ = client.set_nodelay(true);
    if method == "CONNECT" {
        let _ = client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await;
    } else if server.write_all(&head).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
}
