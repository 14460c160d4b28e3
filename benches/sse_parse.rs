//! Client hot-path benchmark: SSE parsing plus per-event recording, in events per second.
//!
//! Run with `cargo bench --bench sse_parse`. Feeds a vLLM-style chat stream (reasoning then
//! content deltas, usage chunk, `[DONE]`) through `SseParser` and `StreamState` the way the
//! client does: one clock read per network read, then every event in it.

use std::hint::black_box;
use std::ops::ControlFlow;
use std::time::Instant;

use servebench::client::sse::SseParser;
use servebench::client::stream::StreamState;

fn stream(events: usize) -> Vec<u8> {
    let mut s = String::new();
    let head = r#"{"id":"chatcmpl-8f1e2d","object":"chat.completion.chunk","created":1767225600,"model":"deepseek-v4-flash","choices":[{"index":0,"delta":"#;
    s.push_str(&format!("data: {head}{{\"role\":\"assistant\",\"content\":\"\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"));
    for i in 0..events {
        let field = if i < events / 2 {
            "reasoning_content"
        } else {
            "content"
        };
        s.push_str(&format!(
            "data: {head}{{\"{field}\":\" tok{i}\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
        ));
    }
    s.push_str("data: {\"id\":\"chatcmpl-8f1e2d\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":2960,\"completion_tokens\":144,\"prompt_tokens_details\":{\"cached_tokens\":2048}}}\n\n");
    s.push_str("data: [DONE]\n\n");
    s.into_bytes()
}

fn run(bytes: &[u8], read_size: usize) -> (u64, f64) {
    let start = Instant::now();
    let mut parser = SseParser::default();
    let mut state = StreamState::default();
    for piece in bytes.chunks(read_size) {
        let now_ms = start.elapsed().as_secs_f64() * 1000.0;
        let fed = parser.feed(piece, |_, data| {
            state.on_event(data, now_ms);
            ControlFlow::Continue(())
        });
        black_box(fed.is_ok());
    }
    let elapsed_s = start.elapsed().as_secs_f64();
    assert!(state.done && state.content_chunks > 0);
    (black_box(state.events), elapsed_s)
}

/// The SSE parser alone, for the split between framing and JSON.
fn run_sse_only(bytes: &[u8], read_size: usize) -> (u64, f64) {
    let start = Instant::now();
    let mut parser = SseParser::default();
    let mut events = 0u64;
    for piece in bytes.chunks(read_size) {
        let fed = parser.feed(piece, |_, data| {
            events += black_box(data.len()).min(1) as u64;
            ControlFlow::Continue(())
        });
        black_box(fed.is_ok());
    }
    (events, start.elapsed().as_secs_f64())
}

/// Framing plus a validating JSON skim of every event: the floor for any serde-based parse.
fn run_json_floor(bytes: &[u8], read_size: usize) -> (u64, f64) {
    let start = Instant::now();
    let mut parser = SseParser::default();
    let mut events = 0u64;
    for piece in bytes.chunks(read_size) {
        let fed = parser.feed(piece, |_, data| {
            if serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok() {
                events += 1;
            }
            ControlFlow::Continue(())
        });
        black_box(fed.is_ok());
    }
    (events, start.elapsed().as_secs_f64())
}

fn main() {
    let events = 200_000;
    let bytes = stream(events);
    println!(
        "stream: {} events, {:.1} MB, {} bytes/event",
        events + 3,
        bytes.len() as f64 / 1e6,
        bytes.len() / (events + 3)
    );
    let mut best_s = f64::INFINITY;
    let mut count = 0;
    for _ in 0..5 {
        let (n, s) = run_sse_only(&bytes, 16 * 1024);
        count = n;
        best_s = best_s.min(s);
    }
    println!(
        "{:>38}: {:>6.2} M events/s, {:>7.1} MB/s (best of 5)",
        "SSE framing only, 16 KiB reads",
        count as f64 / best_s / 1e6,
        bytes.len() as f64 / best_s / 1e6
    );
    let mut best_s = f64::INFINITY;
    for _ in 0..5 {
        let (n, s) = run_json_floor(&bytes, 16 * 1024);
        count = n;
        best_s = best_s.min(s);
    }
    println!(
        "{:>38}: {:>6.2} M events/s, {:>7.1} MB/s (best of 5)",
        "framing + JSON skim (serde floor)",
        count as f64 / best_s / 1e6,
        bytes.len() as f64 / best_s / 1e6
    );
    for (label, read_size) in [
        ("16 KiB reads", 16 * 1024),
        ("1 event per read", bytes.len() / (events + 3)),
        ("100-byte reads (splits every event)", 100),
    ] {
        let mut best_s = f64::INFINITY;
        let mut count = 0;
        for _ in 0..5 {
            let (n, s) = run(&bytes, read_size);
            count = n;
            best_s = best_s.min(s);
        }
        println!(
            "{label:>38}: {:>6.2} M events/s, {:>7.1} MB/s (best of 5)",
            count as f64 / best_s / 1e6,
            bytes.len() as f64 / best_s / 1e6
        );
    }
}
