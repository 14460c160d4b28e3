//! Hand-written scan of a streamed chunk's few measured fields; serde is the fallback.
//!
//! [`fast`] reads `choices[0]`'s text flags, `usage`, `error` and `object` in one pass
//! without building anything. It answers `None` for whatever it does not handle exactly
//! like the serde reference in `stream.rs` (`\u` escapes, escaped keys, non-UTF-8 bytes,
//! duplicate known keys, odd types, deep nesting, invalid JSON), so the caller falls back to
//! serde, which then decides. A property test checks that the two agree.

use super::json_text::{plain_run, plain_utf8_run};

/// What one chunk says, as much as the measurement needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChunkSummary {
    /// The first choice, when `choices` has one.
    pub choice: Option<ChoiceFlags>,
    pub usage: Option<UsageCounts>,
    /// A non-null `error` or `"object": "error"`.
    pub is_error: bool,
}

/// Which text fields of a choice are non-empty strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChoiceFlags {
    /// `delta.reasoning_content` or `delta.reasoning`.
    pub reasoning: bool,
    /// `delta.content` or `text`.
    pub content: bool,
    /// A `delta.tool_calls` entry with a non-empty name or arguments; the scan leaves any
    /// non-null `tool_calls` to serde, so it only ever reports `false`.
    pub tool_call: bool,
}

/// The `usage` object's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UsageCounts {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// `prompt_tokens_details.cached_tokens`.
    pub cached_tokens: Option<u64>,
}

/// Nesting deeper than this goes to serde (whose own limit is 128).
const MAX_DEPTH: u32 = 64;

/// Scan one `data` payload; `None` means "ask serde".
pub fn fast(data: &[u8]) -> Option<ChunkSummary> {
    scan(data).map(|(summary, _)| summary)
}

/// Keys and strings must be UTF-8 for serde; checking once up front keeps the scan simple.
fn is_utf8(bytes: &[u8]) -> bool {
    bytes.is_ascii() || std::str::from_utf8(bytes).is_ok()
}

/// A whole payload's scan; the cursor comes back too, for what it saw of the text values
/// and of the `id` and `created` members.
fn scan(data: &[u8]) -> Option<(ChunkSummary, Cursor<'_>)> {
    if !is_utf8(data) {
        return None;
    }
    let mut c = Cursor::new(data);
    c.ws();
    let summary = c.chunk()?;
    c.ws();
    (c.i == data.len()).then_some((summary, c))
}

/// Chunk shapes seen on this thread, so a chunk of a known shape is answered without a scan.
///
/// A shape is a chunk's bytes with holes where chunks of one kind differ: the top-level `id`
/// string, the `created` integer, and the one text value (`delta.content`, …). A chunk that
/// is a shape's bytes with plain strings (no quote, backslash or control character) and an
/// integer in the holes gets the shape's chunk's answer, with the text's flag set as its text
/// is empty or not: the scan is a pure function of the bytes, and none of it reads the holes
/// but the text's emptiness. Shapes outlive streams, so a stream's first chunks (the role,
/// the finish, the usage) are not scanned either, and are kept per thread so no lock is
/// taken.
const MAX_SHAPES: usize = 16;

thread_local! {
    static SHAPES: std::cell::RefCell<Shapes> = const {
        std::cell::RefCell::new(Shapes { list: Vec::new(), next: 0 })
    };
}

/// What a stream's own chunks teach the scan of its next ones, besides the thread's shapes:
/// the last answered chunk's bytes around its text value (its id and `created` included), so
/// the run of content chunks that makes up most of a stream is checked with two comparisons
/// rather than a shape's several; and the shape its last chunk had, tried first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamMemo {
    /// Valid when `templated`; its buffers outlive it, for the next template.
    template: Template,
    templated: bool,
    last: usize,
    /// The template was just tried on the next event's framing and missed: the event's chunk
    /// need not be tried again (a skipped try only costs a shape's, the answer is the same).
    template_missed: bool,
}

/// What the chunks of one layout say, with an empty and with a non-empty text, and whether
/// they name the server's own timing (a top-level `timings` or `metrics` member).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Answers {
    if_empty: ChunkSummary,
    if_text: ChunkSummary,
    names_timings: bool,
    /// The layout's bytes hold no line break (its holes never do), so its chunks are one SSE
    /// line each.
    one_line: bool,
}

