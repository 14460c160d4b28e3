//! Gauge guards: each decrements its counter when dropped, so aborted requests leave the counts right.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use tokio::sync::OwnedSemaphorePermit;

use crate::sim::state::Shared;

/// Decrements a gauge when dropped, so aborted requests leave the counts right.
pub(super) struct InFlight(Arc<Shared>);

impl InFlight {
    pub(super) fn enter(shared: Arc<Shared>) -> Self {
        let now = shared.counters.in_flight.fetch_add(1, Relaxed) + 1;
        shared.counters.max_in_flight.fetch_max(now, Relaxed);
        InFlight(shared)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.counters.in_flight.fetch_sub(1, Relaxed);
    }
}

pub(super) struct Waiting(pub(super) Arc<Shared>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.counters.waiting.fetch_sub(1, Relaxed);
    }
}

pub(super) struct Running {
    pub(super) shared: Arc<Shared>,
    pub(super) permit: Option<OwnedSemaphorePermit>,
}

impl Running {
    /// Keep the slot busy for good, as an engine that leaks an aborted request's slot does:
    /// the permit never returns and the request stays counted as running.
    pub(super) fn leak(mut self) {
        if let Some(permit) = self.permit.take() {
            permit.forget();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A leaked slot stays running.
        if self.permit.is_some() {
            self.shared.counters.running.fetch_sub(1, Relaxed);
            if let Some(power) = &self.shared.power {
                power.ended();
            }
        }
    }
}
