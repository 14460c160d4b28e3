//! A kept reply's text and tool calls, assembled from a stream's chunks.

use serde::Deserialize;

use crate::workload::ToolCall;

/// A chunk's reply pieces added to the reply so far: its content text (`delta.content`, or a
/// completion's `text`) to `reply`, and its tool-call pieces (id, name, argument fragments) to
/// `calls` by the calls' `index`. Only sessions pay this second, decoding parse.
pub(super) fn append_reply(reply: &mut String, calls: &mut Vec<ToolCall>, data: &[u8]) {
    #[derive(Deserialize)]
    struct Chunk {
        #[serde(default)]
        choices: Vec<Choice>,
    }
    #[derive(Deserialize)]
    struct Choice {
        #[serde(default)]
        delta: Option<Delta>,
        #[serde(default)]
        text: Option<String>,
    }
    #[derive(Deserialize)]
    struct Delta {
        #[serde(default)]
        content: Option<String>,
        #[serde(default)]
        tool_calls: Option<Vec<Piece>>,
    }
    #[derive(Deserialize)]
    struct Piece {
        #[serde(default)]
        index: Option<usize>,
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        function: Option<Function>,
    }
    #[derive(Deserialize)]
    struct Function {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        arguments: Option<String>,
    }
    let Ok(chunk) = serde_json::from_slice::<Chunk>(data) else {
        return;
    };
    let mut pieces = None;
    for (i, choice) in chunk.choices.into_iter().enumerate() {
        let (content, tool_calls) = match choice.delta {
            Some(delta) => (delta.content, delta.tool_calls),
            None => (None, None),
        };
        if let Some(text) = content.or(choice.text) {
            reply.push_str(&text);
        }
        if i == 0 {
            pieces = tool_calls;
        }
    }
    for (k, piece) in pieces.into_iter().flatten().enumerate() {
        // Indices come in order from 0; one past the end (or a gap, a server's slip) opens
        // the next call.
        let at = piece.index.unwrap_or(k).min(calls.len());
        if at == calls.len() {
            calls.push(ToolCall::default());
        }
        let call = &mut calls[at];
        if let Some(id) = piece.id.filter(|id| !id.is_empty()) {
            call.id = id;
        }
        if let Some(f) = piece.function {
            call.name.push_str(&f.name.unwrap_or_default());
            call.arguments.push_str(&f.arguments.unwrap_or_default());
        }
    }
}
