//! Hand-written scan of a streamed chunk's few measured fields; serde is the fallback.
//!
//! [`fast`] reads `choices[0]`'s text flags, `usage`, `error` and `object` in one pass
//! without building anything. It answers `None` for whatever it does not handle exactly
//! like the serde reference in `stream.rs` (`\u` escapes, escaped keys, non-UTF-8 bytes,
//! duplicate known keys, odd types, deep nesting, invalid JSON), so the caller falls back to
//! serde, which then decides. A property test checks that the two agree.

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

/// Bytes that end a run of plain string bytes: the quote, the backslash and raw control
/// characters.
const STRING_STOP: [bool; 256] = {
    let mut stop = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        stop[b] = true;
        b += 1;
    }
    stop[b'"' as usize] = true;
    stop[b'\\' as usize] = true;
    stop
};

/// Nesting deeper than this goes to serde (whose own limit is 128).
const MAX_DEPTH: u32 = 64;

/// Scan one `data` payload; `None` means "ask serde".
pub fn fast(data: &[u8]) -> Option<ChunkSummary> {
    scan(data, None, &mut None).map(|(summary, _)| summary)
}

/// Keys and strings must be UTF-8 for serde; checking once up front keeps the scan simple.
fn is_utf8(bytes: &[u8]) -> bool {
    bytes.is_ascii() || std::str::from_utf8(bytes).is_ok()
}

/// A whole payload's scan, from the start or resumed after a prefix at `(offset, state)`;
/// `checkpoint` gets the last place a later chunk may resume. The cursor comes back too, for
/// what it saw of the text values.
fn scan<'a>(
    data: &'a [u8],
    resume: Option<(usize, Top)>,
    checkpoint: &mut Option<(usize, Top)>,
) -> Option<(ChunkSummary, Cursor<'a>)> {
    if !is_utf8(data) {
        return None;
    }
    let mut c = Cursor::new(data);
    let summary = match resume {
        Some((offset, top)) => {
            c.i = offset;
            c.members(top, checkpoint)?
        }
        None => {
            c.ws();
            c.chunk(checkpoint)?
        }
    };
    c.ws();
    (c.i == data.len()).then_some((summary, c))
}

/// What a stream's earlier chunks teach the scan of its next ones; the scan is a pure
/// function of the bytes it reads, so each shortcut gives exactly a full scan's answer.
///
/// - `prefix`: the leading top-level members a chunk shares with the next (`id`, `object`,
///   `created`, `model`) and the scan's state after them: a chunk that starts with them
///   resumes there.
/// - `template`: a chunk's bytes around its one text value (`delta.content`, …). A chunk that
///   is the same bytes around a plain string (no quote, backslash or control character) has
///   the answer the template's chunk had with an empty or a non-empty text, computed once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamMemo {
    prefix: Vec<u8>,
    top: Top,
    /// Valid when `templated`; its buffers outlive it, for the next template.
    template: Template,
    templated: bool,
    /// The bytes around the last fully scanned chunk's one text value, when `has_candidate`:
    /// a template is made when the next chunk repeats them (a stream's first, role-carrying
    /// chunk does not).
    candidate: Around,
    has_candidate: bool,
    /// Where a template's two trial chunks are put together.
    scratch: Vec<u8>,
}

/// The bytes before and after a chunk's text value, in one buffer.
#[derive(Debug, Clone, Default, PartialEq)]
struct Around {
    bytes: Vec<u8>,
    head_len: usize,
}

impl Around {
    fn set(&mut self, head: &[u8], tail: &[u8]) {
        self.bytes.clear();
        self.bytes.extend_from_slice(head);
        self.bytes.extend_from_slice(tail);
        self.head_len = head.len();
    }

    fn head(&self) -> &[u8] {
        &self.bytes[..self.head_len]
    }

    fn tail(&self) -> &[u8] {
        &self.bytes[self.head_len..]
    }

