//! Hand-written scan of a streamed chunk's few measured fields; serde is the fallback.
//!
//! [`fast`] reads `choices[0]`'s text flags, `usage`, `error` and `object` in one pass
//! without building anything. It answers `None` for whatever it does not handle exactly
//! like the serde parser in `stream/chunk.rs` (`\u` escapes, escaped keys, non-UTF-8 bytes,
//! duplicate known keys, odd types, deep nesting, invalid JSON, any non-null `tool_calls`, and
//! a chunk without text that names the server's timing, which the stream keeps), so the
//! caller parses the chunk with serde instead, which then decides. Property tests check that
//! the two agree.

mod cursor;
mod memo;

use cursor::{Cursor, TextFlag};
#[cfg(test)]
use memo::{MAX_SHAPES, SHAPES};
pub use memo::{StreamMemo, fast_with_memo};

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
    /// `completion_tokens_details.reasoning_tokens` (Responses: `output_tokens_details`).
    pub reasoning_tokens: Option<u64>,
}

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
    // The stream keeps the timing a chunk without text names: the full parser reads it.
    let timing_kept = c.names_timings && !summary.carries_text();
    (c.i == data.len() && !timing_kept).then_some((summary, c))
}

impl ChunkSummary {
    /// The first choice carries reasoning or content text: the stream takes the server's
    /// timing only from chunks without.
    pub fn carries_text(&self) -> bool {
        self.choice.is_some_and(|c| c.reasoning || c.content)
    }
}

#[cfg(test)]
mod tests;
