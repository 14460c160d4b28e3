//! Busy polling: runtime workers that never park, so a response is read the moment it lands.
//!
//! A parked worker is woken by the kernel when bytes arrive; where wakeups are slow (a virtual
//! machine's halted vCPU) that delay lands in every timing. Spinning tasks keep each worker
//! polling its sockets instead, at the cost of a core per worker (`run --busy-poll`).

use tokio_util::sync::CancellationToken;

/// Spinning tasks on the current runtime, one per worker; they stop when this is dropped.
#[derive(Debug)]
pub struct BusyPoll {
    stop: CancellationToken,
}

impl BusyPoll {
    /// Start one spinning task per worker of the current runtime (call inside it).
    pub fn start() -> BusyPoll {
        let stop = CancellationToken::new();
        let workers = tokio::runtime::Handle::current().metrics().num_workers();
        for _ in 0..workers {
            let stop = stop.clone();
            // Yielding lets the worker poll its I/O driver without waiting, then come back.
            tokio::spawn(async move {
                while !stop.is_cancelled() {
                    tokio::task::yield_now().await;
                }
            });
        }
        BusyPoll { stop }
    }
}

impl Drop for BusyPoll {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn spinners_run_until_dropped_and_other_tasks_still_progress() {
        let busy = BusyPoll::start();
        // A timer still fires while the spinner holds the only worker.
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            tokio::time::sleep(std::time::Duration::from_millis(5)),
        )
        .await
        .expect("a timer fires while busy polling");
        let stop = busy.stop.clone();
        drop(busy);
        assert!(stop.is_cancelled());
    }
}
