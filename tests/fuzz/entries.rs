//! Fuzz entry points shared by the cargo-fuzz targets and the corpus replay test.

use std::ops::ControlFlow;
use std::path::Path;

use servebench::client::sse::{EventKind, SseError, SseParser};
use servebench::client::stream::{EventOutcome, StreamState};
use servebench::plan::{ExpandOptions, prepare_from_str, source::Format};
use servebench::report::formats::read::read_report_bytes;

/// Every event the parser hands out, and how it ended.
type Parsed = (Vec<(EventKind, Vec<u8>)>, Result<(), SseError>);

fn parse(chunks: &[&[u8]], max_event_bytes: usize) -> Parsed {
    let mut parser = SseParser::new(max_event_bytes);
    let mut events = Vec::new();
    let mut collect = |kind: EventKind, data: &[u8]| {
        events.push((kind, data.to_vec()));
        ControlFlow::Continue(())
    };
    for chunk in chunks {
        if let Err(e) = parser.feed(chunk, &mut collect) {
            return (events, Err(e));
        }
    }
    let end = parser.finish(&mut collect).map(|_| ());
    (events, end)
}

/// SSE parser + chunk handling. The first two bytes pick the cap and the split pattern;
/// the rest is the stream. Feeding it whole or in pieces must give the same events.
pub fn sse(data: &[u8]) {
    let (head, body) = data.split_at(data.len().min(2));
    let cap = match head.first() {
        Some(b) if b & 1 == 1 => 16 + usize::from(*b),
        _ => 1 << 20,
    };
    let step = usize::from(head.get(1).copied().unwrap_or(7) % 13) + 1;
    let whole = parse(&[body], cap);
    let pieces: Vec<&[u8]> = body.chunks(step).collect();
    let split = parse(&pieces, cap);
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    let single = parse(&bytes, cap);
    assert_eq!(whole, split, "split every {step} bytes changed the events");
    assert_eq!(whole, single, "byte-by-byte feeding changed the events");
    // Each payload through the chunk decoder: never a panic, whatever the bytes.
    let mut state = StreamState::default();
    for (i, (_, payload)) in whole.0.iter().enumerate() {
        match state.on_event(payload, i as f64) {
            EventOutcome::Continue => {}
            EventOutcome::Done | EventOutcome::Failed(_) => break,
        }
    }
    let _ = state.output_tokens();
}

/// Plan loader + expander. The first byte picks the format; the rest is the plan text.
pub fn plan(data: &[u8]) {
    let Some((first, body)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(body) else {
        return;
    };
    let format = match first % 3 {
        0 => Format::Yaml,
        1 => Format::Toml,
        _ => Format::Json,
    };
    let options = ExpandOptions {
        max_phases: 50,
        ..ExpandOptions::default()
    };
    if let Err(errors) = prepare_from_str(text, format, "fuzz.yaml", &options) {
        // Rendering diagnostics quotes source lines: must not panic on any text.
        let _ = errors.to_string();
    }
}

/// Report readers (servebench and seed formats) and the renderers behind `report`.
pub fn report(data: &[u8]) {
    if let Ok(report) = read_report_bytes(data, Path::new("fuzz.json")) {
        let _ = servebench::report::formats::markdown::render(&report);
        let _ = servebench::report::formats::html::render(&report);
        let _ = servebench::report::formats::csv::render_phases(&report);
        let _ = servebench::report::formats::csv::render_requests(&report);
    }
}
