use super::*;
use crate::client::sse::{EventKind, Events, SseParser};
use proptest::prelude::{Just, Strategy, prop, prop_oneof};
use std::ops::ControlFlow;

/// A stream's events as the client takes them: whole templated events first, the rest
/// through the SSE parser and `on_event`.
struct Shortcut<'s>(&'s mut StreamState, f64);

impl Events for Shortcut<'_> {
    fn whole_events(&mut self, bytes: &[u8]) -> Option<usize> {
        self.0.whole_templated_events(bytes, self.1)
    }

    fn event(&mut self, _: EventKind, data: &[u8]) -> ControlFlow<()> {
        match self.0.on_event(data, self.1) {
            EventOutcome::Continue => ControlFlow::Continue(()),
            _ => ControlFlow::Break(()),
        }
    }
}

/// A stream's whole state but the scan's memo.
fn figures(s: &StreamState) -> StreamState {
    s.without_memo()
}

/// `bytes` read `read` bytes at a time, the n-th read at `n` ms, by the SSE parser and the
/// full parser alone (the reference) and by the client's way (whole templated events first,
/// then the SSE parser and `on_event`, each chunk by the scan's shortcut where it answers).
fn both_ways(bytes: &[u8], read: usize, reply: Option<String>) -> (StreamState, StreamState) {
    let mut reference = StreamState {
        reply: reply.clone(),
        ..StreamState::default()
    };
    let mut parser = SseParser::default();
    let mut shortcut = StreamState {
        reply,
        ..StreamState::default()
    };
    let mut taking = SseParser::default();
    for (n, piece) in bytes.chunks(read.max(1)).enumerate() {
        let now_ms = n as f64;
        parser
            .feed(piece, |_, data| {
                match reference.on_event_parsed(data, now_ms) {
                    EventOutcome::Continue => ControlFlow::Continue(()),
                    _ => ControlFlow::Break(()),
                }
            })
            .expect("within cap");
        taking
            .feed_to(piece, &mut Shortcut(&mut shortcut, now_ms))
            .expect("within cap");
    }
    (figures(&reference), figures(&shortcut))
}

#[test]
fn figures_compare_every_field_but_the_memo() {
    let base = StreamState::default();
    let mut queued = base.clone();
    queued.server.queue_ms = Some(1.0);
    let mut tool_call = base.clone();
    tool_call.first_tool_call_ms = Some(2.0);
    let mut memo = base.clone();
    memo.chunk_memo.note_template_missed();
    assert_ne!(figures(&queued), figures(&base));
    assert_ne!(figures(&tool_call), figures(&base));
    assert_eq!(figures(&memo), figures(&base));
}

#[test]
fn whole_templated_events_make_the_same_figures_as_the_parser_and_scan() {
    let head = r#"{"id":"c","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"#;
    let mut bytes = format!("data: {head}\"role\":\"assistant\",\"content\":\"\"}}}}]}}\n\n");
    for (i, text) in [" a", " b", " b2", " b3", "", "c\\\"d", " é", " e", "\\n"]
        .iter()
        .enumerate()
    {
        let field = if i == 7 {
            "reasoning_content"
        } else {
            "content"
        };
        bytes.push_str(&format!("data: {head}\"{field}\":\"{text}\"}}}}]}}\n\n"));
    }
    bytes.push_str(&format!("data: {head}\"content\":\" f\"}}}}]}}\r\n\r\n"));
    // A chunk over two `data:` lines (a line break between its tokens), then one line again.
    bytes.push_str(&format!(
        "data: {head}\ndata: \"content\":\" g\"}}}}]}}\n\n"
    ));
    bytes.push_str(&format!(
        "data: {head}\ndata: \"content\":\" g2\"}}}}]}}\n\n"
    ));
    bytes.push_str(&format!("data: {head}\"content\":\" h\"}}}}]}}\n\n"));
    bytes.push_str(&format!(
        "data: {head}}},\"finish_reason\":\"stop\"}}],\"timings\":{{\"prompt_ms\":4.5}}}}\n\n"
    ));
    bytes.push_str("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":7}}\n\ndata: [DONE]\n\n");
    let bytes = bytes.into_bytes();
    // Kept, the reply needs each event's text; without it, a run of events is counted.
    let reads = [1, 7, 64, 300, bytes.len()];
    for (read, reply) in reads
        .into_iter()
        .flat_map(|r| [(r, Some(String::new())), (r, None)])
    {
        let (reference, shortcut) = both_ways(&bytes, read, reply);
        assert!(
            reference.done && reference.content_chunks == 11,
            "{reference:?}"
        );
        assert_eq!(
            shortcut,
            reference,
            "reads of {read}, reply kept: {}",
            reference.reply.is_some()
        );
    }
}

