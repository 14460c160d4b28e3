//! Planned cancellations: which requests the client abandons mid-stream, and at what point.
//! Chosen by request index before the request is sent, so the stream's reading pays one
//! comparison per read and nothing when the request is not one of them.

use std::time::{Duration, Instant};

/// Where a cancelled request is dropped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CancelPoint {
    /// Once this many output deltas (reasoning, content or tool-call) have arrived.
    Deltas(u64),
    /// This long after the request was sent.
    Time(Duration),
}

/// A workload's cancellations, as plain values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CancelSettings {
    /// Share of requests cancelled, in (0, 1].
    pub fraction: f64,
    pub point: CancelPoint,
    /// Requests sent before this offset from the phase's measured start run to their end.
    pub from: Duration,
    /// The selection's seeded phase, in [0, 1).
    phase: f64,
}

impl CancelSettings {
    pub fn new(fraction: f64, point: CancelPoint, from: Duration, seed: u64) -> Self {
        // The top 53 bits of the mixed seed, as a uniform draw in [0, 1).
        let phase = (crate::hash::splitmix64(seed) >> 11) as f64 / (1u64 << 53) as f64;
        CancelSettings {
            fraction: fraction.clamp(0.0, 1.0),
            point,
            from,
            phase,
        }
    }

    /// Whether request `index` is one to cancel: `⌊(i+1)·f + φ⌋ > ⌊i·f + φ⌋`, so any `n`
    /// consecutive indices hold `n·f` of them give or take one (an independent draw per
    /// request would miss the planned share by several points over a short phase).
    pub fn selects(&self, index: u64) -> bool {
        let at = |i: u64| (i as f64).mul_add(self.fraction, self.phase).floor();
        at(index + 1) > at(index)
    }

    /// The point at which request `index`, sent at `start`, is dropped; `None` when it runs to
    /// its end. `origin` is the phase's measured start.
    pub fn point_for(&self, index: u64, start: Instant, origin: Instant) -> Option<CancelPoint> {
        (start.saturating_duration_since(origin) >= self.from && self.selects(index))
            .then_some(self.point)
    }
}

/// Completes when a time-based cancellation is due; never for any other request.
pub(super) async fn time_due(point: Option<CancelPoint>, start: Instant) {
    match point {
        Some(CancelPoint::Time(after)) => tokio::time::sleep_until((start + after).into()).await,
        Some(CancelPoint::Deltas(_)) | None => std::future::pending::<()>().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_run_of_requests_holds_the_planned_share() {
        for fraction in [0.01, 0.1, 0.2, 1.0 / 3.0, 0.5, 0.95, 1.0] {
            for seed in [0, 7, 123] {
                let s = CancelSettings::new(fraction, CancelPoint::Deltas(4), Duration::ZERO, seed);
                for (from, n) in [(0u64, 10u64), (3, 50), (17, 200)] {
                    let chosen = (from..from + n).filter(|&i| s.selects(i)).count() as f64;
                    let planned = n as f64 * fraction;
                    assert!(
                        (chosen - planned).abs() <= 1.0,
                        "f={fraction} seed={seed}: {chosen} of {n} from {from}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_selection_is_fixed_by_seed_and_index() {
        let a = CancelSettings::new(0.2, CancelPoint::Deltas(1), Duration::ZERO, 5);
        let b = CancelSettings::new(0.2, CancelPoint::Deltas(1), Duration::ZERO, 5);
        let picks = |s: &CancelSettings| (0..100).filter(|&i| s.selects(i)).collect::<Vec<_>>();
        assert_eq!(picks(&a), picks(&b));
        let others = (1..20)
            .map(|seed| CancelSettings::new(0.2, CancelPoint::Deltas(1), Duration::ZERO, seed))
            .filter(|c| picks(c) != picks(&a))
            .count();
        assert!(others > 0, "the seed moves which requests are cancelled");
    }

    #[test]
    fn requests_before_from_are_left_alone() {
        let s = CancelSettings::new(1.0, CancelPoint::Deltas(2), Duration::from_secs(1), 0);
        let origin = Instant::now();
        assert_eq!(
            s.point_for(3, origin + Duration::from_millis(999), origin),
            None
        );
        assert_eq!(
            s.point_for(3, origin + Duration::from_secs(1), origin),
            Some(CancelPoint::Deltas(2))
        );
    }
}
