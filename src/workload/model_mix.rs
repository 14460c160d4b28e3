//! Which served model each request of a model mix names: a seeded low-discrepancy draw by
//! request (or session) number, so the shares match the weights closely in any run length.

use std::sync::Arc;

use crate::plan::ModelMix;

/// The golden ratio's fractional part: successive multiples spread evenly over [0, 1).
const GOLDEN: f64 = 0.618_033_988_749_894_9;

/// Picks each request's model from a mix's weights.
#[derive(Debug, Clone)]
pub struct ModelChooser {
    names: Vec<Arc<str>>,
    /// Running sums of the normalized weights; the last is 1.
    upper: Vec<f64>,
    /// Seeded start of the sequence.
    offset: f64,
}

impl ModelChooser {
    pub fn new(mix: &ModelMix, seed: u64) -> Self {
        let total = mix.total();
        let mut sum = 0.0;
        let mut upper = Vec::with_capacity(mix.0.len());
        for weight in mix.0.values() {
            sum += weight.0 / total;
            upper.push(sum);
        }
        if let Some(last) = upper.last_mut() {
            *last = 1.0;
        }
        ModelChooser {
            names: mix.0.keys().map(|name| Arc::from(name.as_str())).collect(),
            upper,
            offset: (crate::hash::mix64(seed ^ 0x6d6f_6465_6c73) >> 11) as f64
                / (1u64 << 53) as f64,
        }
    }

    /// The model of draw `key` (a request's index, or its session's or conversation's
    /// number, so every turn of one goes to the same model). The draws `0..n` give each
    /// model its share of `n` to within a few draws (a Weyl sequence: its points fall into
    /// any interval in proportion to its length, far closer than independent draws).
    pub fn pick(&self, key: u64) -> Arc<str> {
        let u = (self.offset + (key as f64) * GOLDEN).fract();
        let at = self.upper.partition_point(|&upper| upper <= u);
        self.names[at.min(self.names.len() - 1)].clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Fraction;

    fn mix(weights: &[(&str, f64)]) -> ModelMix {
        ModelMix(
            weights
                .iter()
                .map(|(n, w)| (n.to_string(), Fraction(*w)))
                .collect(),
        )
    }

    #[test]
    fn shares_follow_the_weights_closely_for_every_seed() {
        let weights = [("base", 0.6), ("adapter-a", 0.3), ("adapter-b", 0.1)];
        for seed in 0..20 {
            let chooser = ModelChooser::new(&mix(&weights), seed);
            for n in [50u64, 100, 1000] {
                for (name, weight) in weights {
                    let count = (0..n).filter(|&i| &*chooser.pick(i) == name).count();
                    let expected = weight * n as f64;
                    assert!(
                        (count as f64 - expected).abs() <= 2.0 + 1e-9,
                        "seed {seed}, {n} draws: {name} got {count}, expected {expected}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_models_and_another_seed_others() {
        let m = mix(&[("base", 0.5), ("a", 0.5)]);
        let picks = |seed| -> Vec<Arc<str>> {
            let chooser = ModelChooser::new(&m, seed);
            (0..64).map(|i| chooser.pick(i)).collect()
        };
        assert_eq!(picks(7), picks(7));
        assert_ne!(picks(7), picks(8));
    }
}
