//! Incremental Server-Sent Events parser: bytes in any split → `data` payloads, with a size cap.
//!
//! Follows the WHATWG event-stream rules that matter for OpenAI-style streams: lines end in
//! CRLF, LF or CR; `:` lines are comments; `data` lines of one event are joined with `\n`;
//! a blank line dispatches; other fields (`event`, `id`, `retry`) are ignored. Deviations: an
//! event still pending at end of stream is dispatched by [`SseParser::finish`], since some
//! servers close without the final blank line; and an `error` field is read like `data` but
//! marks the event as an error, as llama.cpp sends stream errors (`error: {…}`).
//!
//! The parser works on bytes, so a split inside a UTF-8 sequence is harmless. An event whose
//! payload lies in one fed chunk is handed out as a slice of that chunk, without copying;
//! only events (or lines) spanning chunks go through the parser's reused buffers.

use std::ops::ControlFlow;

/// Default cap on one event's payload (and on one line): 1 MiB.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1 << 20;

/// The stream broke the parser's limits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("event larger than {limit} bytes")]
    EventTooLarge { limit: usize },
}

/// Which field carried an event's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Data,
    /// At least one `error:` line (llama.cpp's stream errors).
    Error,
}

/// Whether feeding went through the whole input or the callback stopped it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fed {
    All,
    Stopped,
}

/// Where the current event's data is: nowhere yet, in the chunk being fed, or in `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    None,
    /// One data line, a range of the chunk being fed.
    Borrowed(usize, usize),
    Owned,
}

/// What a fed stream's events go to.
pub trait Events {
    /// Offered the bytes from the start of a line when no event is pending, at most the event
    /// size cap of them: it may read whole `data` events there (each its line and the blank
    /// line after) without the parser and say how many bytes they were; `None` leaves them to
    /// the parser.
    fn whole_events(&mut self, _bytes: &[u8]) -> Option<usize> {
        None
    }

    /// One complete event's data; `Break` stops the feeding.
    fn event(&mut self, kind: EventKind, data: &[u8]) -> ControlFlow<()>;
}

/// A closure taking each event's data, with no shortcut.
struct OnData<F>(F);

impl<F: FnMut(EventKind, &[u8]) -> ControlFlow<()>> Events for OnData<F> {
    fn event(&mut self, kind: EventKind, data: &[u8]) -> ControlFlow<()> {
        (self.0)(kind, data)
    }
}

