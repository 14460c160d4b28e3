//! The fast scan against the serde reference, by example and by property.

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

/// One stream's chunks: mostly one layout around a changing text, sometimes another (the
/// role chunk, a reasoning delta, the finish chunk), sometimes a byte edit.
fn templated_stream() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let chunk = (
        0..5u8,
        text_value(),
        (any::<u8>(), any::<usize>(), any::<u8>()),
        any::<bool>(),
    )
        .prop_map(|(layout, text, edit, keep)| {
            let head = r#"{"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"#;
            let body = match layout {
                0 | 1 => format!(r#""content":"{text}"}},"finish_reason":null}}]}}"#),
                2 => format!(r#""role":"assistant","content":"{text}"}},"finish_reason":null}}]}}"#),
                3 => format!(r#""reasoning_content":"{text}"}},"finish_reason":null}}]}}"#),
                _ => r#"},"finish_reason":"stop"}]}"#.to_string(),
            };
            let text = format!("{head}{body}");
            if keep { text.into_bytes() } else { mutate(text, edit) }
        });
    prop::collection::vec(chunk, 1..12)
}

/// Each chunk of a stream scanned with the stream's memo gets a scan from scratch's answer.
fn same_as_full_scans(chunks: &[Vec<u8>]) -> Result<(), TestCaseError> {
    let mut memo = StreamMemo::default();
    for chunk in chunks {
        prop_assert_eq!(
            fast_resuming(chunk, &mut memo),
            fast(chunk),
            "on {:?} after {:?}",
            String::from_utf8_lossy(chunk),
            memo
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
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
        let summary = parse_chunk_serde(text.as_bytes()).expect("valid chunk");
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
        parse_chunk_serde(text.as_bytes()).ok()
    );
    assert!(fast(text.as_bytes()).is_some());
    // A malformed `tool_calls` is the serde error the stream reports.
    for text in [
        r#"{"choices":[{"delta":{"tool_calls":{"index":0}}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":7}}]}}]}"#,
    ] {
        assert_eq!(fast(text.as_bytes()), None);
        assert!(parse_chunk_serde(text.as_bytes()).is_err(), "{text}");
    }
}

#[test]
fn a_run_of_content_chunks_is_answered_from_the_template() {
    let chunk = |text: &str| {
        format!(
            r#"{{"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":null}}]}}"#
        )
    };
    let role = r#"{"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#;
    let mut memo = StreamMemo::default();
    fast_resuming(role.as_bytes(), &mut memo);
    fast_resuming(chunk(" hello").as_bytes(), &mut memo);
    assert!(!memo.templated, "one chunk of a layout makes no template");
    fast_resuming(chunk(" there").as_bytes(), &mut memo);
    assert!(memo.templated, "a repeated layout makes a template");
    let template = memo.template.clone();
    for text in [" world", "", "é", "x"] {
        let c = chunk(text);
        let answer = template.answer(c.as_bytes());
        assert!(answer.is_some(), "{text:?}");
        assert_eq!(answer, fast(c.as_bytes()), "{text:?}");
    }
    // Escapes and raw control characters go to the full scan.
    for text in [r#"a\"b"#, "x\ty"] {
        assert_eq!(template.answer(chunk(text).as_bytes()), None, "{text:?}");
    }
}

#[test]
fn a_memo_given_back_is_taken_empty_with_its_buffers() {
    let chunk = |id: &str, text: &str| {
        format!(
            r#"{{"id":"{id}","object":"chat.completion.chunk","created":7,"model":"m","choices":[{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":null}}]}}"#
        )
    };
    let mut memo = StreamMemo::take();
    for text in ["a", "b", "c"] {
        fast_resuming(chunk("first", text).as_bytes(), &mut memo);
    }
    assert!(memo.templated && !memo.prefix.is_empty());
    let capacity = memo.template.around.bytes.capacity();
    memo.give_back();
    // The next stream on this thread starts from nothing it could mistake for its own, and
    // its answers are a full scan's.
    let mut reused = StreamMemo::take();
    assert!(!reused.templated && !reused.has_candidate && reused.prefix.is_empty());
    assert_eq!(reused.template.around.bytes.capacity(), capacity);
    for text in ["x", "y", "", "z"] {
        let c = chunk("second", text);
        assert_eq!(fast_resuming(c.as_bytes(), &mut reused), fast(c.as_bytes()));
    }
}
