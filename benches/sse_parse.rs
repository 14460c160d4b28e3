//! Client hot-path benchmark: SSE parsing plus per-event recording, in events per second.
//!
//! Run with `cargo bench --bench sse_parse`. Feeds a vLLM-style chat stream (reasoning then
//! content deltas, usage chunk, `[DONE]`) through `SseParser` and `StreamState` the way the
//! client does: one clock read per network read, then every event in it. Also shown: framing
//! alone, a serde skim, and the serde chunk parse the hand-written scan replaces. Last, the
//! per-request cost: many short streams shaped like the simulator's (a role chunk, 16 content
//! chunks, a finish chunk, a usage chunk, `[DONE]`), each with its own id and its own
//! `StreamState`, so each pays what a stream's first chunks cost before the scan has learnt
//! their shape.

use std::hint::black_box;
use std::ops::ControlFlow;
use std::time::Instant;

use servebench::client::sse::{EventKind, Events, SseParser};
use servebench::client::stream::{StreamState, parse_chunk};

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

/// A read's events taken as the client takes them: whole events of the stream's template
/// without the parser, the rest through the parser and `on_event`.
struct AsTheClient<'s>(&'s mut StreamState, f64);

impl Events for AsTheClient<'_> {
    fn whole_events(&mut self, bytes: &[u8]) -> Option<usize> {
        self.0.whole_templated_events(bytes, self.1)
    }

    fn event(&mut self, _: EventKind, data: &[u8]) -> ControlFlow<()> {
        self.0.on_event(data, self.1);
        ControlFlow::Continue(())
    }
}

fn run(bytes: &[u8], read_size: usize) -> (u64, f64) {
    let start = Instant::now();
    let mut parser = SseParser::default();
    let mut state = StreamState::default();
    for piece in bytes.chunks(read_size) {
        let now_ms = start.elapsed().as_secs_f64() * 1000.0;
        let fed = parser.feed_to(piece, &mut AsTheClient(&mut state, now_ms));
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

/// Framing plus the serde chunk parse alone (the path before the hand-written scan).
fn run_serde_path(bytes: &[u8], read_size: usize) -> (u64, f64) {
    let start = Instant::now();
    let mut parser = SseParser::default();
    let mut events = 0u64;
    for piece in bytes.chunks(read_size) {
        let fed = parser.feed(piece, |_, data| {
            if data == b"[DONE]" || parse_chunk(data).is_ok() {
                events += 1;
            }
            ControlFlow::Continue(())
        });
        black_box(fed.is_ok());
    }
    (events, start.elapsed().as_secs_f64())
}

/// `count` streams shaped like the simulator's, `tokens` content chunks each, ids distinct.
fn short_streams(count: usize, tokens: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|n| {
            let head = format!(
                r#"{{"id":"chatcmpl-{n:016x}","object":"chat.completion.chunk","created":1796413261,"model":"sim","choices":[{{"index":0,"delta":"#
            );
            let tail = r#","logprobs":null,"finish_reason":null}]}"#;
            let mut s = format!("data: {head}{{\"role\":\"assistant\",\"content\":\"\"}}{tail}\n\n");
            for i in 0..tokens {
                s.push_str(&format!("data: {head}{{\"content\":\" tok{i}\"}}{tail}\n\n"));
            }
            s.push_str(&format!(
                "data: {head}{{}},\"logprobs\":null,\"finish_reason\":\"length\"}}]}}\n\n"
            ));
            s.push_str(&format!(
                r#"data: {{"id":"chatcmpl-{n:016x}","object":"chat.completion.chunk","created":1796413261,"model":"sim","choices":[],"usage":{{"prompt_tokens":10,"total_tokens":26,"completion_tokens":{tokens},"prompt_tokens_details":{{"cached_tokens":0}},"completion_tokens_details":{{"reasoning_tokens":0}}}}}}"#
            ));
            s.push_str("\n\ndata: [DONE]\n\n");
            s.into_bytes()
        })
        .collect()
}

/// Each stream as the client reads one response delivered in one read: a new parser and
/// state, the memo taken from and given back to the thread's spares. A few streams read over
/// and over, so their bytes are in cache, as a response just read from the socket is.
fn run_short_streams(streams: &[Vec<u8>], passes: usize) -> f64 {
    let start = Instant::now();
    for bytes in (0..passes).flat_map(|_| streams) {
        let mut parser = SseParser::default();
        let mut state = StreamState {
            chunk_memo: servebench::client::scan::StreamMemo::take(),
            ..StreamState::default()
        };
        let now_ms = start.elapsed().as_secs_f64() * 1000.0;
        let fed = parser.feed_to(bytes, &mut AsTheClient(&mut state, now_ms));
        assert!(fed.is_ok() && state.done && state.content_chunks > 0);
        std::mem::take(&mut state.chunk_memo).give_back();
        black_box(state.events);
    }
    start.elapsed().as_secs_f64()
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
    let mut best_s = f64::INFINITY;
    for _ in 0..5 {
        let (n, s) = run_serde_path(&bytes, 16 * 1024);
        count = n;
        best_s = best_s.min(s);
    }
    println!(
        "{:>38}: {:>6.2} M events/s, {:>7.1} MB/s (best of 5)",
        "framing + serde chunk parse only",
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
    let (streams, passes) = (short_streams(64, 16), 300);
    let count = (streams.len() * passes) as f64;
    let mut best_s = f64::INFINITY;
    for _ in 0..5 {
        best_s = best_s.min(run_short_streams(&streams, passes));
    }
    println!(
        "{:>38}: {:>6.0} ns per stream, {:>4.0} ns per event (best of 5)",
        "simulator-shaped streams of 16 tokens",
        best_s / count * 1e9,
        best_s / (count * 20.0) * 1e9
    );
}