impl Answers {
    fn pick(&self, empty: bool) -> (ChunkSummary, bool) {
        let summary = if empty { self.if_empty } else { self.if_text };
        (summary, self.names_timings)
    }
}

/// The bytes before and after a chunk's text value, framed as a whole SSE event (`data: `
/// before, a blank line after) in one buffer, and the answers for the text between them.
#[derive(Debug, Clone, Default, PartialEq)]
struct Template {
    /// `data: `, the chunk's bytes before its text, after it, and `\n\n`.
    bytes: Vec<u8>,
    /// Where the text goes in `bytes`.
    text_at: usize,
    answers: Answers,
}

impl Template {
    const DATA: &[u8] = b"data: ";
    const BLANK: &[u8] = b"\n\n";

    fn set(&mut self, data: &[u8], (start, end): (usize, usize), answers: Answers) {
        self.bytes.clear();
        self.bytes.extend_from_slice(Self::DATA);
        self.bytes.extend_from_slice(&data[..start]);
        self.bytes.extend_from_slice(&data[end..]);
        self.bytes.extend_from_slice(Self::BLANK);
        self.text_at = Self::DATA.len() + start;
        self.answers = answers;
    }

    /// The chunk's part of `framed`, a slice of a framed event.
    fn chunk<'b>(&self, framed: &'b [u8]) -> &'b [u8] {
        &framed[Self::DATA.len()..framed.len() - Self::BLANK.len()]
    }

    /// The answer for `data`, when it is the template's chunk around a plain string.
    fn answer(&self, data: &[u8]) -> Option<(ChunkSummary, bool)> {
        let (head, tail) = self
            .chunk(&self.bytes)
            .split_at(self.text_at - Self::DATA.len());
        let text = between(data, head, tail)?;
        (head.len() + text + tail.len() == data.len()).then(|| self.answers.pick(text == 0))
    }

    /// The whole event at the start of `bytes` when it is the template's framing around a
    /// plain string: its length, and its text's. (The tail starts with the text's closing
    /// quote, where the plain run stops.)
    #[inline]
    fn event_text(&self, bytes: &[u8]) -> Option<(usize, usize)> {
        let (head, tail) = self.bytes.split_at(self.text_at);
        let text = between(bytes, head, tail)?;
        Some((head.len() + text + tail.len(), text))
    }

    /// [`Template::event_text`] with the event's chunk's length and its answer.
    fn event(&self, bytes: &[u8]) -> Option<(usize, usize, (ChunkSummary, bool))> {
        let (len, text) = self.event_text(bytes)?;
        let chunk_len = len - Self::DATA.len() - Self::BLANK.len();
        Some((len, chunk_len, self.answers.pick(text == 0)))
    }
}

/// The length of the plain UTF-8 string between `head` and `tail` at the start of `bytes`.
#[inline]
fn between(bytes: &[u8], head: &[u8], tail: &[u8]) -> Option<usize> {
    let rest = bytes.strip_prefix(head)?;
    let text = plain_utf8_run(rest)?;
    rest[text..].starts_with(tail).then_some(text)
}

/// Up to this many finished streams' memos are kept per thread for reuse.
const SPARE_MEMOS: usize = 64;

