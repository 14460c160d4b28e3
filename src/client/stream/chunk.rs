//! A chat or completions chunk's measured fields parsed by serde into borrowed structs: the
//! fallback for what the scan declines, and the reference it must agree with.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};

use super::super::scan::{self, ChoiceFlags, ChunkSummary, UsageCounts};

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
struct Delta {
    #[serde(default)]
    content: Option<NonEmpty>,
    #[serde(default)]
    reasoning_content: Option<NonEmpty>,
    #[serde(default)]
    reasoning: Option<NonEmpty>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

/// One element of `delta.tool_calls`: a call's id, name or an argument fragment.
#[derive(Debug, Default, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<NonEmpty>,
    #[serde(default)]
    arguments: Option<NonEmpty>,
}

/// Whether any tool call in a delta carries a name or an argument fragment.
fn tool_call_output(calls: Option<Vec<ToolCallDelta>>) -> bool {
    calls.into_iter().flatten().any(|call| {
        call.function
            .is_some_and(|f| non_empty(f.name) || non_empty(f.arguments))
    })
}

#[derive(Debug, Default, Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    /// Completions API text.
    #[serde(default)]
    text: Option<NonEmpty>,
}

/// The first element of `choices`, the others skipped.
#[derive(Debug, Default)]
struct FirstChoice(Option<Choice>);

impl<'de> Deserialize<'de> for FirstChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FirstChoice;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FirstChoice, A::Error> {
                let first = seq.next_element::<Choice>()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
            fn visit_unit<E: de::Error>(self) -> Result<FirstChoice, E> {
                Ok(FirstChoice(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
}

/// One streamed chunk, as much of it as the measurement needs.
#[derive(Debug, Default, Deserialize)]
struct ChunkEvent<'a> {
    #[serde(default)]
    choices: FirstChoice,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<IgnoredAny>,
    /// vLLM and others mark some error payloads with `"object": "error"`.
    #[serde(default, borrow)]
    object: Option<std::borrow::Cow<'a, str>>,
}

/// One chunk's measured fields: the hand-written scan, or serde when the scan declines.
pub fn parse_chunk(
    data: &[u8],
    memo: &mut scan::StreamMemo,
) -> Result<(ChunkSummary, bool), serde_json::Error> {
    match scan::fast_with_memo(data, memo) {
        Some(answer) => Ok(answer),
        None => parse_chunk_serde(data).map(|summary| (summary, true)),
    }
}

/// One chunk's measured fields through serde alone: the reference the scan must agree with.
pub fn parse_chunk_serde(data: &[u8]) -> Result<ChunkSummary, serde_json::Error> {
    let event: ChunkEvent<'_> = serde_json::from_slice(data)?;
    let choice = event.choices.0.map(|choice| {
        let (reasoning, content, tool_call) = match choice.delta {
            Some(delta) => (
                non_empty(delta.reasoning_content) || non_empty(delta.reasoning),
                non_empty(delta.content) || non_empty(choice.text),
                tool_call_output(delta.tool_calls),
            ),
            None => (false, non_empty(choice.text), false),
        };
        ChoiceFlags {
            reasoning,
            content,
            tool_call,
        }
    });
    let usage = event.usage.map(|usage| UsageCounts {
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cached_tokens: usage.prompt_tokens_details.and_then(|d| d.cached_tokens),
    });
    Ok(ChunkSummary {
        choice,
        usage,
        is_error: event.error.is_some() || event.object.as_deref() == Some("error"),
    })
}
