//! Synthetic prompt text fitted to an exact token count, and seeded length sampling.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal, Normal, weighted::WeightedIndex};

use super::tokens::{self, TokenCounter};
use super::words::WORDS;
use super::{ChatMessage, PromptInput, WorkloadError};
use crate::plan::{Api, TokenCount};

/// Fewest one-token words a counter must accept for synthetic text.
const MIN_WORDS: usize = 64;
/// Words in the per-request nonce at the start of a prompt.
pub const NONCE_WORDS: usize = 4;
/// Words a text salt puts at the head of every prompt.
pub const SALT_WORDS: usize = 4;
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
    RerankQuery = 6,
    Session = 7,
    Salt = 8,
    Images = 9,
    /// The rows of a generated scored set.
    Generated = 10,
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
    /// Its words (the content is these, joined by single spaces).
    pub words: Vec<&'static str>,
    pub input: PromptInput,
    pub tokens: u64,
}

/// How synthetic prompts are sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sizing {
    /// Count each message cut to its first word (once, then cached), add one token per further
    /// word: for counters that guarantee a synthetic word is one token wherever it lands.
    Arithmetic,
    /// Tokenize every candidate prompt whole (the reference; slow for long prompts).
    Retokenize,
}

/// A counter, the request form, and the words the counter counts as one token each.
#[derive(Clone)]
pub struct TextKit {
    pub counter: Arc<dyn TokenCounter>,
    pub api: Api,
    pub words: Vec<&'static str>,
    pub sizing: Sizing,
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
        let mut kit = TextKit {
            counter,
            api,
            words,
            sizing: Sizing::Retokenize,
        };
        // Any doubt (a probe that fails to render or count) keeps the reference path.
        if kit
            .counter
            .adds_one_token_per_word(api, &kit.words)
            .unwrap_or(false)
            && kit.arithmetic_agrees().unwrap_or(false)
        {
            kit.sizing = Sizing::Arithmetic;
        }
        Ok(kit)
    }

    /// The same kit, sizing prompts the given way (tests compare the two).
    pub fn with_sizing(mut self, sizing: Sizing) -> Self {
        self.sizing = sizing;
        self
    }

    /// A whole-prompt check of the arithmetic on a long conversation of every word.
    fn arithmetic_agrees(&self) -> Result<bool, WorkloadError> {
        let half = self.words.len() / 2;
        let reversed: Vec<&'static str> = self.words.iter().rev().copied().collect();
        let turns: [&[&'static str]; 3] = [&self.words, &reversed, &self.words[half..]];
        let whole = self.count(&self.input_of(&turns))?;
        let arithmetic = self.count_arithmetic(&turns)?;
        Ok(whole == arithmetic)
    }

    pub fn random_word(&self, rng: &mut ChaCha8Rng) -> &'static str {
        // u32 draws: the same sequence on 32- and 64-bit machines.
        self.words[rng.random_range(0..self.words.len() as u32) as usize]
    }

    pub fn random_words(&self, rng: &mut ChaCha8Rng, n: usize) -> Vec<&'static str> {
        (0..n).map(|_| self.random_word(rng)).collect()
    }

    /// Words unique to `index` (its digits in base `words.len()`, lowest first, so neighbouring
    /// requests differ at their first token) plus one seeded word. A run's `salt` turns each
    /// digit's word by its own amount: still unique within the run, another run's words from
    /// the first.
    pub fn nonce(&self, index: u64, salt: u64, rng: &mut ChaCha8Rng) -> Vec<&'static str> {
        let base = self.words.len() as u64;
        let mut rest = index;
        let mut turn = salt;
        let mut out = Vec::with_capacity(NONCE_WORDS);
        for _ in 0..NONCE_WORDS - 1 {
            out.push(self.words[((rest % base + turn % base) % base) as usize]);
            rest /= base;
            turn = crate::hash::mix64(turn);
        }
        out.push(self.random_word(rng));
        out
    }

    /// The words a run's text salt puts at the head of its prompts: drawn from the kit's words
    /// with the salt as seed, so one salt gives the same words on every machine.
    pub fn salt_words(&self, salt: &str) -> Vec<&'static str> {
        let seed = crate::hash::fnv1a_64(salt.as_bytes());
        self.random_words(&mut stream_rng(seed, Purpose::Salt, 0), SALT_WORDS)
    }

    /// The request input: `history` (earlier turns) then `content` as the last user turn.
    pub fn input(&self, history: &[ChatMessage], content: String) -> PromptInput {
        match self.api {
            Api::Chat | Api::Responses | Api::Messages => {
                let mut messages = history.to_vec();
                messages.push(ChatMessage::new("user", content));
                PromptInput::Messages(messages)
            }
            Api::Completions | Api::Embeddings | Api::Rerank => {
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

    /// The input of a synthetic conversation: `turns` alternate user and assistant messages
    /// (the last one is the user's), each its words joined by spaces.
    pub fn input_of(&self, turns: &[&[&'static str]]) -> PromptInput {
        let Some((last, earlier)) = turns.split_last() else {
            return self.input(&[], String::new());
        };
        let history: Vec<ChatMessage> = earlier
            .iter()
            .enumerate()
            .map(|(i, words)| {
                ChatMessage::new(
                    if i % 2 == 0 { "user" } else { "assistant" },
                    words.join(" "),
                )
            })
            .collect();
        self.input(&history, last.join(" "))
    }

    pub fn count(&self, input: &PromptInput) -> Result<u64, WorkloadError> {
        tokens::count_input(self.counter.as_ref(), input)
    }

    /// Prompt tokens of the synthetic conversation `turns` (see [`TextKit::input_of`]).
    pub fn count_words(&self, turns: &[&[&'static str]]) -> Result<u64, WorkloadError> {
        match self.sizing {
            Sizing::Arithmetic => self.count_arithmetic(turns),
            Sizing::Retokenize => self.count(&self.input_of(turns)),
        }
    }

    /// Each turn cut to its first word, counted, plus one token per word cut.
    fn count_arithmetic(&self, turns: &[&[&'static str]]) -> Result<u64, WorkloadError> {
        let heads: Vec<&[&'static str]> = turns.iter().map(|t| &t[..t.len().min(1)]).collect();
        let grown: Vec<u64> = turns
            .iter()
            .map(|t| t.len().saturating_sub(1) as u64)
            .collect();
        let grown = match self.api {
            Api::Chat | Api::Responses | Api::Messages => grown,
            Api::Completions | Api::Embeddings | Api::Rerank => vec![grown.iter().sum()],
        };
        self.counter.count_grown(&self.input_of(&heads), &grown)
    }

    /// Fits a one-message prompt to `target` tokens in all. Its words are `head` (shared
    /// blocks, prefix, nonce) then words from `rng`; the first `keep` are never removed.
    /// Returns the words, the input and its count, which differs from `target` only when the
    /// target is out of reach (below the `keep` words plus template overhead).
    pub fn fit(
        &self,
        head: &[&'static str],
        keep: usize,
        rng: &mut ChaCha8Rng,
        target: u64,
    ) -> Result<Fitted, WorkloadError> {
        let mut words: Vec<&'static str> = head.to_vec();
        let min = keep.min(head.len());
        let mut n = min;
        let mut best: Option<(usize, u64)> = None;
        for _ in 0..FIT_ROUNDS {
            while words.len() < n {
                words.push(self.random_word(rng));
            }
            let tokens = self.count_words(&[&words[..n]])?;
            let better = match best {
                None => true,
                Some((_, b)) => tokens.abs_diff(target) < b.abs_diff(target),
            };
            if better {
                best = Some((n, tokens));
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
        let (n, tokens) = best.ok_or_else(|| WorkloadError("no prompt was built".into()))?;
        words.truncate(n);
        let input = self.input_of(&[&words]);
        Ok(Fitted {
            words,
            input,
            tokens,
        })
    }

    /// Tokens of the smallest prompt with these head words: the floor for any target.
    pub fn floor(&self, head_words: usize) -> Result<u64, WorkloadError> {
        let words = vec![self.words[0]; head_words];
        self.count_words(&[&words])
    }
}
