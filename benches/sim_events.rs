//! Simulator throughput: SSE events/s with every delay at zero, server on one core.
//!
//! `cargo bench --bench sim_events` (optional args: connections, requests per connection,
//! tokens per request). The server runs on a current-thread runtime on its own thread; a
//! client thread reads raw HTTP/1.1 over loopback and counts `data: ` events.

use std::time::{Duration, Instant};

use servebench::sim::{self, SimConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn arg(index: usize, default: u64) -> u64 {
    std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .nth(index)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

async fn one_request(addr: std::net::SocketAddr, tokens: u64) -> std::io::Result<u64> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let body = format!(
        r#"{{"model":"sim","messages":[{{"role":"user","content":"count events"}}],"max_tokens":{tokens},"ignore_eos":true,"stream":true,"stream_options":{{"include_usage":true}}}}"#
    );
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let finder = memchr::memmem::Finder::new(b"data: ");
    let mut buf = vec![0u8; 256 * 1024];
    let mut carry: Vec<u8> = Vec::new();
    let mut events = 0u64;
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        // Keep a few bytes across reads so a marker split between reads is counted once.
        carry.extend_from_slice(&buf[..n]);
        events += finder.find_iter(&carry).count() as u64;
        let keep = carry.len().min(5);
        let tail = carry[carry.len() - keep..].to_vec();
        carry.clear();
        carry.extend_from_slice(&tail);
    }
    Ok(events)
}

fn main() {
    let connections = arg(0, 4);
    let requests = arg(1, 4);
    let tokens = arg(2, 100_000);
    let config = SimConfig {
        prefill_tok_s: Some(0.0),
        decode_ms_per_token: Some(0.0),
        decode_ms_per_running: Some(0.0),
        jitter: Some(0.0),
        max_model_len: Some(tokens + 1024),
        ..SimConfig::default()
    };
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let (addr, handle) = sim::serve(config).await.expect("simulator starts");
            addr_tx.send(addr).expect("main thread waits");
            let _ = stop_rx.await;
            handle.shutdown().await;
        });
    });
    let addr = addr_rx.recv().expect("server address");
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let started = Instant::now();
    let events: u64 = client.block_on(async move {
        let mut tasks = Vec::new();
        for _ in 0..connections {
            tasks.push(tokio::spawn(async move {
                let mut total = 0;
                for _ in 0..requests {
                    total += one_request(addr, tokens).await.expect("request succeeds");
                }
                total
            }));
        }
        let mut total = 0;
        for task in tasks {
            total += task.await.expect("client task");
        }
        total
    });
    let elapsed = started.elapsed();
    let _ = stop_tx.send(());
    let _ = server.join();
    let expected = connections * requests * (tokens + 4);
    assert_eq!(
        events, expected,
        "role + tokens + finish + usage + [DONE] per request"
    );
    println!(
        "sim_events: {events} SSE events ({connections} connections x {requests} requests x {tokens} tokens) in {:.3} s = {:.0} events/s",
        elapsed.as_secs_f64(),
        events as f64
            / elapsed
                .as_secs_f64()
                .max(Duration::from_micros(1).as_secs_f64())
    );
}
