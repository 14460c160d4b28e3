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
    // Keys and strings must be UTF-8 for serde; checking once up front keeps the scan simple.
    if !data.is_ascii() && std::str::from_utf8(data).is_err() {
        return None;
    }
    let mut c = Cursor { b: data, i: 0 };
    c.ws();
    let summary = c.chunk()?;
    c.ws();
    (c.i == data.len()).then_some(summary)
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
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
            let rest = &self.b[self.i..];
            let at = memchr::memchr2(b'"', b'\\', rest)?;
            if rest[..at].iter().any(|&b| b < 0x20) {
                return None; // raw control characters are invalid JSON
            }
            self.i += at;
            if self.b[self.i] == b'"' {
                let raw = &self.b[start..self.i];
                self.i += 1;
                return Some(Str { raw, escaped });
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
            b'"' => self.string().map(|s| Some(s.non_empty())),
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
        let mut out = ChunkSummary::default();
        let mut seen = Seen::default();
        let mut object_is_error = false;
        self.object(|c, key| match key {
            b"choices" => {
                seen.once(0)?;
                out.choice = c.choices()?;
                Some(())
            }
            b"usage" => {
                seen.once(1)?;
                out.usage = c.usage()?;
                Some(())
            }
            b"error" => {
                seen.once(2)?;
                if c.peek()? == b'n' {
                    c.literal(b"null")
                } else {
                    out.is_error = true;
                    c.skip(1)
                }
            }
            b"object" => {
                seen.once(3)?;
                match c.peek()? {
                    b'n' => c.literal(b"null"),
                    b'"' => {
                        let s = c.string()?;
                        if s.escaped {
                            return None;
                        }
                        object_is_error = s.raw == b"error";
                        Some(())
                    }
                    _ => None,
                }
            }
            _ => c.skip(1),
        })?;
        out.is_error |= object_is_error;
        Some(out)
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
#[derive(Default)]
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
mod tests {
    use super::*;
    use crate::client::stream::parse_chunk_serde;
    use proptest::prelude::*;

    const KEYS: &[&str] = &[
        "choices",
        "usage",
        "error",
        "object",
        "delta",
        "content",
        "reasoning",
        "reasoning_content",
        "text",
        "prompt_tokens",
        "completion_tokens",
        "prompt_tokens_details",
        "cached_tokens",
        "id",
        "index",
        "finish_reason",
    ];

    /// JSON text: leaves, arrays and objects over the keys the scan cares about (duplicates
    /// allowed), with optional whitespace.
    fn json_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("false".to_string()),
            Just("\"\"".to_string()),
            Just("\"error\"".to_string()),
            Just("\"a\\\"b\\n\"".to_string()),
            Just("\"\\u00e9\"".to_string()),
            Just("\"é\"".to_string()),
            Just("\"x\ty\"".to_string()),
            Just("18446744073709551616".to_string()),
            Just("007".to_string()),
            Just("-0.5e+3".to_string()),
            Just("1.".to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            any::<i32>().prop_map(|n| n.to_string()),
            any::<f32>().prop_map(|x| format!("{x:?}")),
            "[a-z ]{0,6}".prop_map(|s| format!("\"{s}\"")),
        ];
        leaf.prop_recursive(5, 48, 6, |inner| {
            let ws = prop_oneof![Just(""), Just(""), Just(" "), Just("\n\t")];
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec((prop::sample::select(KEYS), inner, ws), 0..5).prop_map(
                    |members| {
                        let body: Vec<String> = members
                            .iter()
                            .map(|(k, v, w)| format!("{w}\"{k}\"{w}:{w}{v}{w}"))
                            .collect();
                        format!("{{{}}}", body.join(","))
                    }
                ),
            ]
        })
    }

    /// Chunk-shaped text: the real layout with random field values.
    fn chunk_text() -> impl Strategy<Value = String> {
        (json_text(), json_text(), json_text(), json_text(), json_text()).prop_map(
            |(content, reasoning, usage, error, extra)| {
                format!(
                    r#"{{"id":"c","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"content":{content},"reasoning_content":{reasoning}}},"finish_reason":null}},{extra}],"usage":{usage},"error":{error}}}"#
                )
            },
        )
    }

    /// A random edit: delete, insert or replace one byte.
    fn mutate(text: String, edit: (u8, usize, u8)) -> Vec<u8> {
        let mut bytes = text.into_bytes();
        let (op, at, byte) = edit;
        let at = at % (bytes.len() + 1);
        match op % 4 {
            0 => {}
            1 if at < bytes.len() => {
                bytes.remove(at);
            }
            2 => bytes.insert(at, byte),
            _ if at < bytes.len() => bytes[at] = byte,
            _ => {}
        }
        bytes
    }

    fn agree(data: &[u8]) -> Result<(), TestCaseError> {
        if let Some(summary) = fast(data) {
            let reference = parse_chunk_serde(data);
            prop_assert!(
                reference.as_ref().ok() == Some(&summary),
                "scan {:?} but serde {:?} on {:?}",
                summary,
                reference,
                String::from_utf8_lossy(data)
            );
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn scan_agrees_with_serde_on_random_json(text in json_text(), edit in (any::<u8>(), any::<usize>(), any::<u8>())) {
            agree(text.as_bytes())?;
            agree(&mutate(text, edit))?;
        }

        #[test]
        fn scan_agrees_with_serde_on_random_chunks(text in chunk_text(), edit in (any::<u8>(), any::<usize>(), any::<u8>())) {
            agree(text.as_bytes())?;
            agree(&mutate(text, edit))?;
        }
    }

    #[test]
    fn common_chunks_take_the_fast_path() {
        let chunks: &[(&str, ChunkSummary)] = &[
            (
                r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":" tok"},"logprobs":null,"finish_reason":null}]}"#,
                ChunkSummary {
                    choice: Some(ChoiceFlags {
                        reasoning: true,
                        content: false,
                    }),
                    ..ChunkSummary::default()
                },
            ),
            (
                r#"{"choices":[{"delta":{"role":"assistant","content":"Hi \"x\"\n"}}]}"#,
                ChunkSummary {
                    choice: Some(ChoiceFlags {
                        reasoning: false,
                        content: true,
                    }),
                    ..ChunkSummary::default()
                },
            ),
            (
                r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":3}}}"#,
                ChunkSummary {
                    choice: None,
                    usage: Some(UsageCounts {
                        prompt_tokens: Some(7),
                        completion_tokens: Some(4),
                        cached_tokens: Some(3),
                    }),
                    is_error: false,
                },
            ),
            (
                r#"{"choices":[{"text":"","index":0}]}"#,
                ChunkSummary {
                    choice: Some(ChoiceFlags::default()),
                    ..ChunkSummary::default()
                },
            ),
            (
                r#"{"error":{"message":"overloaded","code":503}}"#,
                ChunkSummary {
                    is_error: true,
                    ..ChunkSummary::default()
                },
            ),
            (
                r#" {"object":"error","message":"bad"} "#,
                ChunkSummary {
                    is_error: true,
                    ..ChunkSummary::default()
                },
            ),
        ];
        for (text, expected) in chunks {
            assert_eq!(fast(text.as_bytes()), Some(*expected), "{text}");
            assert_eq!(parse_chunk_serde(text.as_bytes()).ok(), Some(*expected));
        }
    }

    #[test]
    fn unusual_input_is_left_to_serde() {
        for text in [
            r#"{"choices":[{"delta":{"content":"\u00e9"}}]}"#,
            r#"{"choi\u0063es":[]}"#,
            r#"{"choices":[],"choices":[]}"#,
            r#"{"choices":"nope"}"#,
            r#"{"usage":{"prompt_tokens":1.0}}"#,
            r#"{"usage":{"prompt_tokens":-1}}"#,
            r#"[1]"#,
            r#"{"a":1}x"#,
            "{not json",
            "",
        ] {
            assert_eq!(fast(text.as_bytes()), None, "{text}");
        }
    }
}