thread_local! {
    static SPARE: std::cell::RefCell<Vec<StreamMemo>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl StreamMemo {
    /// Whether [`StreamMemo::whole_event`] can answer: the stream has a template of one line.
    pub fn has_event_template(&self) -> bool {
        self.templated && self.template.answers.one_line
    }

    /// What the template's events say with an empty and with a non-empty text, and whether
    /// they name the server's timing. Call only when [`StreamMemo::has_event_template`].
    pub fn event_answers(&self) -> (ChunkSummary, ChunkSummary, bool) {
        let answers = self.template.answers;
        (answers.if_empty, answers.if_text, answers.names_timings)
    }

    /// The run of whole template events at the start of `bytes` (see
    /// [`StreamMemo::whole_event`]): its length in bytes, and how many of its events have a
    /// non-empty text and how many an empty one.
    pub fn event_run(&self, bytes: &[u8]) -> (usize, u64, u64) {
        let (mut len, mut texts, mut empties) = (0, 0, 0);
        while let Some((event_len, text)) = self.template.event_text(&bytes[len..]) {
            len += event_len;
            if text == 0 {
                empties += 1;
            } else {
                texts += 1;
            }
        }
        (len, texts, empties)
    }

    /// The whole SSE event at the start of `bytes` when it is `data: `, the stream's template
    /// with a plain text, and a blank line: its length, its chunk's length (the chunk starts
    /// after `data: `), its answer, and whether it names the server's timing. Call only when
    /// [`StreamMemo::has_event_template`].
    #[inline]
    pub fn whole_event(&self, bytes: &[u8]) -> Option<(usize, usize, (ChunkSummary, bool))> {
        self.template.event(bytes)
    }

    /// The template missed the event the SSE parser goes on with.
    pub fn note_template_missed(&mut self) {
        self.template_missed = true;
    }

    /// An empty memo, in the buffers of a finished stream's when this thread kept one: made
    /// anew, a memo costs an allocation per request.
    pub fn take() -> StreamMemo {
        let spare = SPARE.with(|spare| spare.borrow_mut().pop());
        spare.map_or_else(StreamMemo::default, |mut memo| {
            memo.templated = false;
            memo.last = 0;
            memo.template_missed = false;
            memo
        })
    }

    /// Keep this memo's buffers for a later stream on this thread.
    pub fn give_back(self) {
        SPARE.with(|spare| {
            let mut spare = spare.borrow_mut();
            if spare.len() < SPARE_MEMOS {
                spare.push(self);
            }
        });
    }
}

struct Shapes {
    list: Vec<Shape>,
    /// The slot the next shape takes once the list is full.
    next: usize,
}

#[derive(Debug, Clone, PartialEq)]
struct Shape {
    /// The chunk's bytes outside its holes, one run after another.
    literal: Vec<u8>,
    /// Each hole in order: where the literal run before it ends, and what it holds.
    holes: Vec<(usize, Hole)>,
    answers: Answers,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hole {
    /// A plain string's bytes between its quotes.
    Id,
    /// An integer's digits.
    Created,
    /// A plain string's bytes, whose emptiness the answer follows.
    Text,
}

/// [`fast`], answered from the stream's template or a known shape when the chunk fits one; a
/// scanned chunk's shape is learnt. With the answer comes whether the chunk may carry the
/// server's own timing: a top-level `timings` or `metrics` member, or, when the scan leaves
/// the chunk to serde, `true`.
pub fn fast_with_memo(data: &[u8], memo: &mut StreamMemo) -> Option<(ChunkSummary, bool)> {
    let missed = std::mem::take(&mut memo.template_missed);
    if memo.templated
        && !missed
        && let Some(answer) = memo.template.answer(data)
    {
        return Some(answer);
    }
    // A stream's template is its last shape with its own id and `created`: when it misses, so
    // does that shape, and the stream has moved on to the next kind of chunk.
    let first = memo.last + usize::from(memo.templated);
    let (answers, text) = SHAPES.with(|shapes| {
        let mut shapes = shapes.borrow_mut();
        if let Some((index, text)) = shapes.answer(data, first) {
            memo.last = index;
            return Some((shapes.list[index].answers, text));
        }
        let (summary, c) = scan(data)?;
        let (index, answers, text) = shapes.learn(data, &c, summary);
        memo.last = index.unwrap_or(memo.last);
        Some((answers, text))
    })?;
    // The text's place in these bytes makes the stream's next template; a chunk without one
    // keeps the last.
    if let Some(span) = text {
        memo.template.set(data, span, answers);
        memo.templated = true;
    }
    Some(answers.pick(text.is_some_and(|(start, end)| start == end)))
}

impl Shapes {
    /// The first shape, from `first` on, that `data` fits: its index, and where the chunk's
    /// text lies.
    fn answer(&self, data: &[u8], first: usize) -> Option<(usize, Option<(usize, usize)>)> {
        // From `first` to the end, then from the start: no division per shape tried.
        let first = first.min(self.list.len());
        (first..self.list.len())
            .chain(0..first)
            .find_map(|index| Some((index, self.list[index].fit(data)?)))
    }

    /// Keep the shape of a scanned chunk, unless it has more than one text value: its index,
    /// its answers, and where the chunk's text lies.
    fn learn(
        &mut self,
        data: &[u8],
        c: &Cursor<'_>,
        summary: ChunkSummary,
    ) -> (Option<usize>, Answers, Option<(usize, usize)>) {
        let mut answers = Answers {
            if_empty: summary,
            if_text: summary,
            names_timings: c.names_timings,
            one_line: memchr::memchr2(b'\n', b'\r', data).is_none(),
        };
        let text = match c.text_values {
            0 => None,
            1 => c.text_span,
            _ => return (None, answers, None),
        };
        if let Some((.., flag)) = text {
            answers.if_empty = with_text(summary, flag, false);
            answers.if_text = with_text(summary, flag, true);
        }
        let mut spans: Vec<(usize, usize, Hole)> = [
            c.id_span.map(|(start, end)| (start, end, Hole::Id)),
            c.created_span
                .map(|(start, end)| (start, end, Hole::Created)),
            text.map(|(start, end, _)| (start, end, Hole::Text)),
        ]
        .into_iter()
        .flatten()
        .collect();
        spans.sort_unstable_by_key(|&(start, ..)| start);
        let mut shape = Shape {
            literal: Vec::with_capacity(data.len()),
            holes: Vec::with_capacity(spans.len()),
            answers,
        };
        let mut from = 0;
        for (start, end, hole) in spans {
            shape.literal.extend_from_slice(&data[from..start]);
            shape.holes.push((shape.literal.len(), hole));
            from = end;
        }
        shape.literal.extend_from_slice(&data[from..]);
        let index = if self.list.len() < MAX_SHAPES {
            self.list.push(shape);
            self.list.len() - 1
        } else {
            let index = self.next;
            self.list[index] = shape;
            self.next = (index + 1) % MAX_SHAPES;
            index
        };
        (
            Some(index),
            answers,
            text.map(|(start, end, _)| (start, end)),
        )
    }
}

/// `answer` with the choice flag a text value sets made `non_empty`.
fn with_text(mut answer: ChunkSummary, flag: TextFlag, non_empty: bool) -> ChunkSummary {
    if let Some(choice) = answer.choice.as_mut() {
        match flag {
            TextFlag::Content => choice.content = non_empty,
            TextFlag::Reasoning => choice.reasoning = non_empty,
        }
    }
    answer
}

impl Shape {
    /// Whether `data` is this shape's bytes with its holes filled: then where its text lies.
    fn fit(&self, data: &[u8]) -> Option<Option<(usize, usize)>> {
        let mut rest = data;
        let mut from = 0;
        let mut text = None;
        for &(to, hole) in &self.holes {
            rest = rest.strip_prefix(&self.literal[from..to])?;
            from = to;
            let len = match hole {
                Hole::Id | Hole::Text => quoted_plain_len(rest)?,
                Hole::Created => integer_len(rest)?,
            };
            if hole == Hole::Text {
                let start = data.len() - rest.len();
                text = Some((start, start + len));
            }
            rest = &rest[len..];
        }
        (rest == &self.literal[from..]).then_some(text)
    }
}

/// The length of the plain string bytes at the start of `b` up to a closing quote, when they
/// are UTF-8.
fn quoted_plain_len(b: &[u8]) -> Option<usize> {
    let len = plain_utf8_run(b)?;
    (b.get(len) == Some(&b'"')).then_some(len)
}

/// The length of the digits at the start of `b` when they make a JSON integer.
fn integer_len(b: &[u8]) -> Option<usize> {
    let len = b.iter().take_while(|d| d.is_ascii_digit()).count();
    (len == 1 || (len > 1 && b[0] != b'0')).then_some(len)
}

/// The top-level object's state between members.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Top {
    out: ChunkSummary,
    seen: Seen,
    object_is_error: bool,
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
    /// Text values read (`delta.content`, `text`, …) that were strings, and where the last
    /// one lies between its quotes and which flag it sets.
    text_values: u32,
    text_span: Option<(usize, usize, TextFlag)>,
    /// Where the first top-level `id` string and `created` integer lie.
    id_span: Option<(usize, usize)>,
    created_span: Option<(usize, usize)>,
    /// A top-level `timings` or `metrics` member was seen.
    names_timings: bool,
}

/// The choice flag a text value sets when it is non-empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextFlag {
    Content,
    Reasoning,
}