/// Incremental parser state; reuse one per response.
#[derive(Debug)]
pub struct SseParser {
    /// An unfinished line carried over from an earlier chunk.
    line: Vec<u8>,
    /// The current event's data when it spans chunks or lines.
    data: Vec<u8>,
    pending: Pending,
    /// The current event has an `error` line.
    is_error: bool,
    /// The last chunk ended in CR: a leading LF in the next one belongs to that line end.
    skip_lf: bool,
    max_event_bytes: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::new(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl SseParser {
    pub fn new(max_event_bytes: usize) -> Self {
        SseParser {
            line: Vec::new(),
            data: Vec::new(),
            pending: Pending::None,
            is_error: false,
            skip_lf: false,
            max_event_bytes,
        }
    }

    /// Feed the next bytes; `on_data` receives each complete event's data and may stop.
    pub fn feed<F>(&mut self, chunk: &[u8], on_data: F) -> Result<Fed, SseError>
    where
        F: FnMut(EventKind, &[u8]) -> ControlFlow<()>,
    {
        self.feed_to(chunk, &mut OnData(on_data))
    }

    /// Feed the next bytes to `events`.
    pub fn feed_to<E: Events>(&mut self, chunk: &[u8], events: &mut E) -> Result<Fed, SseError> {
        if chunk.is_empty() {
            return Ok(Fed::All);
        }
        let mut pos = 0;
        if self.skip_lf {
            self.skip_lf = false;
            if chunk.first() == Some(&b'\n') {
                pos = 1;
            }
        }
        let result = self.feed_lines(chunk, pos, events);
        // Data borrowed from this chunk must outlive it: copy it into the owned buffer.
        if let Pending::Borrowed(start, end) = self.pending {
            self.data.clear();
            self.data.extend_from_slice(&chunk[start..end]);
            self.pending = Pending::Owned;
        }
        result
    }

    fn feed_lines<E: Events>(
        &mut self,
        chunk: &[u8],
        mut pos: usize,
        events: &mut E,
    ) -> Result<Fed, SseError> {
        while pos < chunk.len() {
            if self.line.is_empty() && self.pending == Pending::None && !self.is_error {
                let end = chunk.len().min(pos.saturating_add(self.max_event_bytes));
                if let Some(taken) = events.whole_events(&chunk[pos..end]) {
                    pos += taken;
                    continue;
                }
                if let Some((taken, value)) = whole_data_event(&chunk[pos..end]) {
                    pos += taken;
                    if events.event(EventKind::Data, value).is_break() {
                        return Ok(Fed::Stopped);
                    }
                    continue;
                }
            }
            // An event's blank line comes right after its data line: no search for it.
            let found = match chunk[pos] {
                b'\n' | b'\r' => Some(0),
                _ => memchr::memchr2(b'\n', b'\r', &chunk[pos..]),
            };
            let Some(offset) = found else {
                if self.line.len() + (chunk.len() - pos) > self.max_event_bytes {
                    return Err(self.too_large());
                }
                self.line.extend_from_slice(&chunk[pos..]);
                return Ok(Fed::All);
            };
            let end = pos + offset;
            let mut next = end + 1;
            if chunk[end] == b'\r' {
                match chunk.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            let flow = if self.line.is_empty() {
                self.line_in_chunk(chunk, pos, end, events)?
            } else {
                if self.line.len() + (end - pos) > self.max_event_bytes {
                    return Err(self.too_large());
                }
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&chunk[pos..end]);
                let appended = self.owned_line(&line, chunk);
                line.clear();
                self.line = line;
                appended?;
                ControlFlow::Continue(())
            };
            pos = next;
            if flow.is_break() {
                return Ok(Fed::Stopped);
            }
        }
        Ok(Fed::All)
    }

    /// A complete line lying in `chunk[start..end]`.
    fn line_in_chunk<E: Events>(
        &mut self,
        chunk: &[u8],
        start: usize,
        end: usize,
        events: &mut E,
    ) -> Result<ControlFlow<()>, SseError> {
        let line = &chunk[start..end];
        // The same per-line cap as a line carried across chunks, so splits do not matter.
        if line.len() > self.max_event_bytes {
            return Err(self.too_large());
        }
        if line.is_empty() {
            return Ok(self.dispatch(chunk, events));
        }
        let Some((is_error, value)) = field_value(line) else {
            return Ok(ControlFlow::Continue(()));
        };
        self.is_error |= is_error;
        let value_start = end - value.len();
        match self.pending {
            Pending::None => {
                if value.len() > self.max_event_bytes {
                    return Err(self.too_large());
                }
                self.pending = Pending::Borrowed(value_start, end);
            }
            Pending::Borrowed(..) | Pending::Owned => self.append_data(value, chunk)?,
        }
        Ok(ControlFlow::Continue(()))
    }

    /// A complete line assembled in the carry-over buffer.
    fn owned_line(&mut self, line: &[u8], chunk: &[u8]) -> Result<(), SseError> {
        // A carried-over line is never empty, so it is never a dispatching blank line.
        match field_value(line) {
            Some((is_error, value)) => {
                self.is_error |= is_error;
                self.append_data(value, chunk)
            }
            None => Ok(()),
        }
    }

    /// Add one data line's value to the current event (joined with `\n`).
    fn append_data(&mut self, value: &[u8], chunk: &[u8]) -> Result<(), SseError> {
        match self.pending {
            Pending::None => {
                self.data.clear();
            }
            Pending::Borrowed(start, end) => {
                self.data.clear();
                self.data.extend_from_slice(&chunk[start..end]);
                self.data.push(b'\n');
            }
            Pending::Owned => self.data.push(b'\n'),
        }
        if self.data.len() + value.len() > self.max_event_bytes {
            return Err(self.too_large());
        }
        self.data.extend_from_slice(value);
        self.pending = Pending::Owned;
        Ok(())
    }

    fn dispatch<E: Events>(&mut self, chunk: &[u8], events: &mut E) -> ControlFlow<()> {
        let pending = std::mem::replace(&mut self.pending, Pending::None);
        let kind = if std::mem::take(&mut self.is_error) {
            EventKind::Error
        } else {
            EventKind::Data
        };
        match pending {
            Pending::None => ControlFlow::Continue(()),
            Pending::Borrowed(start, end) => events.event(kind, &chunk[start..end]),
            Pending::Owned => events.event(kind, &self.data),
        }
    }

    /// End of stream: a trailing line and an event without its final blank line still count.
    pub fn finish<F>(&mut self, on_data: F) -> Result<Fed, SseError>
    where
        F: FnMut(EventKind, &[u8]) -> ControlFlow<()>,
    {
        self.skip_lf = false;
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            let appended = self.owned_line(&line, &[]);
            self.line = line;
            self.line.clear();
            appended?;
        }
        Ok(match self.dispatch(&[], &mut OnData(on_data)) {
            ControlFlow::Continue(()) => Fed::All,
            ControlFlow::Break(()) => Fed::Stopped,
        })
    }

    fn too_large(&mut self) -> SseError {
        self.line.clear();
        self.data.clear();
        self.pending = Pending::None;
        self.is_error = false;
        SseError::EventTooLarge {
            limit: self.max_event_bytes,
        }
    }
}

/// A whole event at the start of `bytes` that is one `data` line ended by LF and a blank line
/// (LF): its length and its value, as the line-by-line path would hand it out. Most events
/// are such, and are then found with one search.
#[inline]
fn whole_data_event(bytes: &[u8]) -> Option<(usize, &[u8])> {
    let rest = bytes.strip_prefix(b"data")?;
    let end = memchr::memchr2(b'\n', b'\r', rest)?;
    if rest[end] != b'\n' || rest.get(end + 1) != Some(&b'\n') {
        return None;
    }
    let value = field_rest(&rest[..end])?;
    Some((b"data".len() + end + 2, value))
}

/// The value of a `data` or `error` field line (after the colon and one optional space), and
/// whether it is `error`; `None` for comments and other fields.
#[inline]
fn field_value(line: &[u8]) -> Option<(bool, &[u8])> {
    let (is_error, rest) = match line.first() {
        Some(b'd') => (false, line.strip_prefix(b"data")?),
        Some(b'e') => (true, line.strip_prefix(b"error")?),
        _ => return None,
    };
    Some((is_error, field_rest(rest)?))
}

/// What follows a field name: nothing (an empty value) or `:` and the value.
#[inline]
fn field_rest(rest: &[u8]) -> Option<&[u8]> {
    match rest.first() {
        None => Some(rest), // "data" alone: an empty value
        Some(b':') => {
            let value = &rest[1..];
            Some(value.strip_prefix(b" ").unwrap_or(value))
        }
        Some(_) => None, // a field named e.g. "database"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_split(input: &[u8], cuts: &[usize], cap: usize) -> Result<Vec<Vec<u8>>, SseError> {
        let mut parser = SseParser::new(cap);
        let mut events = Vec::new();
        let mut last = 0;
        for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
            let cut = cut.clamp(last, input.len());
            parser.feed(&input[last..cut], |_, d| {
                events.push(d.to_vec());
                ControlFlow::Continue(())
            })?;
            last = cut;
        }
        parser.finish(|_, d| {
            events.push(d.to_vec());
            ControlFlow::Continue(())
        })?;
        Ok(events)
    }

