//! Reading a Responses API stream (`POST /v1/responses`): typed events by their `type`.
//!
//! Text comes as `response.output_text.delta`, reasoning as `response.reasoning_text.delta`
//! or `response.reasoning_summary_text.delta`, tool-call arguments as
//! `response.function_call_arguments.delta`; `response.completed` (or `response.incomplete`,
//! e.g. at `max_output_tokens`) ends the stream with the usage; `response.failed` and `error`
//! are the server's errors. Other event types (`response.created`, `…output_item.added`, …)
//! carry nothing measured and are passed over.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::record::ErrorKind;
use super::stream::{EventOutcome, StreamFailure, StreamState, error_message, excerpt};
use super::typed_event::Event;

/// A `delta` field's text, borrowed unless it holds escapes; any other shape (an event type
/// this reader does not measure may carry one) counts as empty.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Delta<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Other(IgnoredAny),
}

/// What an event's `type` means to the measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Reasoning,
    ToolCall,
    /// The last event of a successful stream.
    End,
    Failed,
    Other,
}

fn kind(name: &str) -> Kind {
    match name {
        "response.output_text.delta" | "response.refusal.delta" => Kind::Text,
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
            Kind::Reasoning
        }
        "response.function_call_arguments.delta" => Kind::ToolCall,
        "response.completed" | "response.incomplete" => Kind::End,
        "response.failed" | "error" => Kind::Failed,
        _ => Kind::Other,
    }
}

/// Take one Responses API event that arrived `now_ms` after the request start.
pub(super) fn on_event(state: &mut StreamState, data: &[u8], now_ms: f64) -> EventOutcome {
    if let Some(done) = state.count_event(data) {
        return done;
    }
    let event: Event<'_, Delta<'_>, IgnoredAny> = match serde_json::from_slice(data) {
        Ok(event) => event,
        Err(err) => return EventOutcome::malformed("a Responses API event", &err, data),
    };
    let delta = match &event.delta {
        Some(Delta::Text(text)) => text.as_ref(),
        Some(Delta::Other(_)) | None => "",
    };
    let non_empty = !delta.is_empty();
    match kind(&event.kind) {
        Kind::Text if non_empty => {
            state.content_chunks += 1;
            state.first_content_ms.get_or_insert(now_ms);
            if let Some(reply) = state.reply.as_mut() {
                reply.push_str(delta);
            }
            state.output_at(now_ms);
        }
        Kind::Reasoning if non_empty => {
            state.reasoning_chunks += 1;
            state.output_at(now_ms);
        }
        Kind::ToolCall if non_empty => {
            state.tool_call_chunks += 1;
            state.first_tool_call_ms.get_or_insert(now_ms);
            state.output_at(now_ms);
        }
        Kind::End => {
            if event.kind == "response.incomplete" && state.reply.is_some() {
                state.finish_reason = Some("length".into());
            }
            if let Some(usage) = event.response.and_then(|r| r.usage) {
                state.take_usage(usage.responses_counts());
            }
            state.done = true;
            return EventOutcome::Done;
        }
        Kind::Failed => {
            return EventOutcome::Failed(StreamFailure {
                kind: ErrorKind::ErrorObject,
                message: failure_message(data),
                body: Some(data.to_vec()),
            });
        }
        Kind::Text | Kind::Reasoning | Kind::ToolCall | Kind::Other => {}
    }
    EventOutcome::Continue
}

/// `response.failed` holds its error in `response.error`; an `error` event at the top.
fn failure_message(data: &[u8]) -> String {
    let value: Option<serde_json::Value> = serde_json::from_slice(data).ok();
    let nested = value
        .as_ref()
        .and_then(|v| v.pointer("/response/error/message"))
        .and_then(|m| m.as_str());
    match nested {
        Some(message) => excerpt(message.as_bytes()),
        None => error_message(data),
    }
}

#[cfg(test)]
mod tests {
    use super::super::stream::StreamFormat;
    use super::*;

    fn state() -> StreamState {
        StreamState {
            format: StreamFormat::Responses,
            ..StreamState::default()
        }
    }

    fn feed(state: &mut StreamState, events: &[(&str, f64)]) -> EventOutcome {
        let mut last = EventOutcome::Continue;
        for (data, t) in events {
            last = on_event(state, data.as_bytes(), *t);
            if last != EventOutcome::Continue {
                break;
            }
        }
        last
    }