    fn is(&self, head: &[u8], tail: &[u8]) -> bool {
        self.head() == head && self.tail() == tail
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Template {
    around: Around,
    if_empty: ChunkSummary,
    if_text: ChunkSummary,
}

impl Template {
    /// The answer for `data`, when it is the template's bytes around a plain string.
    fn answer(&self, data: &[u8]) -> Option<ChunkSummary> {
        let (head, tail) = (self.around.head(), self.around.tail());
        let middle_end = data.len().checked_sub(tail.len())?;
        if middle_end < head.len() || !data.starts_with(head) {
            return None;
        }
        if !data.ends_with(tail) {
            return None;
        }
        let middle = &data[head.len()..middle_end];
        if middle.iter().any(|&b| STRING_STOP[usize::from(b)]) || !is_utf8(middle) {
            return None;
        }
        Some(if middle.is_empty() {
            self.if_empty
        } else {
            self.if_text
        })
    }

    /// Make this the template of the bytes `head` and `tail` around one text value; false
    /// when they do not make a chunk with either text.
    fn remake(&mut self, head: &[u8], tail: &[u8], scratch: &mut Vec<u8>) -> bool {
        let mut with = |text: &[u8]| {
            scratch.clear();
            scratch.extend_from_slice(head);
            scratch.extend_from_slice(text);
            scratch.extend_from_slice(tail);
            fast(scratch)
        };
        let (Some(if_empty), Some(if_text)) = (with(b""), with(b"x")) else {
            return false;
        };
        self.around.set(head, tail);
        (self.if_empty, self.if_text) = (if_empty, if_text);
        true
    }
}

/// Up to this many finished streams' memos are kept per thread for reuse.
const SPARE_MEMOS: usize = 64;

thread_local! {
    static SPARE: std::cell::RefCell<Vec<StreamMemo>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl StreamMemo {
    /// An empty memo, in the buffers of a finished stream's when this thread kept one: made
    /// anew, a stream's memo cost about eight allocations per request.
    pub fn take() -> StreamMemo {
        let spare = SPARE.with(|spare| spare.borrow_mut().pop());
        spare.map_or_else(StreamMemo::default, |mut memo| {
            memo.prefix.clear();
            memo.top = Top::default();
            memo.templated = false;
            memo.has_candidate = false;
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

/// [`fast`], reusing and updating `memo` from the previous chunks of the same stream.
pub fn fast_resuming(data: &[u8], memo: &mut StreamMemo) -> Option<ChunkSummary> {
    if memo.templated
        && let Some(answer) = memo.template.answer(data)
    {
        return Some(answer);
    }
    let resume = (!memo.prefix.is_empty() && data.starts_with(&memo.prefix))
        .then_some((memo.prefix.len(), memo.top));
    let mut checkpoint = None;
    let (summary, c) = scan(data, resume, &mut checkpoint)?;
    if let Some((end, top)) = checkpoint {
        memo.prefix.clear();
        memo.prefix.extend_from_slice(&data[..end]);
        memo.top = top;
    }
    if let (1, Some((start, end))) = (c.text_values, c.text_span) {
        let (head, tail) = (&data[..start], &data[end..]);
        // A miss of the template itself (an escape in the text) keeps it.
        let templated = memo.templated && memo.template.around.is(head, tail);
        if !templated {
            if memo.has_candidate && memo.candidate.is(head, tail) {
                memo.templated = memo.template.remake(head, tail, &mut memo.scratch);
            } else {
                memo.candidate.set(head, tail);
                memo.has_candidate = true;
            }
        }
    }
    Some(summary)
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
    /// one lies between its quotes.
    text_values: u32,
    text_span: Option<(usize, usize)>,
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
            // Chunk strings are short: a byte loop beats memchr's set-up, and checks for raw
            // control characters (invalid JSON) in the same pass.
            while !STRING_STOP[usize::from(*self.b.get(self.i)?)] {
                self.i += 1;
            }
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
    fn opt_text(&mut self) -> Option<Option<bool>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b'"' => {
                let s = self.string()?;
                self.text_values += 1;
                self.text_span = Some((self.i - 1 - s.raw.len(), self.i - 1));
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

    /// The top-level chunk object. `checkpoint` gets the offset after each separator between
    /// leading members, before any member whose value varies from chunk to chunk.
    fn chunk(&mut self, checkpoint: &mut Option<(usize, Top)>) -> Option<ChunkSummary> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(ChunkSummary::default());
        }
        self.members(Top::default(), checkpoint)
    }

    /// The top-level members from a key on, then the closing brace.
    fn members(
        &mut self,
        mut top: Top,
        checkpoint: &mut Option<(usize, Top)>,
    ) -> Option<ChunkSummary> {
        let mut leading = true;
        loop {
            let key = self.string()?;
            if key.escaped {
                return None; // serde matches the decoded key
            }
            self.eat(b':')?;
            leading &= !matches!(key.raw, b"choices" | b"usage" | b"error");
            self.top_member(key.raw, &mut top)?;
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    if leading {
                        *checkpoint = Some((self.i, top));
                    }
                }
                b'}' => {
                    self.i += 1;
                    break;
                }
                _ => return None,
            }
        }
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
                flags.content |= c.opt_text()?.unwrap_or(false);
                Some(())
            }
            _ => c.skip(3),
        })?;
        Some(flags)
    }

    fn delta(&mut self, flags: &mut ChoiceFlags) -> Option<()> {
        let mut seen = Seen::default();
        self.object(|c, key| {
            let (bit, is_content) = match key {
                b"content" => (0, true),
                b"reasoning_content" => (1, false),
                b"reasoning" => (2, false),
                b"tool_calls" => {
                    seen.once(3)?;
                    return c.literal(b"null"); // any other value: serde reads the calls
                }
                _ => return c.skip(4),
            };
            seen.once(bit)?;
            let non_empty = c.opt_text()?.unwrap_or(false);
            if is_content {
                flags.content |= non_empty;
            } else {
                flags.reasoning |= non_empty;
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
