//! Helpers shared by the integration test modules.

use std::sync::OnceLock;

use tokio::sync::{Mutex, MutexGuard};

fn heavy_runs() -> &'static Mutex<()> {
    static LOCK: OnceLock<Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| Mutex::new(()))
}

/// Tests that run whole plans or check timings hold this, so that on a two-core machine they
/// never compete with each other for the CPU and skew each other's clocks.
pub async fn exclusive_run() -> MutexGuard<'static, ()> {
    heavy_runs().lock().await
}

/// [`exclusive_run`] for tests that are not async.
pub fn exclusive_run_blocking() -> MutexGuard<'static, ()> {
    heavy_runs().blocking_lock()
}
