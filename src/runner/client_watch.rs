//! Watches the client while a window runs: how late its event loop wakes, how much CPU the
//! process used, and how long its threads waited for a core. These say whether the client,
//! not the server, set the pace of the measured latencies.

use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::metrics::trust::ClientLoad;

/// How often the event loop is asked to wake; its lateness is the lag.
const TICK: Duration = Duration::from_millis(10);

/// A lag above this counts as a late wake.
pub const LATE_WAKE_MS: f64 = 5.0;

/// Started before a window, finished after it.
pub struct ClientWatch {
    stop: CancellationToken,
    ticker: JoinHandle<LagTally>,
    started: Instant,
    threads_before: Option<ThreadTimes>,
}

#[derive(Debug, Default, Clone, Copy)]
struct LagTally {
    ticks: u64,
    sum_ms: f64,
    max_ms: f64,
    late: u64,
}

impl ClientWatch {
    /// Start watching on the current runtime.
    pub fn start() -> ClientWatch {
        let stop = CancellationToken::new();
        let ticker = tokio::spawn(tick(stop.clone()));
        ClientWatch {
            stop,
            ticker,
            started: Instant::now(),
            threads_before: ThreadTimes::read(),
        }
    }

    /// Stop watching; what was seen since the start.
    pub async fn finish(self) -> ClientLoad {
        let wall_s = self.started.elapsed().as_secs_f64();
        self.stop.cancel();
        let lag = self.ticker.await.unwrap_or_default();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let threads = self
            .threads_before
            .zip(ThreadTimes::read())
            .map(|(before, after)| after.since(before));
        ClientLoad {
            wall_s,
            ticks: lag.ticks,
            event_loop_lag_mean_ms: (lag.ticks > 0).then(|| lag.sum_ms / lag.ticks as f64),
            event_loop_lag_max_ms: (lag.ticks > 0).then_some(lag.max_ms),
            late_wake_share: (lag.ticks > 0).then(|| lag.late as f64 / lag.ticks as f64),
            cpu_share: threads
                .filter(|_| wall_s > 0.0)
                .map(|t| t.run_s / (wall_s * cores)),
            runqueue_wait_per_s: threads.filter(|_| wall_s > 0.0).map(|t| t.wait_s / wall_s),
        }
    }
}

async fn tick(stop: CancellationToken) -> LagTally {
    let mut tally = LagTally::default();
    loop {
        let due = Instant::now() + TICK;
        tokio::select! {
            () = stop.cancelled() => return tally,
            () = tokio::time::sleep_until(due.into()) => {}
        }
        let lag_ms = Instant::now().saturating_duration_since(due).as_secs_f64() * 1000.0;
        tally.ticks += 1;
        tally.sum_ms += lag_ms;
        tally.max_ms = tally.max_ms.max(lag_ms);
        if lag_ms > LATE_WAKE_MS {
            tally.late += 1;
        }
    }
}

/// The process's threads' time on a core and waiting for one (Linux schedstat).
#[derive(Debug, Clone, Copy, PartialEq)]
struct ThreadTimes {
    run_s: f64,
    wait_s: f64,
}

impl ThreadTimes {
    /// Summed over `/proc/self/task/*/schedstat`; `None` where that does not exist.
    fn read() -> Option<ThreadTimes> {
        let mut times = ThreadTimes {
            run_s: 0.0,
            wait_s: 0.0,
        };
        for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else {
                continue;
            };
            let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
            if let (Some(Some(run)), Some(Some(wait))) = (fields.next(), fields.next()) {
                times.run_s += run as f64 / 1e9;
                times.wait_s += wait as f64 / 1e9;
            }
        }
        Some(times)
    }

    /// Time spent since `before`; threads that ended in between are lost, never negative.
    fn since(self, before: ThreadTimes) -> ThreadTimes {
        ThreadTimes {
            run_s: (self.run_s - before.run_s).max(0.0),
            wait_s: (self.wait_s - before.wait_s).max(0.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_blocked_worker_shows_as_event_loop_lag() {
        let watch = ClientWatch::start();
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Block both workers: the ticker cannot run until they are free.
        let blockers: Vec<_> = (0..2)
            .map(|_| {
                tokio::spawn(async {
                    std::thread::sleep(Duration::from_millis(120));
                })
            })
            .collect();
        for b in blockers {
            b.await.expect("blocker");
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
        let load = watch.finish().await;
        assert!(load.ticks >= 2, "{load:?}");
        assert!(
            load.event_loop_lag_max_ms.expect("ticks") >= 50.0,
            "{load:?}"
        );
        assert!(load.late_wake_share.expect("ticks") > 0.0, "{load:?}");
        if cfg!(target_os = "linux") {
            assert!(load.cpu_share.is_some() && load.runqueue_wait_per_s.is_some());
        }
    }
}