/// A string's bytes between the quotes, escapes not decoded.
struct Str<'a> {
    raw: &'a [u8],
    escaped: bool,
}

impl Str<'_> {
    fn non_empty(&self) -> bool {
        !self.raw.is_empty()
    }
}

impl<'a> Cursor<'a> {
    fn new(b: &'a [u8]) -> Self {
        Cursor {
            b,
            i: 0,
            text_values: 0,
            text_span: None,
            id_span: None,
            created_span: None,
            names_timings: false,
        }
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    #[inline]
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    #[inline]
    fn eat(&mut self, byte: u8) -> Option<()> {
        if self.peek()? == byte {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    /// A string, at its opening quote. Escapes other than `\u` are checked, not decoded.
    fn string(&mut self) -> Option<Str<'a>> {
        self.eat(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            self.i += plain_run(&self.b[self.i..]);
            self.b.get(self.i)?;
            match self.b[self.i] {
                b'"' => {
                    let raw = &self.b[start..self.i];
                    self.i += 1;
                    return Some(Str { raw, escaped });
                }
                b'\\' => {}
                _ => return None, // raw control characters are invalid JSON
            }
            match self.b.get(self.i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                _ => return None, // `\u` (surrogates) and invalid escapes: serde decides
            }
            escaped = true;
            self.i += 2;
        }
    }

    /// `null` or a string: whether the string is non-empty.
    fn opt_text(&mut self, flag: TextFlag) -> Option<Option<bool>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b'"' => {
                let s = self.string()?;
                self.text_values += 1;
                self.text_span = Some((self.i - 1 - s.raw.len(), self.i - 1, flag));
                Some(Some(s.non_empty()))
            }
            _ => None,
        }
    }

