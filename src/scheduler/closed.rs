//! Closed loop: N workers, each sending its next request when its last one ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
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
    let next_index = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let ctx = ctx.clone_for_task();
        let next_index = next_index.clone();
        let stop = stop.clone();
        tasks.spawn(async move {
            loop {
                if stop.is_cancelled()
                    || ctx.abort.is_cancelled()
                    || deadline.is_some_and(|d| Instant::now() >= d)
                {
                    break;
                }
                let index = next_index.fetch_add(1, Ordering::Relaxed);
                if max_requests.is_some_and(|max| index >= max) {
                    break;
                }
                let prompt = ctx.next_prompt();
                let record = ctx.send(index, prompt).await;
                ctx.deliver(record);
            }
            ctx.bound_reached.cancel();
        });
    }
    InFlight { tasks }
}
