//! The words a generation emits and the clamp that turns seconds into delays.

use std::time::Duration;

use crate::sim::rng::SimRng;

/// Output words; none needs JSON escaping and each is exactly one simulator token.
const VOCABULARY: [&str; 64] = [
    "the",
    "model",
    "serves",
    "tokens",
    "quickly",
    "while",
    "queue",
    "grows",
    "under",
    "load",
    "and",
    "cache",
    "blocks",
    "stay",
    "warm",
    "for",
    "shared",
    "prefixes",
    "decode",
    "steps",
    "batch",
    "many",
    "requests",
    "together",
    "so",
    "latency",
    "rises",
    "with",
    "concurrency",
    "but",
    "throughput",
    "improves",
    "until",
    "slots",
    "fill",
    "then",
    "waiting",
    "time",
    "dominates",
    "first",
    "token",
    "arrives",
    "after",
    "prefill",
    "of",
    "prompt",
    "each",
    "chunk",
    "carries",
    "text",
    "to",
    "client",
    "which",
    "records",
    "timing",
    "data",
    "per",
    "event",
    "in",
    "order",
    "a",
    "plan",
    "runs",
    "phases",
];

/// Longest single delay: keeps absurd settings from overflowing instants.
const MAX_DELAY_S: f64 = 86_400.0;

/// A delay from seconds, clamped to [0, MAX_DELAY_S].
pub(crate) fn seconds(value: f64) -> Duration {
    Duration::try_from_secs_f64(value.clamp(0.0, MAX_DELAY_S)).unwrap_or(Duration::ZERO)
}

pub(super) fn next_word(rng: &mut SimRng) -> &'static str {
    VOCABULARY[((rng.next_u64() >> 32) % VOCABULARY.len() as u64) as usize]
}