/// One event of a random chat stream: text or reasoning deltas of one layout (so the
/// template takes runs of them), tool-call fragments, vLLM's usage-and-metrics chunk,
/// llama.cpp's timings (on the last chunk, and on text chunks), completions text.
fn random_event() -> impl Strategy<Value = String> {
    let head = r#"{"id":"c","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"#;
    let text = prop::sample::select(vec!["", " a", " bb", "c\\\"d", " \\n", " é"]);
    prop_oneof![
        6 => text.clone().prop_map(move |t| format!("{head}\"content\":\"{t}\"}}}}]}}")),
        2 => text.clone().prop_map(move |t| format!("{head}\"reasoning_content\":\"{t}\"}}}}]}}")),
        2 => (0u8..3, prop::sample::select(vec!["", "get", "{\\\"x\\\": 1}"])).prop_map(move |(i, a)| format!(
            "{head}\"tool_calls\":[{{\"index\":{i},\"id\":\"call_{i}\",\"function\":{{\"name\":\"f{i}\",\"arguments\":\"{a}\"}}}}]}}}}]}}"
        )),
        1 => (0u64..50, 0u64..9).prop_map(|(p, q)| format!(
            r#"{{"choices":[],"usage":{{"prompt_tokens":{p},"completion_tokens":3,"prompt_tokens_details":{{"cached_tokens":{q}}}}},"metrics":{{"queue_time_ms":{q}.5,"time_to_first_token_ms":2.0,"generation_time_ms":3.0}}}}"#
        )),
        1 => Just(format!(r#"{head}}},"finish_reason":"stop"}}],"timings":{{"prompt_ms":4.5,"predicted_ms":6.0}}}}"#)),
        // llama.cpp's timings on every chunk (`timings_per_token`): kept only from one
        // without text.
        1 => text.clone().prop_map(move |t| format!(
            "{head}\"content\":\"{t}\"}}}}],\"timings\":{{\"prompt_ms\":1.5,\"predicted_ms\":0.5}}}}"
        )),
        // A completions stream's chunks.
        1 => text.prop_map(|t| format!(
            r#"{{"id":"c","object":"text_completion","created":7,"model":"m","choices":[{{"index":0,"text":"{t}","finish_reason":null}}]}}"#
        )),
    ]
}

proptest::proptest! {
    // No regression files: the top level of the repository is fixed.
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 2_000,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]
    #[test]
    fn the_clients_way_reads_any_stream_into_the_same_state(
        events in prop::collection::vec(random_event(), 1..24),
        read in 1usize..400,
        keep_reply in proptest::prelude::any::<bool>(),
        ends_in_error in proptest::prelude::any::<bool>(),
    ) {
        let mut bytes = String::new();
        for event in &events {
            bytes.push_str("data: ");
            bytes.push_str(event);
            bytes.push_str("\n\n");
        }
        // An error object ends the stream: nothing after it is read.
        let end = if ends_in_error { r#"{"error":{"message":"boom"}}"# } else { "[DONE]" };
        bytes.push_str(&format!("data: {end}\n\n"));
        let reply = keep_reply.then(String::new);
        let (reference, shortcut) = both_ways(bytes.as_bytes(), read, reply);
        proptest::prop_assert_eq!(shortcut, reference, "reads of {} over {}", read, bytes);
    }
}

fn feed(state: &mut StreamState, events: &[(&str, f64)]) -> EventOutcome {
    let mut last = EventOutcome::Continue;
    for (data, t) in events {
        last = state.on_event(data.as_bytes(), *t);
        if last != EventOutcome::Continue {
            break;
        }
    }
    last
}

#[test]
fn llama_cpp_timings_on_the_last_chunk_are_kept() {
    let mut s = StreamState::default();
    let out = feed(
        &mut s,
        &[
            (
                r#"{"choices":[{"delta":{"content":"hi"}}],"timings":{"prompt_ms":99.0}}"#,
                1.0,
            ),
            (
                r#"{"choices":[{"delta":{},"finish_reason":"length"}],"timings":{"prompt_n":5,"prompt_ms":12.5,"predicted_n":2,"predicted_ms":30.25}}"#,
                2.0,
            ),
            ("[DONE]", 3.0),
        ],
    );
    assert_eq!(out, EventOutcome::Done);
    // Text-carrying chunks are not searched for timings; the last chunk's win.
    assert_eq!(s.server.prompt_ms, Some(12.5));
    assert_eq!(s.server.total_ms(), Some(42.75));
    let mut none = StreamState::default();
    feed(
        &mut none,
        &[(r#"{"choices":[],"timings":{"prompt_ms":"x"}}"#, 1.0)],
    );
    assert_eq!(none.server, ServerTimings::default());
}

#[test]
fn vllm_per_request_metrics_on_the_usage_chunk_are_kept() {
    let mut s = StreamState::default();
    feed(
        &mut s,
        &[
            (r#"{"choices":[{"delta":{"content":"hi"}}]}"#, 1.0),
            (
                r#"{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2},"metrics":{"time_to_first_token_ms":85.5,"generation_time_ms":40.0,"queue_time_ms":12.25,"mean_itl_ms":40.0,"tokens_per_second":15.8}}"#,
                2.0,
            ),
            ("[DONE]", 3.0),
        ],
    );
    assert_eq!(s.server.queue_ms, Some(12.25));
    assert_eq!(s.server.prompt_ms, Some(85.5));
    assert_eq!(s.server.total_ms(), Some(137.75));
    // `null` fields (n > 1, or timing not available) leave nothing.
    let mut nulls = StreamState::default();
    feed(
        &mut nulls,
        &[(r#"{"choices":[],"metrics":null}"#, 1.0), ("[DONE]", 2.0)],
    );
    assert_eq!(nulls.server, ServerTimings::default());
    let mut partial = StreamState::default();
    feed(
        &mut partial,
        &[(
            r#"{"choices":[],"metrics":{"queue_time_ms":null,"time_to_first_token_ms":3.0,"generation_time_ms":null}}"#,
            1.0,
        )],
    );
    assert_eq!(partial.server.prompt_ms, Some(3.0));
    assert_eq!(partial.server.total_ms(), None);
}

#[test]
fn vllm_reasoning_then_content_with_usage_chunk() {
    let mut s = StreamState::default();
    let out = feed(
        &mut s,
        &[
            (
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
                1.0,
            ),
            (
                r#"{"choices":[{"delta":{"reasoning_content":"Let"}}]}"#,
                10.0,
            ),
            (
                r#"{"choices":[{"delta":{"reasoning_content":" me"}}]}"#,
                12.0,
            ),
            (r#"{"choices":[{"delta":{"content":"Hi \"x\""}}]}"#, 20.0),
            (
                r#"{"choices":[{"delta":{"content":"!"},"finish_reason":"stop"}]}"#,
                25.0,
            ),
            (
                r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":3}}}"#,
                26.0,
            ),
            ("[DONE]", 27.0),
        ],
    );
    assert_eq!(out, EventOutcome::Done);
    assert_eq!(s.first_output_ms, Some(10.0));
    assert_eq!(s.first_content_ms, Some(20.0));
    assert_eq!(s.max_inter_chunk_ms, Some(8.0));
    assert_eq!((s.reasoning_chunks, s.content_chunks), (2, 2));
    assert_eq!(
        (s.prompt_tokens, s.completion_tokens, s.cached_tokens),
        (Some(7), Some(4), Some(3))
    );
    assert_eq!(
        s.output_tokens(),
        (4, super::super::OutputTokenSource::Usage)
    );
}

#[test]
fn llama_cpp_null_content_and_usage_on_finish_chunk() {
    let mut s = StreamState::default();
    feed(
        &mut s,
        &[
            (
                r#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#,
                1.0,
            ),
            (r#"{"choices":[{"delta":{"reasoning":"hmm"}}]}"#, 5.0),
            (r#"{"choices":[{"delta":{"content":"ok"}}]}"#, 9.0),
            (
                r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
                9.5,
            ),
        ],
    );
    assert_eq!(
        (s.first_output_ms, s.first_content_ms),
        (Some(5.0), Some(9.0))
    );
    assert_eq!(s.completion_tokens, Some(2));
    assert_eq!(s.cached_tokens, None);
}

#[test]
fn completions_text_and_counted_tokens() {
    let mut s = StreamState::default();
    feed(
        &mut s,
        &[
            (r#"{"choices":[{"text":"","index":0}]}"#, 1.0),
            (r#"{"choices":[{"text":"a"}]}"#, 2.0),
            (r#"{"choices":[{"text":"b"}]}"#, 3.0),
        ],
    );
    assert_eq!(s.first_content_ms, Some(2.0));
    assert_eq!(
        s.output_tokens(),
        (2, super::super::OutputTokenSource::Counted)
    );
}

#[test]
fn malformed_and_error_events() {
    let mut s = StreamState::default();
    let out = s.on_event(b"{not json", 1.0);
    assert!(matches!(
        out,
        EventOutcome::Failed(StreamFailure {
            kind: ErrorKind::MalformedEvent,
            ..
        })
    ));
    let out = s.on_event(br#"{"choices":"nope"}"#, 1.0);
    assert!(matches!(
        out,
        EventOutcome::Failed(StreamFailure {
            kind: ErrorKind::MalformedEvent,
            ..
        })
    ));
    let out = s.on_event(br#"{"error":{"message":"overloaded","code":503}}"#, 1.0);
    assert_eq!(
        out,
        EventOutcome::Failed(StreamFailure {
            kind: ErrorKind::ErrorObject,
            message: "overloaded".into(),
            body: Some(br#"{"error":{"message":"overloaded","code":503}}"#.to_vec()),
        })
    );
    let out = s.on_event(
        br#"{"object":"error","message":"bad","type":"BadRequest"}"#,
        1.0,
    );
    assert!(matches!(
        out,
        EventOutcome::Failed(StreamFailure {
            kind: ErrorKind::ErrorObject,
            ..
        })
    ));
    // "error": null is not an error.
    assert_eq!(
        s.on_event(br#"{"choices":[],"error":null}"#, 1.0),
        EventOutcome::Continue
    );
}

#[test]
fn tool_call_fragments_are_output_and_the_calls_are_kept() {
    let mut s = StreamState {
        reply: Some(String::new()),
        ..StreamState::default()
    };
    let out = feed(
        &mut s,
        &[
            (
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#,
                1.0,
            ),
            (
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"search","arguments":""}}]}}]}"#,
                5.0,
            ),
            (
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\": \"x"}}]}}]}"#,
                7.0,
            ),
            (
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" y\"}"}}]}}]}"#,
                12.0,
            ),
            (
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"read","arguments":"{}"}}]}}]}"#,
                13.0,
            ),
            (
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
                14.0,
            ),
            ("[DONE]", 15.0),
        ],
    );
    assert_eq!(out, EventOutcome::Done);
    assert_eq!((s.first_tool_call_ms, s.tool_call_chunks), (Some(5.0), 4));
    assert_eq!((s.first_output_ms, s.first_content_ms), (Some(5.0), None));
    assert_eq!(s.max_inter_chunk_ms, Some(5.0));
    assert_eq!(
        s.output_tokens(),
        (4, super::super::OutputTokenSource::Counted)
    );
    let reply = s.take_reply().expect("kept");
    assert_eq!(reply.content, "");
    let calls: Vec<(&str, &str, &str)> = reply
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a", "search", r#"{"q": "x y"}"#),
            ("call_b", "read", "{}")
        ]
    );
    // Sent back as the API takes it.
    let sent = serde_json::to_value(&reply).expect("serializes");
    assert_eq!(sent["content"], serde_json::Value::Null);
    assert_eq!(sent["tool_calls"][0]["type"], "function");
    assert_eq!(
        sent["tool_calls"][0]["function"]["arguments"],
        r#"{"q": "x y"}"#
    );
}

#[test]
fn a_malformed_tool_call_delta_is_a_clear_error() {
    let mut s = StreamState::default();
    match s.on_event(br#"{"choices":[{"delta":{"tool_calls":"x"}}]}"#, 1.0) {
        EventOutcome::Failed(StreamFailure {
            kind: ErrorKind::MalformedEvent,
            message,
            ..
        }) => assert!(message.contains("tool_calls"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn excerpt_is_bounded_and_char_safe() {
    let long = "é".repeat(500);
    let e = excerpt(long.as_bytes());
    assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
}
