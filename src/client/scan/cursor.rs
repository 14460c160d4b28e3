//! The cursor that walks one chunk's JSON: its few measured fields read, the rest skipped,
//! anything serde might read differently declined.

use super::super::json_text::plain_run;
use super::{ChoiceFlags, ChunkSummary, UsageCounts};

/// Nesting deeper than this goes to serde (whose own limit is 128).
const MAX_DEPTH: u32 = 64;

/// The top-level object's state between members.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Top {
    out: ChunkSummary,
    seen: Seen,
    object_is_error: bool,
}

pub(super) struct Cursor<'a> {
    pub(super) b: &'a [u8],
    pub(super) i: usize,
    /// Text values read (`delta.content`, `text`, …) that were strings, and where the last
    /// one lies between its quotes and which flag it sets.
    pub(super) text_values: u32,
    pub(super) text_span: Option<(usize, usize, TextFlag)>,
    /// Where the first top-level `id` string and `created` integer lie.
    pub(super) id_span: Option<(usize, usize)>,
    pub(super) created_span: Option<(usize, usize)>,
    /// A top-level `timings` or `metrics` member was seen.
    pub(super) names_timings: bool,
}

/// The choice flag a text value sets when it is non-empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TextFlag {
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
    pub(super) fn new(b: &'a [u8]) -> Self {
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
    pub(super) fn ws(&mut self) {
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
    pub(super) fn chunk(&mut self) -> Option<ChunkSummary> {
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
            // Read from the chunk only by the full parser, which rejects a repeated one.
            b"timings" => {
                top.seen.once(4)?;
                self.names_timings = true;
                self.skip(1)
            }
            b"metrics" => {
                top.seen.once(5)?;
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
            b"completion_tokens_details" => {
                seen.once(3)?;
                match c.peek()? {
                    b'n' => c.literal(b"null"),
                    b'{' => {
                        let mut seen_reasoning = false;
                        c.object(|c, key| match key {
                            b"reasoning_tokens" => {
                                if std::mem::replace(&mut seen_reasoning, true) {
                                    return None;
                                }
                                usage.reasoning_tokens = c.opt_u64()?;
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
