//! Sessions: a session's turns sent one after another, each carrying the history so far with
//! the server's own replies. Both load models run them: a closed-loop worker one session at a
//! time, an open loop one session per arrival.

use tokio_util::sync::CancellationToken;

use super::arrivals::Scheduled;
use super::{Executor, PromptFeed, WindowContext};
use crate::workload::{ChatMessage, Prompt, PromptInput};

/// A session's turns one after another, each after its think time and with the history so
/// far: the user messages and the server's own replies. A failed turn ends the session, as
/// its history would no longer be what a user saw; so does the window's bound.
///
/// `arrival`: an open loop's arrival of the session, which its first turn's send lag is
/// measured against. True when the session ended on a turn that reached no server.
pub(super) async fn run_session<E: Executor, F: PromptFeed>(
    ctx: &WindowContext<E, F>,
    turns: Vec<(u64, Prompt)>,
    arrival: Option<Scheduled>,
    stopped: &impl Fn() -> bool,
    stop: &CancellationToken,
) -> bool {
    let mut history: Vec<ChatMessage> = Vec::new();
    for (k, (index, mut prompt)) in turns.into_iter().enumerate() {
        let think = prompt.session.map(|s| s.think).unwrap_or_default();
        if k > 0 && !think.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(think) => {}
                () = stop.cancelled() => return false,
                () = ctx.abort.cancelled() => return false,
            }
        }
        if k > 0 && stopped() {
            return false;
        }
        let PromptInput::Messages(planned) = &prompt.input else {
            // Sessions need chat messages; `validate` refuses other targets.
            return false;
        };
        let new = turn_messages(planned, history.last());
        let mut messages = history.clone();
        messages.extend(new.iter().cloned());
        prompt.input = PromptInput::Messages(messages);
        let (mut record, reply) = ctx.send_turn(index, prompt).await;
        if let (0, Some(arrival)) = (k, arrival) {
            arrival.stamp(&mut record);
        }
        let failed = !record.is_ok();
        let unreached = record.unreached().is_some();
        ctx.deliver(record);
        if failed {
            return unreached;
        }
        history.extend(new);
        history.push(reply);
    }
    false
}

/// The messages a turn adds to the history. A turn plans a user message and, with tools, a
/// tool result (`role: tool`, no call id yet): when the last reply called tools, the turn
/// answers each call with that result; otherwise the user speaks.
fn turn_messages(planned: &[ChatMessage], last_reply: Option<&ChatMessage>) -> Vec<ChatMessage> {
    let result = planned.iter().find(|m| m.role == "tool");
    let calls = last_reply.map_or(&[][..], |m| m.tool_calls.as_slice());
    match result {
        Some(result) if !calls.is_empty() => calls
            .iter()
            .map(|call| ChatMessage {
                tool_call_id: Some(call.id.clone()),
                ..result.clone()
            })
            .collect(),
        _ => planned
            .iter()
            .filter(|m| m.role != "tool")
            .cloned()
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::ToolCall;

    #[test]
    fn a_turn_answers_the_last_replys_tool_calls_or_speaks() {
        let planned = [
            ChatMessage::new("user", "next question"),
            ChatMessage::new("tool", "result words"),
        ];
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "search".into(),
            arguments: "{}".into(),
        };
        let calling = ChatMessage {
            tool_calls: vec![call("a"), call("b")],
            ..ChatMessage::new("assistant", "")
        };
        let sent = turn_messages(&planned, Some(&calling));
        let sent: Vec<(&str, &str, Option<&str>)> = sent
            .iter()
            .map(|m| {
                (
                    m.role.as_str(),
                    m.content.as_str(),
                    m.tool_call_id.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            sent,
            [
                ("tool", "result words", Some("a")),
                ("tool", "result words", Some("b"))
            ]
        );
        let answered = ChatMessage::new("assistant", "done");
        for last in [Some(&answered), None] {
            let sent = turn_messages(&planned, last);
            assert_eq!(sent, [ChatMessage::new("user", "next question")]);
        }
        // Without a planned result (no tools), a stray call is not answered.
        let sent = turn_messages(&planned[..1], Some(&calling));
        assert_eq!(sent, [ChatMessage::new("user", "next question")]);
    }
}
