//! Seeded open-loop arrival times: constant, Poisson and gamma (bursty) inter-arrival gaps,
//! and when each arrival was due, as its request's record says.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Gamma};

use crate::client::RequestRecord;
use crate::plan::Arrival;

/// When an open loop's arrival was due, and how long it waited for a concurrency slot.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scheduled {
    pub(super) scheduled_ms: f64,
    pub(super) slot_wait_ms: Option<f64>,
}

impl Scheduled {
    /// The arrival's schedule on the record of the request that started it.
    pub(super) fn stamp(self, record: &mut RequestRecord) {
        record.scheduled_offset_ms = Some(self.scheduled_ms);
        let send_lag_ms = record.start_offset_ms - self.scheduled_ms;
        record.send_lag_ms = Some(send_lag_ms);
        record.slot_wait_ms = self.slot_wait_ms.map(|w| w.min(send_lag_ms.max(0.0)));
    }
}

/// Yields inter-arrival gaps in seconds, independent of response times.
pub struct ArrivalGaps {
    kind: GapKind,
    rng: ChaCha8Rng,
}

enum GapKind {
    Constant(f64),
    Exponential(Exp<f64>),
    Gamma(Gamma<f64>),
}

impl ArrivalGaps {
    /// `rps` must be positive; `burstiness` (gamma only) is the inverse of the gamma shape, so 1
    /// is Poisson and larger values cluster arrivals. Invalid parameters fall back to Poisson,
    /// which the plan checks rule out before a run starts.
    pub fn new(arrival: Arrival, rps: f64, burstiness: Option<f64>, seed: u64) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(seed);
        let exponential = || {
            GapKind::Exponential(
                Exp::new(rps).unwrap_or_else(|_| Exp::new(1.0).expect("1 is a valid rate")),
            )
        };
        let kind = match arrival {
            Arrival::Constant => GapKind::Constant(1.0 / rps),
            Arrival::Poisson => exponential(),
            Arrival::Gamma => {
                let shape = 1.0 / burstiness.unwrap_or(1.0);
                match Gamma::new(shape, 1.0 / (rps * shape)) {
                    Ok(gamma) => GapKind::Gamma(gamma),
                    Err(_) => exponential(),
                }
            }
        };
        ArrivalGaps { kind, rng }
    }

    pub fn next_gap_s(&mut self) -> f64 {
        match &self.kind {
            GapKind::Constant(gap) => *gap,
            GapKind::Exponential(exp) => exp.sample(&mut self.rng),
            GapKind::Gamma(gamma) => gamma.sample(&mut self.rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps(arrival: Arrival, burstiness: Option<f64>, n: usize) -> Vec<f64> {
        let mut g = ArrivalGaps::new(arrival, 50.0, burstiness, 7);
        (0..n).map(|_| g.next_gap_s()).collect()
    }

    fn mean(xs: &[f64]) -> f64 {
        xs.iter().sum::<f64>() / xs.len() as f64
    }

    fn coefficient_of_variation(xs: &[f64]) -> f64 {
        let m = mean(xs);
        let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64;
        var.sqrt() / m
    }

    #[test]
    fn constant_gaps_are_exact() {
        assert!(
            gaps(Arrival::Constant, None, 100)
                .iter()
                .all(|g| (g - 0.02).abs() < 1e-15)
        );
    }

    #[test]
    fn poisson_gaps_have_the_planned_mean_and_unit_cv() {
        let xs = gaps(Arrival::Poisson, None, 20_000);
        assert!((mean(&xs) - 0.02).abs() < 0.02 * 0.03, "mean {}", mean(&xs));
        assert!((coefficient_of_variation(&xs) - 1.0).abs() < 0.05);
    }

    #[test]
    fn gamma_burstiness_raises_variation_but_keeps_the_rate() {
        let xs = gaps(Arrival::Gamma, Some(4.0), 20_000);
        assert!((mean(&xs) - 0.02).abs() < 0.02 * 0.05, "mean {}", mean(&xs));
        // A gamma with shape 1/4 has CV 2.
        assert!((coefficient_of_variation(&xs) - 2.0).abs() < 0.15);
    }

    #[test]
    fn same_seed_same_gaps() {
        assert_eq!(
            gaps(Arrival::Poisson, None, 50),
            gaps(Arrival::Poisson, None, 50)
        );
    }
}
