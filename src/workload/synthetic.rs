//! Synthetic prompt text fitted to an exact token count, and seeded length sampling.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal, Normal, weighted::WeightedIndex};

use super::tokens::TokenCounter;
use super::words::WORDS;
use super::{ChatMessage, PromptInput, WorkloadError};
use crate::plan::{Api, TokenCount};

/// Fewest one-token words a counter must accept for synthetic text.
const MIN_WORDS: usize = 64;
/// Words in the per-request nonce at the start of a prompt.
pub const NONCE_WORDS: usize = 4;
/// Fitting rounds before settling for the closest count.
const FIT_ROUNDS: usize = 8;

/// Independent random streams, so changing one setting leaves the others' draws alone.
#[derive(Debug, Clone, Copy)]
#[repr(u64)]
pub enum Purpose {
    Request = 1,
    PrefixGroup = 2,
    Conversation = 3,
    TraceBlock = 4,
    DatasetOrder = 5,
}

/// A ChaCha stream for (seed, purpose, index): the same on every machine.
pub fn stream_rng(seed: u64, purpose: Purpose, index: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(
        seed.wrapping_add((purpose as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
    );
    rng.set_stream(index);
    rng
}

/// Checks a token-count setting; `what` names it in errors.
pub fn validate_count(count: &TokenCount, what: &str) -> Result<(), WorkloadError> {
    let bad = |msg: String| Err(WorkloadError(format!("{what}: {msg}")));
    match count {
        TokenCount::Fixed(n) => {
            if *n == 0 {
                return bad("must be at least 1".into());
            }
        }
        TokenCount::Normal(n) => {
            if !n.mean.is_finite() || !n.stddev.is_finite() || n.stddev < 0.0 {
                return bad("normal needs a finite mean and a stddev >= 0".into());
            }
            min_max(n.min, n.max, what)?;
        }
        TokenCount::LogNormal(l) => {
            if !(l.median.is_finite() && l.median > 0.0 && l.sigma.is_finite() && l.sigma >= 0.0) {
                return bad("lognormal needs a median > 0 and a sigma >= 0".into());
            }
            min_max(l.min, l.max, what)?;
        }
        TokenCount::Uniform(u) => {
            if u.min > u.max || u.max == 0 {
                return bad(format!("uniform min {} exceeds max {}", u.min, u.max));
            }
        }
        TokenCount::Choice(c) => {
            if c.values.is_empty() {
                return bad("values is empty".into());
            }
            if let Some(w) = &c.weights {
                if w.len() != c.values.len() {
                    return bad(format!("{} weights for {} values", w.len(), c.values.len()));
                }
                if WeightedIndex::new(w).is_err() {
                    return bad("weights must be >= 0, finite, and not all zero".into());
                }
            }
        }
    }
    Ok(())
}

fn min_max(min: Option<u32>, max: Option<u32>, what: &str) -> Result<(), WorkloadError> {
    match (min, max) {
        (Some(lo), Some(hi)) if lo > hi => {
            Err(WorkloadError(format!("{what}: min {lo} exceeds max {hi}")))
        }
        _ => Ok(()),
    }
}

/// One draw from a validated token count; at least 1.
pub fn sample_count(count: &TokenCount, rng: &mut ChaCha8Rng) -> u32 {
    let clamp = |x: f64, min: Option<u32>, max: Option<u32>| -> u32 {
        let lo = f64::from(min.unwrap_or(1).max(1));
        let hi = f64::from(max.unwrap_or(u32::MAX));
        x.round().clamp(lo, hi.max(lo)) as u32
    };
    match count {
        TokenCount::Fixed(n) => (*n).max(1),
        TokenCount::Normal(n) => match Normal::new(n.mean, n.stddev) {
            Ok(d) => clamp(d.sample(rng), n.min, n.max),
            Err(_) => clamp(n.mean, n.min, n.max),
        },
        TokenCount::LogNormal(l) => match LogNormal::new(l.median.ln(), l.sigma) {
            Ok(d) => clamp(d.sample(rng), l.min, l.max),
            Err(_) => clamp(l.median, l.min, l.max),
        },
        TokenCount::Uniform(u) => rng.random_range(u.min.max(1)..=u.max.max(1)),
        TokenCount::Choice(c) => {
            let i = match c.weights.as_ref().map(WeightedIndex::new) {
                Some(Ok(w)) => w.sample(rng),
                Some(Err(_)) | None => rng.random_range(0..c.values.len() as u32) as usize,
            };
            c.values.get(i).copied().unwrap_or(1).max(1)
        }
    }
}

/// Short description of a token count, for reports.
pub fn describe_count(count: &TokenCount) -> String {
    match count {
        TokenCount::Fixed(n) => n.to_string(),
        TokenCount::Normal(n) => format!("normal(mean {}, stddev {})", n.mean, n.stddev),
        TokenCount::LogNormal(l) => format!("lognormal(median {}, sigma {})", l.median, l.sigma),
        TokenCount::Uniform(u) => format!("uniform({}..={})", u.min, u.max),
        TokenCount::Choice(c) => format!("choice{:?}", c.values),
    }
}

/// A fitted last turn.
pub struct Fitted {
    pub content: String,
    pub input: PromptInput,
    pub tokens: u64,
}

/// A counter, the request form, and the words the counter counts as one token each.
#[derive(Clone)]
pub struct TextKit {
    pub counter: Arc<dyn TokenCounter>,
    pub api: Api,
    pub words: Vec<&'static str>,
}

impl TextKit {
    pub fn new(counter: Arc<dyn TokenCounter>, api: Api) -> Result<Self, WorkloadError> {
        let mut words: Vec<&'static str> = Vec::new();
        for w in WORDS {
            if words.contains(w) {
                continue;
            }
            if counter.count_fragment(&format!(" {w}"))? == 1 {
                words.push(w);
            }
        }
        if words.len() < MIN_WORDS {
            return Err(WorkloadError(format!(
                "{} counts only {} of the synthetic words as one token (need {MIN_WORDS}); \
                 synthetic prompts cannot be sized with it",
                counter.description(),
                words.len()
            )));
        }
        Ok(TextKit {
            counter,
            api,
            words,
        })
    }

    pub fn random_word(&self, rng: &mut ChaCha8Rng) -> &'static str {
        // u32 draws: the same sequence on 32- and 64-bit machines.
        self.words[rng.random_range(0..self.words.len() as u32) as usize]
    }

    pub fn random_words(&self, rng: &mut ChaCha8Rng, n: usize) -> Vec<&'static str> {
        (0..n).map(|_| self.random_word(rng)).collect()
    }

    /// Words unique to `index` (its digits in base `words.len()`, lowest first, so neighbouring
    /// requests differ at their first token) plus one seeded word.
    pub fn nonce(&self, index: u64, rng: &mut ChaCha8Rng) -> Vec<&'static str> {
        let base = self.words.len() as u64;
        let mut rest = index;
        let mut out = Vec::with_capacity(NONCE_WORDS);
        for _ in 0..NONCE_WORDS - 1 {
            out.push(self.words[(rest % base) as usize]);
            rest /= base;
        }
        out.push(self.random_word(rng));
        out
    }

    /// The request input: `history` (earlier turns) then `content` as the last user turn.
    pub fn input(&self, history: &[ChatMessage], content: String) -> PromptInput {
        match self.api {
            Api::Chat => {
                let mut messages = history.to_vec();
                messages.push(ChatMessage {
                    role: "user".into(),
                    content,
                });
                PromptInput::Messages(messages)
            }
            Api::Completions => {
                let mut text = String::new();
                for m in history {
                    text.push_str(&m.content);
                    text.push('\n');
                }
                text.push_str(&content);
                PromptInput::Text(text)
            }
        }
    }

    pub fn count(&self, input: &PromptInput) -> Result<u64, WorkloadError> {
        match input {
            PromptInput::Messages(m) => self.counter.count_chat(m),
            PromptInput::Text(t) => self.counter.count_text(t),
        }
    }

    /// Fits the last user turn to `target` tokens in all. Its words are `head` (shared
    /// blocks, prefix, nonce) then words from `rng`; the first `keep` are never removed.
    /// Returns the content, the input and its count, which differs from `target` only when
    /// the target is out of reach (below the `keep` words plus template overhead).
    pub fn fit(
        &self,
        history: &[ChatMessage],
        head: &[&'static str],
        keep: usize,
        rng: &mut ChaCha8Rng,
        target: u64,
    ) -> Result<Fitted, WorkloadError> {
        let mut words: Vec<&'static str> = head.to_vec();
        let min = keep.min(head.len());
        let mut n = min;
        let mut best: Option<Fitted> = None;
        for _ in 0..FIT_ROUNDS {
            while words.len() < n {
                words.push(self.random_word(rng));
            }
            let content = words[..n].join(" ");
            let input = self.input(history, content.clone());
            let tokens = self.count(&input)?;
            let better = match &best {
                None => true,
                Some(b) => tokens.abs_diff(target) < b.tokens.abs_diff(target),
            };
            if better {
                best = Some(Fitted {
                    content,
                    input,
                    tokens,
                });
            }
            if tokens == target || (tokens > target && n == min) {
                break;
            }
            // Each word is one token, so the gap is the number of words to add or drop.
            n = if tokens < target {
                n + (target - tokens) as usize
            } else {
                n.saturating_sub((tokens - target) as usize).max(min)
            };
        }
        best.ok_or_else(|| WorkloadError("no prompt was built".into()))
    }

    /// Tokens of the smallest prompt with these head words: the floor for any target.
    pub fn floor(&self, history: &[ChatMessage], head_words: usize) -> Result<u64, WorkloadError> {
        let content = vec![self.words[0]; head_words].join(" ");
        self.count(&self.input(history, content))
    }
}
