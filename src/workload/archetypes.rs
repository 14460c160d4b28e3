//! A phase's mix of archetypes: each request drawn from one of several workloads by weight.
//!
//! With a fixed request count `n`, the archetypes' counts are their weights' shares of `n`
//! by largest remainder, laid out in a seeded shuffle that repeats every `n` prompts: any `n`
//! consecutive prompts (the measured window after any warmup) hold each archetype exactly
//! its count. Without one, each prompt's archetype is a seeded low-discrepancy draw (the
//! model mix's), so the shares stay close to the weights at any length.

use std::sync::Arc;

use super::{ModelChooser, Prompt, PromptSource};
use crate::hash::SplitMix64;
use crate::plan::ArchetypeMix;

/// The archetypes' prompt sources and which one each prompt comes from.
pub struct Archetypes {
    names: Vec<Arc<str>>,
    pub(super) sources: Vec<PromptSource>,
    /// The archetype of each position in a cycle of the phase's request count (empty
    /// without one).
    cycle: Vec<u32>,
    draws: ModelChooser,
}

impl Archetypes {
    /// `sources` in `mix`'s order; `requests` is the phase's fixed request count, if it has
    /// one.
    pub fn new(
        mix: &ArchetypeMix,
        sources: Vec<PromptSource>,
        seed: u64,
        requests: Option<u64>,
    ) -> Self {
        let weights: Vec<f64> = mix.0.values().map(|w| w.0).collect();
        // A cycle is kept in memory; a very long phase draws instead.
        let cycle = match requests {
            Some(n) if n > 0 && n <= 1 << 24 => shuffled(&counts(&weights, n), seed),
            _ => Vec::new(),
        };
        Archetypes {
            names: mix.0.keys().map(|n| Arc::from(n.as_str())).collect(),
            sources,
            cycle,
            draws: ModelChooser::new(mix, seed ^ 0x6172_6368),
        }
    }

    /// The archetype of prompt `index`.
    pub fn pick(&self, index: u64) -> usize {
        if self.cycle.is_empty() {
            let name = self.draws.pick(index);
            self.names.iter().position(|n| *n == name).unwrap_or(0)
        } else {
            self.cycle[(index % self.cycle.len() as u64) as usize] as usize
        }
    }

    /// Prompt `index`: its archetype's prompt of that number, marked with the archetype.
    pub fn prompt(&self, index: u64) -> Prompt {
        let at = self.pick(index);
        let mut prompt = self.sources[at].prompt(index);
        prompt.archetype = Some(self.names[at].clone());
        prompt
    }

    /// Each archetype's name and source.
    pub fn each(&self) -> impl Iterator<Item = (&str, &PromptSource)> {
        self.names.iter().map(|n| &**n).zip(&self.sources)
    }
}

/// Each weight's share of `n` by largest remainder: the floors, then one more for the
/// largest remainders (earlier entries first on ties), summing to `n`.
pub fn counts(weights: &[f64], n: u64) -> Vec<u64> {
    let total: f64 = weights.iter().sum();
    let exact: Vec<f64> = weights
        .iter()
        .map(|w| w / total.max(f64::MIN_POSITIVE) * n as f64)
        .collect();
    let mut counts: Vec<u64> = exact.iter().map(|e| e.floor() as u64).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (exact[a] - exact[a].floor(), exact[b] - exact[b].floor());
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    let short = n.saturating_sub(counts.iter().sum());
    for &at in order.iter().cycle().take(short as usize) {
        counts[at] += 1;
    }
    counts
}

/// Each index repeated its count, in a seeded Fisher–Yates shuffle.
fn shuffled(counts: &[u64], seed: u64) -> Vec<u32> {
    let mut out: Vec<u32> = counts
        .iter()
        .enumerate()
        .flat_map(|(at, &c)| std::iter::repeat_n(at as u32, c as usize))
        .collect();
    let mut rng = SplitMix64::new(seed ^ 0x6d69_7865_6421);
    for i in (1..out.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        out.swap(i, j);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_remainder_counts_sum_to_n_and_round_the_largest_remainders_up() {
        assert_eq!(counts(&[0.7, 0.2, 0.1], 100), [70, 20, 10]);
        // 7 × (1/3): floors 2, 2, 2; the one left goes to the first on a tie.
        assert_eq!(counts(&[1.0, 1.0, 1.0], 7), [3, 2, 2]);
        // 0.55 × 9 = 4.95, 0.45 × 9 = 4.05: the larger remainder gets the spare.
        assert_eq!(counts(&[0.55, 0.45], 9), [5, 4]);
        for n in [1u64, 2, 13, 99, 1000] {
            assert_eq!(counts(&[0.5, 0.3, 0.2], n).iter().sum::<u64>(), n);
        }
    }

    #[test]
    fn a_shuffle_keeps_the_counts_and_depends_on_the_seed() {
        let a = shuffled(&[6, 3, 1], 1);
        let tally = |v: &[u32], at| v.iter().filter(|&&x| x == at).count();
        assert_eq!((tally(&a, 0), tally(&a, 1), tally(&a, 2)), (6, 3, 1));
        assert_eq!(a, shuffled(&[6, 3, 1], 1));
        assert_ne!(shuffled(&[50, 50], 1), shuffled(&[50, 50], 2));
    }
}
