//! Closed loop: N workers, each sending its next request when its last one ends.

use std::sync::Arc;

use tokio::sync::Mutex;
use tokio::time::Instant;

use tokio_util::sync::CancellationToken;

use super::{Executor, InFlight, PromptFeed, WindowContext};

pub(super) fn start<E: Executor, F: PromptFeed>(
    ctx: &WindowContext<E, F>,
    concurrency: u32,
    deadline: Option<Instant>,
    max_requests: Option<u64>,
    stop: &CancellationToken,
) -> InFlight {
    // The next request index, taken together with the next prompt so that request `i` gets
    // the window's `i`-th prompt. Held only while taking a ready prompt, never while sending.
    let next_index = Arc::new(Mutex::new(0u64));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let ctx = ctx.clone_for_task();
        let next_index = next_index.clone();
        let stop = stop.clone();
        tasks.spawn(async move {
            loop {
                let (index, prompt) = {
                    let mut next = next_index.lock().await;
                    if stop.is_cancelled()
                        || ctx.abort.is_cancelled()
                        || deadline.is_some_and(|d| Instant::now() >= d)
                        || max_requests.is_some_and(|max| *next >= max)
                    {
                        break;
                    }
                    let index = *next;
                    *next += 1;
                    (index, ctx.next_prompt().await)
                };
                let record = ctx.send(index, prompt).await;
                ctx.deliver(record);
            }
            ctx.bound_reached.cancel();
        });
    }
    InFlight { tasks }
}