    #[test]
    fn text_deltas_and_the_completed_usage_are_measured() {
        let mut s = state();
        s.reply = Some(String::new());
        let out = feed(
            &mut s,
            &[
                (
                    r#"{"type":"response.created","sequence_number":0,"response":{"id":"r","status":"in_progress","usage":null}}"#,
                    1.0,
                ),
                (
                    r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message","content":[]}}"#,
                    1.5,
                ),
                (
                    r#"{"type":"response.reasoning_text.delta","delta":"hm"}"#,
                    4.0,
                ),
                (
                    r#"{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":"Hi \"x\""}"#,
                    10.0,
                ),
                (r#"{"type":"response.output_text.delta","delta":""}"#, 11.0),
                (r#"{"type":"response.output_text.delta","delta":"!"}"#, 16.0),
                (
                    r#"{"type":"response.output_text.done","text":"Hi \"x\"!"}"#,
                    17.0,
                ),
                (
                    r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":8},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":15}}}"#,
                    18.0,
                ),
            ],
        );
        assert_eq!(out, EventOutcome::Done);
        assert!(s.done);
        assert_eq!(
            (s.first_output_ms, s.first_content_ms),
            (Some(4.0), Some(10.0))
        );
        assert_eq!((s.reasoning_chunks, s.content_chunks), (1, 2));
        assert_eq!(s.max_inter_chunk_ms, Some(6.0));
        assert_eq!(
            (s.prompt_tokens, s.completion_tokens, s.cached_tokens),
            (Some(12), Some(3), Some(8))
        );
        assert_eq!(s.reply.as_deref(), Some("Hi \"x\"!"));
    }

    #[test]
    fn an_incomplete_response_ends_the_stream_with_its_usage() {
        let mut s = state();
        let out = feed(
            &mut s,
            &[
                (r#"{"type":"response.output_text.delta","delta":"a"}"#, 2.0),
                (
                    r#"{"type":"response.incomplete","response":{"incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":5,"output_tokens":1}}}"#,
                    3.0,
                ),
            ],
        );
        assert_eq!(out, EventOutcome::Done);
        assert_eq!(s.completion_tokens, Some(1));
    }

    #[test]
    fn function_call_arguments_are_tool_call_output() {
        let mut s = state();
        feed(
            &mut s,
            &[
                (
                    r#"{"type":"response.function_call_arguments.delta","delta":"{\"q\":"}"#,
                    5.0,
                ),
                (
                    r#"{"type":"response.function_call_arguments.delta","delta":"1}"}"#,
                    7.0,
                ),
            ],
        );
        assert_eq!((s.tool_call_chunks, s.first_tool_call_ms), (2, Some(5.0)));
        assert_eq!((s.first_output_ms, s.first_content_ms), (Some(5.0), None));
    }

    #[test]
    fn failures_and_malformed_events_are_clear_errors() {
        let mut s = state();
        let failed = br#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"engine died"}}}"#;
        assert_eq!(
            on_event(&mut s, failed, 1.0),
            EventOutcome::Failed(StreamFailure {
                kind: ErrorKind::ErrorObject,
                message: "engine died".into(),
                body: Some(failed.to_vec()),
            })
        );
        let error = br#"{"type":"error","code":"rate_limit","message":"slow down","param":null}"#;
        assert!(matches!(
            on_event(&mut s, error, 1.0),
            EventOutcome::Failed(StreamFailure { kind: ErrorKind::ErrorObject, message, .. })
                if message == "slow down"
        ));
        for bad in [
            &br#"{"delta":"no type"}"#[..],
            br#"{"type":"response.output_text.delta","delta":"#,
            br#"{"type":7}"#,
            b"not json",
        ] {
            match on_event(&mut s, bad, 1.0) {
                EventOutcome::Failed(StreamFailure {
                    kind: ErrorKind::MalformedEvent,
                    message,
                    ..
                }) => assert!(
                    message.starts_with("event is not a Responses API event"),
                    "{message}"
                ),
                other => panic!("{other:?} for {:?}", String::from_utf8_lossy(bad)),
            }
        }
        // Events this reader does not measure may carry any `delta`.
        assert_eq!(
            on_event(
                &mut s,
                br#"{"type":"response.audio.delta","delta":{"x":[1]}}"#,
                1.0
            ),
            EventOutcome::Continue
        );
        assert_eq!(s.content_chunks, 0);
    }

    #[test]
    fn escaped_text_is_unescaped_and_other_delta_shapes_count_as_empty() {
        let mut s = state();
        s.reply = Some(String::new());
        for (at, data) in [
            r#"{"type":"response.output_text.delta","delta":"a\"b\n"}"#,
            r#"{"type":"response.output_text.delta","delta":[1,2]}"#,
            r#"{"type":"response.output_text.delta","delta":null}"#,
            r#"{"type":"response.output_text.delta","delta":{"text":"x"}}"#,
        ]
        .into_iter()
        .enumerate()
        {
            assert_eq!(
                on_event(&mut s, data.as_bytes(), at as f64),
                EventOutcome::Continue
            );
        }
        assert_eq!(s.reply.as_deref(), Some("a\"b\n"));
        assert_eq!((s.content_chunks, s.first_content_ms), (1, Some(0.0)));
    }
}
