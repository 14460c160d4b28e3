//! Closed loop: N workers, each sending its next request when its last one ends. With a
//! session workload each worker runs one session at a time, turn after turn.

use std::sync::Arc;

use tokio::sync::Mutex;
use tokio::time::Instant;

use tokio_util::sync::CancellationToken;

use super::session::run_session;
use super::{Executor, InFlight, PromptFeed, WindowContext};

pub(super) fn start<E: Executor, F: PromptFeed>(
    ctx: &WindowContext<E, F>,
    concurrency: u32,
    deadline: Option<Instant>,
    max_requests: Option<u64>,
    stop: &CancellationToken,
) -> InFlight {
    // The next request index, taken together with the next prompt so that request `i` gets
    // the window's `i`-th prompt. Held only while taking ready prompts, never while sending.
    let next_index = Arc::new(Mutex::new(0u64));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let ctx = ctx.clone_for_task();
        let next_index = next_index.clone();
        let stop = stop.clone();
        tasks.spawn(async move {
            let stopped = || {
                stop.is_cancelled()
                    || ctx.abort.is_cancelled()
                    || deadline.is_some_and(|d| Instant::now() >= d)
            };
            let mut backoff = super::outage::Backoff::default();
            loop {
                if !ctx.admitted(&stop, deadline).await {
                    break;
                }
                // A session's turns are taken together, so its requests have consecutive
                // indices whatever the other workers do.
                let turns = {
                    let mut next = next_index.lock().await;
                    if stopped() || max_requests.is_some_and(|max| *next >= max) {
                        break;
                    }
                    let index = *next;
                    *next += 1;
                    let first = ctx.next_prompt().await;
                    // The rest of the session the feed is in (a bounded warmup may have ended
                    // inside one), so later sessions start at their first turn.
                    let count = first
                        .session
                        .map_or(1, |s| s.turns.saturating_sub(s.turn).max(1));
                    let mut turns = vec![(index, first)];
                    while turns.len() < count as usize && max_requests.is_none_or(|max| *next < max)
                    {
                        turns.push((*next, ctx.next_prompt().await));
                        *next += 1;
                    }
                    turns
                };
                let unreached = if turns[0].1.session.is_none() {
                    let (index, prompt) = turns.into_iter().next().expect("one prompt");
                    let record = ctx.send(index, prompt).await;
                    let unreached = record.unreached().is_some();
                    ctx.deliver(record);
                    unreached
                } else {
                    run_session(&ctx, turns, None, &stopped, &stop).await
                };
                // A request that reached no server is not answered by sending the next at once.
                if !ctx
                    .back_off(unreached, &mut backoff, (&stop, deadline))
                    .await
                {
                    break;
                }
            }
            ctx.bound_reached.cancel();
        });
    }
    InFlight { tasks }
}