    fn parse(input: &[u8]) -> Vec<Vec<u8>> {
        parse_split(input, &[], DEFAULT_MAX_EVENT_BYTES).expect("within cap")
    }

    #[test]
    fn basic_events_and_done() {
        let s = b"data: {\"a\":1}\n\ndata: [DONE]\n\n";
        assert_eq!(parse(s), vec![b"{\"a\":1}".to_vec(), b"[DONE]".to_vec()]);
    }

    #[test]
    fn line_endings_comments_fields_and_multiline() {
        let s = b": keep-alive\r\nevent: message\r\nid: 7\r\ndata: one\r\ndata:two\r\n\r\ndata: x\rdata: y\r\rdata\n\n";
        assert_eq!(
            parse(s),
            vec![b"one\ntwo".to_vec(), b"x\ny".to_vec(), b"".to_vec()]
        );
    }

    #[test]
    fn blank_lines_without_data_dispatch_nothing() {
        assert!(parse(b"\n\n: c\n\nevent: x\n\n").is_empty());
        assert!(parse(b"database: no\n\n").is_empty());
    }

    #[test]
    fn last_event_without_blank_line_is_kept() {
        assert_eq!(
            parse(b"data: a\n\ndata: b"),
            vec![b"a".to_vec(), b"b".to_vec()]
        );
        assert_eq!(parse(b"data: b\n"), vec![b"b".to_vec()]);
    }

