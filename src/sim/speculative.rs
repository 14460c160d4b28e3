//! A draft model for speculative decoding: each verify step drafts up to
//! `num_speculative_tokens` tokens, accepts each with probability `acceptance_rate`
//! (Binomial, so the share of draft tokens accepted averages `acceptance_rate`, as vLLM's
//! `draft_acceptance_rate` measures it), and its event carries the accepted tokens and the
//! bonus token. A request's acceptance goes out as vLLM's `metrics.speculative_decoding`; the
//! steps and tokens also count on `/metrics` under vLLM's `spec_decode` names.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::rng::SimRng;

/// The seeded stream a request's draft outcomes come from.
pub(crate) const STREAM_DRAFT: u64 = 6;

/// `speculative:` in the simulator's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimSpeculative {
    /// Chance that each draft token is accepted, 0 to 1.
    pub acceptance_rate: f64,
    /// Draft tokens proposed per verify step (vLLM's `num_speculative_tokens`).
    pub num_speculative_tokens: u32,
}

/// The resolved draft settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DraftSettings {
    pub acceptance_rate: f64,
    pub num_speculative_tokens: u32,
}

/// The settings, or what is wrong with them.
pub(crate) fn resolve(
    config: Option<&SimSpeculative>,
    problems: &mut Vec<String>,
) -> Option<DraftSettings> {
    let c = config?;
    if !(0.0..=1.0).contains(&c.acceptance_rate) {
        problems.push(format!(
            "speculative.acceptance_rate must be in [0, 1], found {}",
            c.acceptance_rate
        ));
    }
    if c.num_speculative_tokens == 0 {
        problems.push("speculative.num_speculative_tokens must be at least 1".to_string());
    }
    Some(DraftSettings {
        acceptance_rate: c.acceptance_rate,
        num_speculative_tokens: c.num_speculative_tokens,
    })
}

/// One request's drafting: the next step's outcome, drawn ahead, and its tallies.
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    settings: DraftSettings,
    rng: SimRng,
    /// The next event's (drafted, accepted), once drawn.
    next: Option<(u64, u64)>,
    pub steps: u64,
    pub drafted: u64,
    pub accepted: u64,
    /// Steps by the draft tokens they accepted.
    histogram: Vec<u64>,
}

impl Draft {
    pub fn new(settings: DraftSettings, seed: u64, request: u64) -> Self {
        Draft {
            settings,
            rng: SimRng::new(seed, request, STREAM_DRAFT),
            next: None,
            steps: 0,
            drafted: 0,
            accepted: 0,
            histogram: vec![0; settings.num_speculative_tokens as usize + 1],
        }
    }

    /// Tokens in the next event when `remaining` are left in its part (reasoning or
    /// content): the accepted draft tokens and the bonus token. A step drafts no more than
    /// the tokens left after its bonus token, so the last ones are not drafted for nothing.
    pub fn next_tokens(&mut self, remaining: u64) -> u64 {
        if remaining == 0 {
            return 0;
        }
        let (drafted, accepted) = *self.next.get_or_insert_with(|| {
            let drafted = u64::from(self.settings.num_speculative_tokens).min(remaining - 1);
            let p = self.settings.acceptance_rate;
            let accepted = (0..drafted).filter(|_| self.rng.next_f64() < p).count() as u64;
            (drafted, accepted)
        });
        debug_assert!(drafted < remaining);
        accepted + 1
    }

    /// The drawn step went out: count it. A step that drafted nothing (one token left) is a
    /// plain decode step, not a verify step.
    pub fn take(&mut self) -> Option<(u64, u64)> {
        let (drafted, accepted) = self.next.take()?;
        if drafted == 0 {
            return None;
        }
        self.steps += 1;
        self.drafted += drafted;
        self.accepted += accepted;
        self.histogram[accepted as usize] += 1;
        Some((drafted, accepted))
    }

    /// vLLM's `metrics.speculative_decoding` for the request so far.
    pub fn metrics_json(&self) -> Value {
        let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
        json!({
            "mean_acceptance_length": 1.0 + ratio(self.accepted, self.steps),
            "draft_acceptance_rate": ratio(self.accepted, self.drafted),
            "acceptance_histogram": self.histogram,
            "num_spec_steps": self.steps,
            "num_accepted_draft_tokens": self.accepted,
            "num_draft_tokens": self.drafted,
            "num_spec_tokens": self.settings.num_speculative_tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_carry_accepted_tokens_and_the_bonus() {
        let settings = DraftSettings {
            acceptance_rate: 0.6,
            num_speculative_tokens: 3,
        };
        let mut draft = Draft::new(settings, 7, 1);
        let mut left = 1000u64;
        while left > 0 {
            let n = draft.next_tokens(left);
            assert!((1..=4).contains(&n) && n <= left);
            left -= n;
            draft.take();
        }
        let m = draft.metrics_json();
        let rate = m["draft_acceptance_rate"].as_f64().unwrap();
        assert!((rate - 0.6).abs() < 0.05, "{rate}");
        let steps: u64 = m["acceptance_histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(steps, draft.steps);
        // Accepted draft tokens plus one bonus token per step, plus plain steps, are the
        // tokens sent.
        assert!(draft.accepted + draft.steps <= 1000);
        let mut none = Draft::new(settings, 7, 2);
        assert_eq!(none.next_tokens(1), 1);
        assert_eq!(none.take(), None);
    }
}
