//! A chat or completions chunk parsed by serde, in one pass, into everything the stream keeps
//! from it: the first choice's text flags, the usage, an error mark, the server's timing, and
//! the reply's text and tool-call pieces. The parser for what the scan declines, and the
//! reference the scan must agree with.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};

use super::super::scan::{ChoiceFlags, ChunkSummary, UsageCounts};
use super::timings::{ServerTimings, TimingsObject, server_timings};

/// Whether a JSON string is non-empty; `null` deserializes through `Option` as `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct NonEmpty(pub(super) bool);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = NonEmpty;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<NonEmpty, E> {
                Ok(NonEmpty(!s.is_empty()))
            }
        }
        d.deserialize_str(V)
    }
}

pub(super) fn non_empty(field: Option<NonEmpty>) -> bool {
    matches!(field, Some(NonEmpty(true)))
}

#[derive(Debug, Default, Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default)]
    reasoning_content: Option<NonEmpty>,
    #[serde(default)]
    reasoning: Option<NonEmpty>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallPiece<'a>>>,
}

/// One element of `delta.tool_calls`: a call's index, id, name or an argument fragment.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
pub struct ToolCallPiece<'a> {
    #[serde(default)]
    pub index: Option<usize>,
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub function: Option<FunctionPiece<'a>>,
}

#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
pub struct FunctionPiece<'a> {
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub arguments: Option<Cow<'a, str>>,
}

/// Whether any tool call in a delta carries a name or an argument fragment.
fn tool_call_output(calls: &[ToolCallPiece<'_>]) -> bool {
    let non_empty = |text: &Option<Cow<'_, str>>| text.as_deref().is_some_and(|t| !t.is_empty());
    calls.iter().any(|call| {
        call.function
            .as_ref()
            .is_some_and(|f| non_empty(&f.name) || non_empty(&f.arguments))
    })
}

#[derive(Debug, Default, Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    /// Completions API text.
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    /// Why generation ended (`length`: cut by `max_tokens`), on the last chunk.
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

/// The first element of `choices`, the others skipped.
#[derive(Debug, Default)]
struct FirstChoice<'a>(Option<Choice<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<Choice<'a>>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<Choice<'a>>()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(FirstChoice(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct CompletionTokensDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionTokensDetails>,
}

/// One streamed chunk, as much of it as the stream keeps.
#[derive(Debug, Default, Deserialize)]
struct ChunkEvent<'a> {
    #[serde(default, borrow)]
    choices: FirstChoice<'a>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<IgnoredAny>,
    /// vLLM and others mark some error payloads with `"object": "error"`.
    #[serde(default, borrow)]
    object: Option<Cow<'a, str>>,
    #[serde(default)]
    timings: Option<TimingsObject>,
    #[serde(default)]
    metrics: Option<TimingsObject>,
}

/// Everything one chunk tells the stream, its strings borrowed from the chunk's bytes unless
/// they hold escapes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedChunk<'a> {
    /// What the measurement reads: the first choice's flags, the usage, an error mark.
    pub summary: ChunkSummary,
    /// The server's own timing (`timings` or `metrics`).
    pub timings: Option<ServerTimings>,
    /// The first choice's reply text: `delta.content`, or a completion's `text`.
    pub content: Option<Cow<'a, str>>,
    /// The first choice's `delta.tool_calls`.
    pub tool_calls: Vec<ToolCallPiece<'a>>,
    /// vLLM's `metrics.speculative_decoding`.
    pub spec_decoding: Option<crate::client::SpecDecoding>,
    /// The first choice's `finish_reason`, on the chunk that ends it.
    pub finish_reason: Option<Cow<'a, str>>,
}

/// One chunk through serde, once: what the scan declines, and the reference it must agree
/// with.
pub fn parse_chunk(data: &[u8]) -> Result<ParsedChunk<'_>, serde_json::Error> {
    let event: ChunkEvent<'_> = serde_json::from_slice(data)?;
    let mut content = None;
    let mut tool_calls = Vec::new();
    let mut finish_reason = None;
    let choice = event.choices.0.map(|choice| {
        finish_reason = choice.finish_reason;
        let text_flag = choice.text.as_deref().is_some_and(|t| !t.is_empty());
        let flags = match choice.delta {
            Some(delta) => {
                let calls = delta.tool_calls.unwrap_or_default();
                let flags = ChoiceFlags {
                    reasoning: non_empty(delta.reasoning_content) || non_empty(delta.reasoning),
                    content: delta.content.as_deref().is_some_and(|t| !t.is_empty()) || text_flag,
                    tool_call: tool_call_output(&calls),
                };
                content = delta.content;
                tool_calls = calls;
                flags
            }
            None => ChoiceFlags {
                content: text_flag,
                ..ChoiceFlags::default()
            },
        };
        content = content.take().or(choice.text);
        flags
    });
    let usage = event.usage.map(|usage| UsageCounts {
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cached_tokens: usage.prompt_tokens_details.and_then(|d| d.cached_tokens),
        reasoning_tokens: usage
            .completion_tokens_details
            .and_then(|d| d.reasoning_tokens),
    });
    Ok(ParsedChunk {
        summary: ChunkSummary {
            choice,
            usage,
            is_error: event.error.is_some() || event.object.as_deref() == Some("error"),
        },
        timings: server_timings(event.timings, event.metrics.as_ref()),
        content,
        tool_calls,
        spec_decoding: event.metrics.and_then(|m| m.1),
        finish_reason,
    })
}
