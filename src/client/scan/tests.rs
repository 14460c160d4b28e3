//! The fast scan against the serde reference, by example and by property.

use super::*;
use crate::client::stream::{StreamState, parse_chunk};
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
    "completion_tokens_details",
    "reasoning_tokens",
    "id",
    "index",
    "finish_reason",
    "tool_calls",
    "function",
    "name",
    "arguments",
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
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
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

/// Tool-call-shaped text: the streamed `tool_calls` layout with random field values.
fn tool_call_text() -> impl Strategy<Value = String> {
    (json_text(), json_text(), json_text(), json_text()).prop_map(
        |(content, name, arguments, extra)| {
            format!(
                r#"{{"choices":[{{"index":0,"delta":{{"content":{content},"tool_calls":[{{"index":0,"id":"call_1","type":"function","function":{{"name":{name},"arguments":{arguments}}}}},{extra}]}},"finish_reason":null}}]}}"#
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

/// Where the scan answers, the full parser reads the same summary, and the two leave the same
/// whole stream state (every field, the server's timing and the tool calls included).
fn agree(data: &[u8]) -> Result<(), TestCaseError> {
    if let Some(summary) = fast(data) {
        same_as_the_full_parser(data, summary)?;
    }
    Ok(())
}

fn same_as_the_full_parser(data: &[u8], answer: ChunkSummary) -> Result<(), TestCaseError> {
    let reference = parse_chunk(data).map(|chunk| chunk.summary);
    prop_assert!(
        reference.as_ref().ok() == Some(&answer),
        "scan {:?} but serde {:?} on {:?}",
        answer,
        reference,
        String::from_utf8_lossy(data)
    );
    prop_assert_eq!(
        StreamState::after_chunk(data, Some(answer)),
        StreamState::after_chunk(data, None),
        "on {:?}",
        String::from_utf8_lossy(data)
    );
    Ok(())
}

/// Chunks of one stream: shared leading members (sometimes a different `model`, sometimes
/// a key repeated or reordered), then random choices, usage and error.
fn stream_chunks() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let head = prop_oneof![
        Just(r#"{"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","#),
        Just(r#"{"id":"c1","object":"chat.completion.chunk","created":7,"model":"n","#),
        Just(r#"{"id":"c1","object":"error","created":7,"#),
        Just(r#"{"id":"c1","object":"x","object":"y","#),
        Just(r#"{ "id" : "c1" , "#),
        Just("{"),
    ];
    let chunk = (head, json_text(), json_text(), json_text()).prop_map(|(head, content, usage, error)| {
        let body = format!(
            r#""choices":[{{"index":0,"delta":{{"content":{content}}}}}],"usage":{usage},"error":{error}}}"#
        );
        format!("{head}{body}")
    });
    let edited = (
        chunk,
        (any::<u8>(), any::<usize>(), any::<u8>()),
        any::<bool>(),
    )
        .prop_map(|(text, edit, keep)| {
            if keep {
                text.into_bytes()
            } else {
                mutate(text, edit)
            }
        });
    prop::collection::vec(edited, 1..8)
}

/// A text value: plain, empty, with an escape, a `\u` escape, a raw control character,
/// non-ASCII, or a bare quote (which breaks the JSON).
fn text_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,6}",
        Just(String::new()),
        Just(r#"a\"b"#.to_string()),
        Just(r#"\u00e9"#.to_string()),
        Just("x\ty".to_string()),
        Just("é".to_string()),
        Just("\"".to_string()),
    ]
}

/// An `id` value: plain, empty, escaped, or not a string.
fn id_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "\"chatcmpl-[a-f0-9]{0,12}\"",
        Just(r#""""#.to_string()),
        Just(r#""a\"b""#.to_string()),
        Just("7".to_string()),
    ]
}

/// A `created` value: an integer, or something close to one.
fn created_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[1-9][0-9]{0,10}",
        Just("0".to_string()),
        Just("01".to_string()),
        Just("-3".to_string()),
        Just("1.5".to_string()),
        Just("1e3".to_string()),
        Just(r#""7""#.to_string()),
    ]
}

/// Streams' chunks: mostly a few layouts around a changing text, id and `created`
/// (the role chunk, content and reasoning deltas, the finish chunk), sometimes a byte edit.
fn templated_stream() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let chunk = (
        0..6u8,
        text_value(),
        (id_value(), created_value()),
        (any::<u8>(), any::<usize>(), any::<u8>()),
        any::<bool>(),
    )
        .prop_map(|(layout, text, (id, created), edit, keep)| {
            let head = format!(
                r#"{{"id":{id},"object":"chat.completion.chunk","created":{created},"model":"m","choices":[{{"index":0,"delta":{{"#
            );
            let body = match layout {
                0 | 1 => format!(r#""content":"{text}"}},"finish_reason":null}}]}}"#),
                2 => format!(r#""role":"assistant","content":"{text}"}},"finish_reason":null}}]}}"#),
                3 => format!(r#""reasoning_content":"{text}"}},"finish_reason":null}}]}}"#),
                4 => r#"},"finish_reason":"stop"}]}"#.to_string(),
                _ => r#"},"finish_reason":"stop"}],"timings":{"prompt_ms":1.5}}"#.to_string(),
            };
            let text = format!("{head}{body}");
            if keep { text.into_bytes() } else { mutate(text, edit) }
        });
    prop::collection::vec(chunk, 1..12)
}

/// A scan from scratch's answer.
fn scanned(data: &[u8]) -> Option<ChunkSummary> {
    fast(data)
}

/// Each chunk of a stream scanned with the stream's memo gets a scan from scratch's answer,
/// and where it answers, the full parser's.
fn same_as_full_scans(chunks: &[Vec<u8>]) -> Result<(), TestCaseError> {
    let mut memo = StreamMemo::default();
    for chunk in chunks {
        let answer = fast_with_memo(chunk, &mut memo);
        prop_assert_eq!(
            answer,
            scanned(chunk),
            "on {:?} after {:?}",
            String::from_utf8_lossy(chunk),
            memo
        );
        if let Some(answer) = answer {
            same_as_the_full_parser(chunk, answer)?;
        }
    }
    Ok(())
}

proptest! {
    // No regression files: the top level of the repository is fixed.
    #![proptest_config(ProptestConfig {
        cases: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]
    #[test]
    fn a_templated_chunk_gets_a_full_scans_answer(chunks in templated_stream()) {
        same_as_full_scans(&chunks)?;
    }

    #[test]
    fn resumed_scan_equals_a_scan_from_the_start(chunks in stream_chunks()) {
        same_as_full_scans(&chunks)?;
    }

    #[test]
    fn scan_agrees_with_serde_on_random_json(text in json_text(), edit in (any::<u8>(), any::<usize>(), any::<u8>())) {
        agree(text.as_bytes())?;
        agree(&mutate(text, edit))?;
    }

    #[test]
    fn scan_agrees_with_serde_on_random_tool_call_chunks(text in tool_call_text(), edit in (any::<u8>(), any::<usize>(), any::<u8>())) {
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
                    tool_call: false,
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
                    tool_call: false,
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
                    reasoning_tokens: None,
                }),
                is_error: false,
            },
        ),
        (
            r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":2}}}"#,
            ChunkSummary {
                choice: None,
                usage: Some(UsageCounts {
                    prompt_tokens: Some(7),
                    completion_tokens: Some(4),
                    cached_tokens: None,
                    reasoning_tokens: Some(2),
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
        assert_eq!(
            parse_chunk(text.as_bytes()).ok().map(|c| c.summary),
            Some(*expected)
        );
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

#[test]
fn tool_calls_go_to_serde_which_reads_the_fragments() {
    let cases = [
        // vLLM's first tool-call delta: id, type and name, no arguments yet.
        (
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_1","type":"function","index":0,"function":{"name":"get_weather"}}]}}]}"#,
            true,
        ),
        (
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]}}]}"#,
            true,
        ),
        (
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]}}]}"#,
            false,
        ),
        (r#"{"choices":[{"delta":{"tool_calls":[]}}]}"#, false),
        (
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":null}]}}]}"#,
            false,
        ),
    ];
    for (text, tool_call) in cases {
        assert_eq!(fast(text.as_bytes()), None, "{text}");
        let summary = parse_chunk(text.as_bytes()).expect("valid chunk").summary;
        assert_eq!(
            summary.choice.map(|c| c.tool_call),
            Some(tool_call),
            "{text}"
        );
    }
    // `null` is no call, on the fast path.
    let text = r#"{"choices":[{"delta":{"content":"a","tool_calls":null}}]}"#;
    assert_eq!(
        fast(text.as_bytes()),
        parse_chunk(text.as_bytes()).ok().map(|c| c.summary)
    );
    assert!(fast(text.as_bytes()).is_some());
    // A malformed `tool_calls` is the serde error the stream reports.
    for text in [
        r#"{"choices":[{"delta":{"tool_calls":{"index":0}}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":7}}]}}]}"#,
    ] {
        assert_eq!(fast(text.as_bytes()), None);
        assert!(parse_chunk(text.as_bytes()).is_err(), "{text}");
    }
}