    #[test]
    fn crlf_split_between_chunks() {
        let s = b"data: a\r\n\r\ndata: b\r\n\r\n";
        for cut in 0..s.len() {
            let got = parse_split(s, &[cut], 1024).expect("within cap");
            assert_eq!(got, vec![b"a".to_vec(), b"b".to_vec()], "cut at {cut}");
        }
    }

    #[test]
    fn size_cap_rejects_large_events_in_any_split() {
        let big = format!("data: {}\n\n", "x".repeat(100));
        assert_eq!(
            parse_split(big.as_bytes(), &[], 64),
            Err(SseError::EventTooLarge { limit: 64 })
        );
        assert_eq!(
            parse_split(big.as_bytes(), &[10, 50, 90], 64),
            Err(SseError::EventTooLarge { limit: 64 })
        );
        let multi = "data: 0123456789\n".repeat(10) + "\n";
        assert!(parse_split(multi.as_bytes(), &[3], 64).is_err());
        assert!(parse_split(multi.as_bytes(), &[3], 1000).is_ok());
    }

    #[test]
    fn empty_feed_keeps_a_pending_cr() {
        let got = parse_split(b"data: a\r\n\r\n", &[8, 8, 8], 1024).expect("within cap");
        assert_eq!(got, vec![b"a".to_vec()]);
    }

    #[test]
    fn error_field_marks_an_error_event() {
        let mut parser = SseParser::default();
        let mut seen = Vec::new();
        let input = b"data: a\n\nerror: {\"code\":500}\n\ndata: b\n\n";
        parser
            .feed(input, |kind, d| {
                seen.push((kind, d.to_vec()));
                ControlFlow::Continue(())
            })
            .expect("within cap");
        assert_eq!(
            seen,
            vec![
                (EventKind::Data, b"a".to_vec()),
                (EventKind::Error, b"{\"code\":500}".to_vec()),
                (EventKind::Data, b"b".to_vec()),
            ]
        );
        assert!(parse(b"errors: x\n\nevent: e\n\n").is_empty());
    }

    #[test]
    fn callback_can_stop() {
        let mut parser = SseParser::default();
        let mut seen = 0;
        let fed = parser
            .feed(b"data: a\n\ndata: b\n\n", |_, _| {
                seen += 1;
                ControlFlow::Break(())
            })
            .expect("within cap");
        assert_eq!((fed, seen), (Fed::Stopped, 1));
    }

