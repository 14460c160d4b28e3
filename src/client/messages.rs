//! Reading an Anthropic Messages API stream (`POST /v1/messages`): typed events by their `type`.
//!
//! Text comes as `content_block_delta` with a `text_delta`, thinking as a `thinking_delta`,
//! tool-call arguments as an `input_json_delta`; `message_start` and `message_delta` carry the
//! usage, `message_stop` ends the stream, `error` is the server's error. `ping` and the content
//! blocks' starts and stops carry nothing measured.
//!
//! The API's `input_tokens` leaves out the tokens read from or written to the prompt cache, so
//! the prompt is their sum; the cached tokens are `cache_read_input_tokens`.

use std::borrow::Cow;

use serde::Deserialize;

use super::record::ErrorKind;
use super::stream::{EventOutcome, StreamFailure, StreamState, error_message};
use super::typed_event::{Event, UsageHolder};

/// A `content_block_delta`'s delta (`message_delta`'s holds the stop reason, read as none of
/// these).
#[derive(Debug, Default, Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
}

/// Take one Messages API event that arrived `now_ms` after the request start.
pub(super) fn on_event(state: &mut StreamState, data: &[u8], now_ms: f64) -> EventOutcome {
    if let Some(done) = state.count_event(data) {
        return done;
    }
    let event: Event<'_, Delta<'_>, UsageHolder> = match serde_json::from_slice(data) {
        Ok(event) => event,
        Err(err) => return EventOutcome::malformed("a Messages API event", &err, data),
    };
    match event.kind.as_ref() {
        "content_block_delta" => {
            let delta = event.delta.unwrap_or_default();
            if let Some(text) = delta.text.filter(|t| !t.is_empty()) {
                state.content_chunks += 1;
                state.first_content_ms.get_or_insert(now_ms);
                if let Some(reply) = state.reply.as_mut() {
                    reply.push_str(&text);
                }
                state.output_at(now_ms);
            } else if delta.thinking.is_some_and(|t| !t.is_empty()) {
                state.reasoning_chunks += 1;
                state.output_at(now_ms);
            } else if delta.partial_json.is_some_and(|t| !t.is_empty()) {
                state.tool_call_chunks += 1;
                state.first_tool_call_ms.get_or_insert(now_ms);
                state.output_at(now_ms);
            }
        }
        // The first usage (the prompt, as the stream opens), then the totals as it ends; each
        // field a later event carries replaces the earlier one.
        "message_start" => {
            if let Some(usage) = event.message.and_then(|m| m.usage) {
                state.take_usage(usage.messages_counts());
            }
        }
        "message_delta" => {
            if let Some(usage) = event.usage {
                state.take_usage(usage.messages_counts());
            }
        }
        "message_stop" => {
            state.done = true;
            return EventOutcome::Done;
        }
        "error" => {
            return EventOutcome::Failed(StreamFailure {
                kind: ErrorKind::ErrorObject,
                message: error_message(data),
                body: Some(data.to_vec()),
            });
        }
        _ => {}
    }
    EventOutcome::Continue
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(events: &[&str]) -> (StreamState, Vec<EventOutcome>) {
        let mut state = StreamState {
            reply: Some(String::new()),
            ..StreamState::default()
        };
        let outcomes = events
            .iter()
            .enumerate()
            .map(|(i, e)| on_event(&mut state, e.as_bytes(), i as f64))
            .collect();
        (state, outcomes)
    }

    #[test]
    fn a_stream_as_the_api_documents_it() {
        let (state, outcomes) = feed(&[
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":25,"cache_read_input_tokens":100,"cache_creation_input_tokens":3,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hmm"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello \"you\""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"!"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        assert!(matches!(outcomes.last(), Some(EventOutcome::Done)));
        assert!(state.done);
        assert_eq!(state.prompt_tokens, Some(128));
        assert_eq!(state.cached_tokens, Some(100));
        assert_eq!(state.completion_tokens, Some(15));
        assert_eq!((state.reasoning_chunks, state.content_chunks), (1, 2));
        assert_eq!(state.first_content_ms, Some(5.0));
        assert_eq!(state.first_output_ms, Some(2.0));
        assert_eq!(state.reply.as_deref(), Some("Hello \"you\"!"));
    }

    #[test]
    fn usage_sent_only_as_the_stream_ends_is_read_there() {
        // vLLM opens with zeros and sends every count with `message_delta`.
        let (state, _) = feed(&[
            r#"{"type":"message_start","message":{"usage":{"input_tokens":0,"output_tokens":0}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"k\":"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"input_tokens":8,"cache_read_input_tokens":32,"output_tokens":4}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        assert_eq!(state.prompt_tokens, Some(40));
        assert_eq!(state.cached_tokens, Some(32));
        assert_eq!(state.completion_tokens, Some(4));
        assert_eq!(state.tool_call_chunks, 1);
        assert_eq!(state.first_tool_call_ms, Some(1.0));
    }

    #[test]
    fn errors_and_foreign_events_fail_clearly() {
        let (_, outcomes) = feed(&[
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ]);
        match &outcomes[0] {
            EventOutcome::Failed(f) => {
                assert_eq!(f.kind, ErrorKind::ErrorObject);
                assert_eq!(f.message, "Overloaded");
            }
            other => panic!("{other:?}"),
        }
        let (_, outcomes) = feed(&[r#"{"id":"chatcmpl-1","choices":[]}"#]);
        match &outcomes[0] {
            EventOutcome::Failed(f) => {
                assert_eq!(f.kind, ErrorKind::MalformedEvent);
                assert!(
                    f.message.contains("not a Messages API event"),
                    "{}",
                    f.message
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
