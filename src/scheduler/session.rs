//! Sessions: a session's turns sent one after another, each carrying the history so far with
//! the server's own replies. Both load models run them: a closed-loop worker one session at a
//! time, an open loop one session per arrival.

use tokio_util::sync::CancellationToken;

use super::{Executor, PromptFeed, WindowContext};
use crate::workload::{ChatMessage, Prompt, PromptInput};

/// A session's turns one after another, each after its think time and with the history so
/// far: the user messages and the server's own replies. A failed turn ends the session, as
/// its history would no longer be what a user saw; so does the window's bound.
///
/// `scheduled_ms`: an open loop's arrival time of the session, which its first turn's send
/// lag is measured against.
pub(super) async fn run_session<E: Executor, F: PromptFeed>(
    ctx: &WindowContext<E, F>,
    turns: Vec<(u64, Prompt)>,
    scheduled_ms: Option<f64>,
    stopped: &impl Fn() -> bool,
    stop: &CancellationToken,
) {
    let mut history: Vec<ChatMessage> = Vec::new();
    for (k, (index, mut prompt)) in turns.into_iter().enumerate() {
        let think = prompt.session.map(|s| s.think).unwrap_or_default();
        if k > 0 && !think.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(think) => {}
                () = stop.cancelled() => return,
                () = ctx.abort.cancelled() => return,
            }
        }
        if k > 0 && stopped() {
            return;
        }
        let PromptInput::Messages(new) = &prompt.input else {
            // Sessions need chat messages; `validate` refuses other targets.
            return;
        };
        let new = new.clone();
        let mut messages = history.clone();
        messages.extend(new.iter().cloned());
        prompt.input = PromptInput::Messages(messages);
        let (mut record, reply) = ctx.send_turn(index, prompt).await;
        if let (0, Some(scheduled_ms)) = (k, scheduled_ms) {
            record.scheduled_offset_ms = Some(scheduled_ms);
            record.send_lag_ms = Some(record.start_offset_ms - scheduled_ms);
        }
        let failed = !record.is_ok();
        ctx.deliver(record);
        if failed {
            return;
        }
        history.extend(new);
        history.push(ChatMessage {
            role: "assistant".into(),
            content: reply,
        });
    }
}
