//! A kept reply's tool calls, assembled from the pieces a stream's chunks carry.

use super::chunk::ToolCallPiece;
use crate::workload::ToolCall;

/// A chunk's tool-call pieces (id, name, argument fragments) added to `calls` by the calls'
/// `index`.
pub(super) fn append_tool_calls(calls: &mut Vec<ToolCall>, pieces: Vec<ToolCallPiece<'_>>) {
    for (k, piece) in pieces.into_iter().enumerate() {
        // Indices come in order from 0; one past the end (or a gap, a server's slip) opens
        // the next call.
        let at = piece.index.unwrap_or(k).min(calls.len());
        if at == calls.len() {
            calls.push(ToolCall::default());
        }
        let call = &mut calls[at];
        if let Some(id) = piece.id.filter(|id| !id.is_empty()) {
            call.id = id.into_owned();
        }
        if let Some(f) = piece.function {
            call.name.push_str(f.name.as_deref().unwrap_or_default());
            call.arguments
                .push_str(f.arguments.as_deref().unwrap_or_default());
        }
    }
}