    /// `null` or an unsigned integer that fits `u64`.
    fn opt_u64(&mut self) -> Option<Option<u64>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b'0'..=b'9' => {
                let start = self.i;
                let mut value: u64 = 0;
                while let Some(&d @ b'0'..=b'9') = self.b.get(self.i) {
                    value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
                    self.i += 1;
                }
                if self.b[start] == b'0' && self.i - start > 1 {
                    return None;
                }
                match self.b.get(self.i) {
                    Some(b'.' | b'e' | b'E') => None,
                    _ => Some(Some(value)),
                }
            }
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.ws();
        if self.b.get(self.i..self.i + word.len())? == word {
            self.i += word.len();
            Some(())
        } else {
            None
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.b.get(self.i) {
            self.i += 1;
        }
        self.i - start
    }

    /// Any number, validated by JSON's grammar.
    fn number(&mut self) -> Option<()> {
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.b.get(self.i)? {
            b'0' => {
                self.i += 1;
                if let Some(b'0'..=b'9') = self.b.get(self.i) {
                    return None;
                }
            }
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    /// Any value, validated and skipped.
    fn skip(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' => self.object(|c, _| c.skip(depth + 1)),
            b'[' => {
                self.i += 1;
                if self.peek()? == b']' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    match self.peek()? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// An object; `on_member` reads each value given its (unescaped) key.
    fn object<F>(&mut self, mut on_member: F) -> Option<()>
    where
        F: FnMut(&mut Self, &'a [u8]) -> Option<()>,
    {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let key = self.string()?;
            if key.escaped {
                return None; // serde matches the decoded key
            }
            self.eat(b':')?;
            on_member(self, key.raw)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The top-level chunk object.
    fn chunk(&mut self) -> Option<ChunkSummary> {
        let mut top = Top::default();
        self.object(|c, key| c.top_member(key, &mut top))?;
        let mut out = top.out;
        out.is_error |= top.object_is_error;
        Some(out)
    }

    fn top_member(&mut self, key: &[u8], top: &mut Top) -> Option<()> {
        match key {
            b"choices" => {
                top.seen.once(0)?;
                top.out.choice = self.choices()?;
                Some(())
            }
            b"usage" => {
                top.seen.once(1)?;
                top.out.usage = self.usage()?;
                Some(())
            }
            b"error" => {
                top.seen.once(2)?;
                if self.peek()? == b'n' {
                    self.literal(b"null")
                } else {
                    top.out.is_error = true;
                    self.skip(1)
                }
            }
            b"id" if self.id_span.is_none() && self.peek()? == b'"' => {
                let s = self.string()?;
                if !s.escaped {
                    self.id_span = Some((self.i - 1 - s.raw.len(), self.i - 1));
                }
                Some(())
            }
            b"created" if self.created_span.is_none() => {
                self.peek()?;
                let start = self.i;
                self.skip(1)?;
                if self.b[start..self.i].iter().all(u8::is_ascii_digit) {
                    self.created_span = Some((start, self.i));
                }
                Some(())
            }
            b"timings" | b"metrics" => {
                self.names_timings = true;
                self.skip(1)
            }
            b"object" => {
                top.seen.once(3)?;
                match self.peek()? {
                    b'n' => self.literal(b"null"),
                    b'"' => {
                        let s = self.string()?;
                        if s.escaped {
                            return None;
                        }
                        top.object_is_error = s.raw == b"error";
                        Some(())
                    }
                    _ => None,
                }
            }
            _ => self.skip(1),
        }
    }

    /// `choices`: `null` or an array whose first element is a choice object.
    fn choices(&mut self) -> Option<Option<ChoiceFlags>> {
        match self.peek()? {
            b'n' => return self.literal(b"null").map(|()| None),
            b'[' => self.i += 1,
            _ => return None,
        }
        if self.peek()? == b']' {
            self.i += 1;
            return Some(None);
        }
        let first = self.choice()?;
        loop {
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    self.skip(2)?;
                }
                b']' => {
                    self.i += 1;
                    return Some(Some(first));
                }
                _ => return None,
            }
        }
    }

    fn choice(&mut self) -> Option<ChoiceFlags> {
        let mut flags = ChoiceFlags::default();
        let mut seen = Seen::default();
        self.object(|c, key| match key {
            b"delta" => {
                seen.once(0)?;
                match c.peek()? {
                    b'n' => c.literal(b"null"),
                    b'{' => c.delta(&mut flags),
                    _ => None,
                }
            }
            b"text" => {
                seen.once(1)?;
                flags.content |= c.opt_text(TextFlag::Content)?.unwrap_or(false);
                Some(())
            }
            _ => c.skip(3),
        })?;
        Some(flags)
    }

    fn delta(&mut self, flags: &mut ChoiceFlags) -> Option<()> {
        let mut seen = Seen::default();
        self.object(|c, key| {
            let (bit, flag) = match key {
                b"content" => (0, TextFlag::Content),
                b"reasoning_content" => (1, TextFlag::Reasoning),
                b"reasoning" => (2, TextFlag::Reasoning),
                b"tool_calls" => {
                    seen.once(3)?;
                    return c.literal(b"null"); // any other value: serde reads the calls
                }
                _ => return c.skip(4),
            };
            seen.once(bit)?;
            let non_empty = c.opt_text(flag)?.unwrap_or(false);
            match flag {
                TextFlag::Content => flags.content |= non_empty,
                TextFlag::Reasoning => flags.reasoning |= non_empty,
            }
            Some(())
        })
    }

    fn usage(&mut self) -> Option<Option<UsageCounts>> {
        match self.peek()? {
            b'n' => return self.literal(b"null").map(|()| None),
            b'{' => {}
            _ => return None,
        }
        let mut usage = UsageCounts::default();
        let mut seen = Seen::default();
        self.object(|c, key| match key {
            b"prompt_tokens" => {
                seen.once(0)?;
                usage.prompt_tokens = c.opt_u64()?;
                Some(())
            }
            b"completion_tokens" => {
                seen.once(1)?;
                usage.completion_tokens = c.opt_u64()?;
                Some(())
            }
            b"prompt_tokens_details" => {
                seen.once(2)?;
                match c.peek()? {
                    b'n' => c.literal(b"null"),
                    b'{' => {
                        let mut seen_cached = false;
                        c.object(|c, key| match key {
                            b"cached_tokens" => {
                                if std::mem::replace(&mut seen_cached, true) {
                                    return None;
                                }
                                usage.cached_tokens = c.opt_u64()?;
                                Some(())
                            }
                            _ => c.skip(3),
                        })
                    }
                    _ => None,
                }
            }
            _ => c.skip(2),
        })?;
        Some(Some(usage))
    }
}

/// Known keys seen in one object: serde rejects a duplicate, so the scan hands it over.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Seen(u8);

impl Seen {
    fn once(&mut self, bit: u8) -> Option<()> {
        let mask = 1 << bit;
        if self.0 & mask != 0 {
            return None;
        }
        self.0 |= mask;
        Some(())
    }
}

#[cfg(test)]
mod tests;
