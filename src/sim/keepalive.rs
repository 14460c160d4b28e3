//! The simulator's keep-alive habits: when a connection is busy, idle, and due to be closed
//! (`close_after_response`, `keep_alive_timeout`).

use std::io;
use std::pin::Pin;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::generate::SimBody;
use super::settings::Settings;

/// Whether a connection has a response in progress, and since when it has been idle.
pub(crate) struct Activity {
    busy: AtomicU64,
    served: AtomicU64,
    idle_since: Mutex<Instant>,
    changed: Notify,
}

impl Activity {
    pub fn new() -> Self {
        Activity {
            busy: AtomicU64::new(0),
            served: AtomicU64::new(0),
            idle_since: Mutex::new(Instant::now()),
            changed: Notify::new(),
        }
    }

    pub fn is_busy(&self) -> bool {
        self.busy.load(Relaxed) > 0
    }

    /// Completes when the simulator should close the connection: after a response with
    /// `close_after_response`, after `keep_alive_timeout` idle; never otherwise.
    pub async fn close_due(&self, settings: &Settings) {
        if !settings.close_after_response && settings.keep_alive_timeout.is_none() {
            return std::future::pending().await;
        }
        loop {
            let changed = self.changed.notified();
            if self.busy.load(Relaxed) == 0 {
                if settings.close_after_response && self.served.load(Relaxed) > 0 {
                    return;
                }
                if let Some(timeout) = settings.keep_alive_timeout {
                    let since = *self.idle_since.lock().unwrap_or_else(|p| p.into_inner());
                    tokio::select! {
                        () = tokio::time::sleep_until(since + timeout) => {
                            if self.busy.load(Relaxed) == 0 {
                                return;
                            }
                            continue;
                        }
                        () = changed => continue,
                    }
                }
            }
            changed.await;
        }
    }
}

/// One request in progress on a connection; ends when hyper drops the response body.
pub(crate) struct Busy(Arc<Activity>);

impl Busy {
    pub fn start(activity: Arc<Activity>) -> Self {
        activity.busy.fetch_add(1, Relaxed);
        activity.changed.notify_waiters();
        Busy(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let activity = &self.0;
        *activity
            .idle_since
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Instant::now();
        activity.served.fetch_add(1, Relaxed);
        activity.busy.fetch_sub(1, Relaxed);
        activity.changed.notify_waiters();
    }
}

/// A response body that keeps its request counted as in progress until it is dropped.
pub(crate) struct Tracked {
    pub body: SimBody,
    pub _busy: Busy,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, io::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}