    /// A valid stream built from random events, each line ending picked at random.
    fn stream_strategy() -> impl Strategy<Value = (Vec<u8>, Vec<Vec<u8>>)> {
        let payload = prop::collection::vec(
            prop_oneof![
                "[a-z{}\":, ]{0,12}",
                Just("é".to_string()),
                Just("日本".to_string()),
                Just("🦀".to_string()),
            ],
            0..4,
        )
        .prop_map(|parts| parts.concat());
        let event = (
            prop::collection::vec(payload, 1..4),
            prop::bool::ANY,
            0usize..3,
        );
        (
            prop::collection::vec(event, 0..8),
            0usize..3,
            prop::bool::ANY,
        )
            .prop_map(|(events, eol_pick, trailing_blank)| {
                let eols: [&[u8]; 3] = [b"\n", b"\r\n", b"\r"];
                let mut bytes = Vec::new();
                let mut expected = Vec::new();
                for (i, (lines, comment, eol)) in events.iter().enumerate() {
                    let eol = eols[(eol + eol_pick + i) % 3];
                    if *comment {
                        bytes.extend_from_slice(b": ping");
                        bytes.extend_from_slice(eol);
                    }
                    for line in lines {
                        // Payloads never start with a space, so "data: " strips exactly one.
                        bytes.extend_from_slice(b"data: ");
                        bytes.extend_from_slice(line.trim_start().as_bytes());
                        bytes.extend_from_slice(eol);
                    }
                    let last = i + 1 == events.len();
                    if !last || trailing_blank {
                        bytes.extend_from_slice(eol);
                    }
                    let joined: Vec<&str> = lines.iter().map(|l| l.trim_start()).collect();
                    expected.push(joined.join("\n").into_bytes());
                }
                (bytes, expected)
            })
    }

    /// Takes every one-line `data` event followed by its blank line itself, as a caller's
    /// shortcut would, and keeps all events in order.
    #[derive(Default)]
    struct TakesSimpleEvents {
        events: Vec<Vec<u8>>,
        taken: usize,
    }

    impl Events for TakesSimpleEvents {
        fn whole_events(&mut self, bytes: &[u8]) -> Option<usize> {
            let data = bytes.strip_prefix(b"data: ")?;
            let end = memchr::memchr2(b'\n', b'\r', data)?;
            if data.get(end..end + 2) != Some(b"\n\n") {
                return None;
            }
            self.events.push(data[..end].to_vec());
            self.taken += 1;
            Some(6 + end + 2)
        }

        fn event(&mut self, _: EventKind, data: &[u8]) -> ControlFlow<()> {
            self.events.push(data.to_vec());
            ControlFlow::Continue(())
        }
    }

    fn parse_split_taking(input: &[u8], cuts: &[usize]) -> TakesSimpleEvents {
        let mut parser = SseParser::default();
        let mut events = TakesSimpleEvents::default();
        let mut last = 0;
        for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
            let cut = cut.clamp(last, input.len());
            parser
                .feed_to(&input[last..cut], &mut events)
                .expect("within cap");
            last = cut;
        }
        parser
            .finish(|_, d| {
                events.events.push(d.to_vec());
                ControlFlow::Continue(())
            })
            .expect("within cap");
        events
    }

    #[test]
    fn whole_events_are_offered_only_between_events() {
        let s =
            b": hi\ndata: a\n\nevent: x\ndata: b\n\ndata: c\ndata: d\n\ndata: e\r\n\r\ndata: f\n\n";
        let taken = parse_split_taking(s, &[]);
        assert_eq!(taken.events, parse(s));
        // `a`, `b` (after a field line) and `f`; not the two-line event nor the CRLF one.
        assert_eq!(taken.taken, 3);
    }

    proptest! {
        // No regression files: the top level of the repository is fixed.
        #![proptest_config(ProptestConfig {
            cases: 10_000,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]
        #[test]
        fn any_split_yields_the_same_events(
            (bytes, expected) in stream_strategy(),
            cuts in prop::collection::vec(0usize..400, 0..12),
        ) {
            let mut cuts = cuts;
            cuts.sort_unstable();
            let whole = parse_split(&bytes, &[], DEFAULT_MAX_EVENT_BYTES).expect("within cap");
            prop_assert_eq!(&whole, &expected);
            let split = parse_split(&bytes, &cuts, DEFAULT_MAX_EVENT_BYTES).expect("within cap");
            prop_assert_eq!(&split, &expected);
            // Byte at a time: the worst split.
            let every: Vec<usize> = (1..bytes.len()).collect();
            let bytewise = parse_split(&bytes, &every, DEFAULT_MAX_EVENT_BYTES).expect("within cap");
            prop_assert_eq!(&bytewise, &expected);
            // A caller taking whole events itself sees the same events.
            prop_assert_eq!(&parse_split_taking(&bytes, &cuts).events, &expected);
        }
    }
}