fn shapes_known() -> usize {
    SHAPES.with(|shapes| shapes.borrow().list.len())
}

/// The shape `data` would be answered from, and its answer.
fn shape_answer(data: &str) -> Option<ChunkSummary> {
    SHAPES.with(|shapes| {
        let shapes = shapes.borrow();
        let (index, text) = shapes.answer(data.as_bytes(), 0)?;
        let empty = text.is_some_and(|(start, end)| start == end);
        shapes.list[index].answers.pick(empty)
    })
}

#[test]
fn a_stream_of_known_shapes_is_answered_without_a_scan() {
    let chunk = |id: &str, created: u64, text: &str| {
        format!(
            r#"{{"id":"{id}","object":"chat.completion.chunk","created":{created},"model":"m","choices":[{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":null}}]}}"#
        )
    };
    let role = |id: &str| {
        format!(
            r#"{{"id":"{id}","object":"chat.completion.chunk","created":7,"model":"m","choices":[{{"index":0,"delta":{{"role":"assistant","content":""}},"finish_reason":null}}]}}"#
        )
    };
    let mut memo = StreamMemo::default();
    assert_eq!(shape_answer(&role("c1")), None, "nothing known yet");
    fast_with_memo(role("c1").as_bytes(), &mut memo);
    fast_with_memo(chunk("c1", 7, " hello").as_bytes(), &mut memo);
    assert_eq!(
        shapes_known(),
        2,
        "the role chunk's shape and the content chunk's"
    );
    // Another stream, another id and second: the same shapes answer, as a scan would.
    for text in [" world", "", "é", "x"] {
        let c = chunk("chatcmpl-9f8e7d", 1_796_413_261, text);
        let answer = shape_answer(&c);
        assert!(answer.is_some(), "{text:?}");
        assert_eq!(answer, fast(c.as_bytes()), "{text:?}");
    }
    let next_role = role("chatcmpl-9f8e7d");
    assert_eq!(shape_answer(&next_role), fast(next_role.as_bytes()));
    assert!(shape_answer(&next_role).is_some());
    // Escapes, raw control characters, and a `created` that is no plain integer go to the
    // scan.
    for text in [r#"a\"b"#, "x\ty"] {
        assert_eq!(shape_answer(&chunk("c1", 7, text)), None, "{text:?}");
    }
    assert_eq!(shape_answer(&chunk(r#"c\"1"#, 7, "x")), None);
    let leading_zero = chunk("c1", 7, "x").replace(":7,", ":07,");
    assert_eq!(shape_answer(&leading_zero), None);
    assert_eq!(shapes_known(), 2, "answering learns nothing");
}

#[test]
fn shapes_are_kept_up_to_their_limit_and_then_replaced() {
    let chunk = |model: usize| {
        format!(r#"{{"id":"c","model":"m{model}","choices":[{{"delta":{{"content":"x"}}}}]}}"#)
    };
    let mut memo = StreamMemo::default();
    for model in 0..MAX_SHAPES + 3 {
        fast_with_memo(chunk(model).as_bytes(), &mut memo);
    }
    assert_eq!(shapes_known(), MAX_SHAPES);
    assert!(
        shape_answer(&chunk(MAX_SHAPES + 2)).is_some(),
        "the newest is kept"
    );
    assert_eq!(shape_answer(&chunk(0)), None, "the oldest made room");
}

#[test]
fn a_memo_given_back_is_taken_without_its_template_but_with_its_buffers() {
    let chunk = |id: &str, text: &str| {
        format!(
            r#"{{"id":"{id}","object":"chat.completion.chunk","created":7,"model":"m","choices":[{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":null}}]}}"#
        )
    };
    let mut memo = StreamMemo::take();
    for text in ["a", "b"] {
        fast_with_memo(chunk("first", text).as_bytes(), &mut memo);
    }
    assert!(memo.templated);
    assert!(
        memo.template
            .answer(chunk("first", "c").as_bytes())
            .is_some()
    );
    assert_eq!(
        memo.template.answer(chunk("second", "c").as_bytes()),
        None,
        "its own id"
    );
    let capacity = memo.template.bytes.capacity();
    memo.give_back();
    let mut reused = StreamMemo::take();
    assert!(!reused.templated);
    assert_eq!(reused.template.bytes.capacity(), capacity);
    for text in ["x", "", "z"] {
        let c = chunk("second", text);
        assert_eq!(
            fast_with_memo(c.as_bytes(), &mut reused),
            scanned(c.as_bytes())
        );
    }
}

#[test]
fn a_chunk_without_text_naming_the_servers_timing_goes_to_the_full_parser() {
    let mut memo = StreamMemo::default();
    let plain = br#"{"id":"a","choices":[{"delta":{},"finish_reason":"stop"}]}"#;
    let timed =
        br#"{"id":"a","choices":[{"delta":{},"finish_reason":"stop"}],"timings":{"prompt_ms":2}}"#;
    let metrics =
        br#"{"id":"a","choices":[],"usage":{"prompt_tokens":3},"metrics":{"queue_time_ms":1.5}}"#;
    let nested = br#"{"id":"a","choices":[{"delta":{},"timings":1}]}"#;
    let with_text =
        br#"{"id":"a","choices":[{"delta":{"content":"x"}}],"timings":{"prompt_ms":2}}"#;
    let twice = br#"{"id":"a","choices":[{"delta":{"content":"x"}}],"timings":1,"timings":2}"#;
    assert!(fast_with_memo(plain, &mut memo).is_some());
    assert_eq!(fast_with_memo(timed, &mut memo), None);
    assert_eq!(fast_with_memo(metrics, &mut memo), None);
    assert!(
        fast_with_memo(nested, &mut memo).is_some(),
        "not the top level's"
    );
    // A text chunk's timing is not kept, so the scan answers it.
    assert!(fast_with_memo(with_text, &mut memo).is_some());
    assert_eq!(fast(twice), None, "serde rejects a repeated member");
    assert!(parse_chunk(twice).is_err());
    // The shape learnt from the text chunk declines its chunks without text.
    let without_text =
        br#"{"id":"b","choices":[{"delta":{"content":""}}],"timings":{"prompt_ms":2}}"#;
    assert_eq!(
        fast_with_memo(without_text, &mut StreamMemo::default()),
        None
    );
    let timings = parse_chunk(timed).expect("valid").timings.expect("read");
    assert_eq!((timings.prompt_ms, timings.queue_ms), (Some(2.0), None));
    let timings = parse_chunk(metrics).expect("valid").timings.expect("read");
    assert_eq!(timings.queue_ms, Some(1.5));
}
