//! Building prompt `i` of a phase: synthetic, session turns, dataset entries, trace
//! requests, and embeddings or rerank batches.

use std::time::Duration;

use rand::Rng;

use super::synthetic::{self, Purpose, stream_rng};
use super::{
    ChatMessage, DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, DEFAULT_TOOL_RESULT_TOKENS, Kind,
    Prompt, PromptInput, PromptSource, RERANK_QUERY_WORDS, SessionTurn, WorkloadError, dataset,
    trace,
};
use crate::plan::Api;

impl PromptSource {
    fn output_tokens(&self, rng: &mut rand_chacha::ChaCha8Rng, fallback: Option<u32>) -> u32 {
        match &self.workload.output_tokens {
            Some(count) => synthetic::sample_count(count, rng),
            None => fallback.unwrap_or(DEFAULT_OUTPUT_TOKENS),
        }
    }

    pub(super) fn build(&self, index: u64) -> Result<Prompt, WorkloadError> {
        if self.context.api.generates() {
            self.build_one(index)
        } else {
            self.build_batch(index)
        }
    }

    /// Embeddings and rerank: prompts `index·batch …` as the request's inputs (rerank adds a
    /// seeded query). Rerank servers count each query–document pair with special tokens, so
    /// only embeddings plan a prompt-token count.
    fn build_batch(&self, index: u64) -> Result<Prompt, WorkloadError> {
        let n = u64::from(self.workload.batch.unwrap_or(1).max(1));
        let mut texts = Vec::with_capacity(n as usize);
        let mut planned = Some(0);
        let mut scheduled_at = None;
        for k in 0..n {
            let one = self.build_one(index * n + k)?;
            scheduled_at = scheduled_at.or(one.scheduled_at);
            planned = planned.zip(one.planned_prompt_tokens).map(|(a, b)| a + b);
            texts.push(match one.input {
                PromptInput::Text(text) => text,
                other => {
                    return Err(WorkloadError(format!(
                        "expected a text prompt, got {other:?}"
                    )));
                }
            });
        }
        let query = (self.context.api == Api::Rerank).then(|| {
            let mut rng = stream_rng(self.context.seed, Purpose::RerankQuery, index);
            self.kit
                .random_words(&mut rng, RERANK_QUERY_WORDS)
                .join(" ")
        });
        if query.is_some() {
            planned = None;
        }
        Ok(Prompt {
            input: PromptInput::Batch { query, texts },
            planned_prompt_tokens: planned,
            max_tokens: 0,
            expected: None,
            scheduled_at,
            session: None,
            model: None,
            archetype: None,
        })
    }

    fn build_one(&self, index: u64) -> Result<Prompt, WorkloadError> {
        match &self.kind {
            Kind::Synthetic => match (&self.workload.session, &self.workload.conversation) {
                (Some(s), _) => self.build_session_turn(index, s),
                (None, Some(c)) if c.turns > 1 => self.build_turn(index, u64::from(c.turns)),
                (None, Some(_) | None) => self.build_synthetic(index),
            },
            Kind::Dataset(d) => {
                let at = (index % d.entries.len() as u64) as usize;
                let entry = &d.entries[at];
                let input = dataset::to_input(&entry.input, self.context.api);
                let tokens = d.tokens[at];
                let mut rng = stream_rng(self.context.seed, Purpose::Request, index);
                Ok(Prompt {
                    input,
                    planned_prompt_tokens: Some(tokens),
                    max_tokens: self.output_tokens(&mut rng, entry.output_tokens),
                    expected: entry.expected.clone(),
                    scheduled_at: None,
                    archetype: None,
                    model: None,
                    session: None,
                })
            }
            Kind::Trace(t) => self.build_trace(t, index),
        }
    }

    /// A target drawn from `input_tokens`, raised to what the template and head need.
    fn input_target(&self, rng: &mut rand_chacha::ChaCha8Rng) -> Result<u64, WorkloadError> {
        let drawn = match &self.workload.input_tokens {
            Some(count) => synthetic::sample_count(count, rng),
            None => DEFAULT_INPUT_TOKENS,
        };
        Ok(u64::from(drawn).max(self.floor_tokens))
    }

    /// Head words of a synthetic first turn: the run's salt words, the group's shared prefix,
    /// then the nonce (turned by the salt). The salt leads, so prefixes shared on purpose stay
    /// shared within a run and no prompt of one run shares a cached prefix with another run's.
    fn head(&self, unique: u64, rng: &mut rand_chacha::ChaCha8Rng) -> Vec<&'static str> {
        let mut head = self.head_salt_words();
        if let Some(p) = &self.workload.shared_prefix {
            let group = rng.random_range(0..p.groups);
            let mut group_rng =
                stream_rng(self.context.seed, Purpose::PrefixGroup, u64::from(group));
            head.extend(self.kit.random_words(&mut group_rng, p.tokens as usize));
        }
        head.extend(self.kit.nonce(unique, self.nonce_salt(), rng));
        head
    }

    fn build_synthetic(&self, index: u64) -> Result<Prompt, WorkloadError> {
        let mut rng = stream_rng(self.context.seed, Purpose::Request, index);
        let target = self.input_target(&mut rng)?;
        let max_tokens = self.output_tokens(&mut rng, None);
        let head = self.head(index, &mut rng);
        let fitted = self.kit.fit(&head, head.len(), &mut rng, target)?;
        Ok(Prompt {
            input: fitted.input,
            planned_prompt_tokens: Some(fitted.tokens),
            max_tokens,
            expected: None,
            scheduled_at: None,
            archetype: None,
            model: None,
            session: None,
        })
    }

    /// Session `index / turns`, turn `index % turns`: only the turn's new user message (the
    /// first sized by `input_tokens` with the session's nonce, later ones by `user_tokens`);
    /// the scheduler sends it after the session's history, which holds the server's replies.
    fn build_session_turn(
        &self,
        index: u64,
        session: &crate::plan::Session,
    ) -> Result<Prompt, WorkloadError> {
        let turns = session.turns.max(1);
        let (number, turn) = (index / u64::from(turns), (index % u64::from(turns)) as u32);
        let mut rng = stream_rng(self.context.seed, Purpose::Session, index);
        let max_tokens = self.output_tokens(&mut rng, None);
        let (input, planned) = if turn == 0 {
            let target = self.input_target(&mut rng)?;
            let head = self.head(number, &mut rng);
            let fitted = self.kit.fit(&head, head.len(), &mut rng, target)?;
            (fitted.input, Some(fitted.tokens))
        } else {
            let length = match &session.user_tokens {
                Some(count) => synthetic::sample_count(count, &mut rng),
                None => self.input_target(&mut rng)? as u32,
            };
            let words = self.kit.random_words(&mut rng, length as usize);
            // The server counts this turn with the history it cannot know ahead: no plan.
            (self.kit.input_of(&[words.as_slice()]), None)
        };
        let think = match (turn, session.think_time) {
            (0, _) | (_, None) => std::time::Duration::ZERO,
            (_, Some(crate::plan::ThinkTime::Fixed(d))) => d.0,
            (_, Some(crate::plan::ThinkTime::Exponential { mean })) => {
                let u: f64 = rng.random_range(f64::EPSILON..1.0);
                mean.0.mul_f64(-u.ln())
            }
        };
        // With tools, a later turn also carries the result it sends back should the previous
        // reply call a tool: the scheduler sends one or the other.
        let mut input = input;
        if let (Some(tools), PromptInput::Messages(messages)) = (&self.workload.tools, &mut input)
            && turn > 0
        {
            let length = tools
                .result_tokens
                .as_ref()
                .map_or(DEFAULT_TOOL_RESULT_TOKENS, |count| {
                    synthetic::sample_count(count, &mut rng)
                });
            let words = self.kit.random_words(&mut rng, length as usize);
            messages.push(ChatMessage::new("tool", words.join(" ")));
        }
        Ok(Prompt {
            input,
            planned_prompt_tokens: planned,
            max_tokens,
            expected: None,
            scheduled_at: None,
            archetype: None,
            model: None,
            session: Some(SessionTurn {
                session: number,
                turn,
                turns,
                think,
            }),
        })
    }

    /// Conversation `index / turns`, turn `index % turns`: the earlier turns (user message,
    /// then a synthetic reply of that turn's `max_tokens` words) followed by a new user
    /// message of `input_tokens` words. Turn 0 alone hits `input_tokens` exactly.
    fn build_turn(&self, index: u64, turns: u64) -> Result<Prompt, WorkloadError> {
        let conversation = index / turns;
        let turn = index % turns;
        // User and assistant messages in order, each as its words.
        let mut messages: Vec<Vec<&'static str>> = Vec::new();
        let mut max_tokens = DEFAULT_OUTPUT_TOKENS;
        for k in 0..=turn {
            let mut rng = stream_rng(
                self.context.seed,
                Purpose::Conversation,
                conversation * turns + k,
            );
            let target = self.input_target(&mut rng)?;
            max_tokens = self.output_tokens(&mut rng, None);
            let content = if k == 0 {
                let head = self.head(conversation, &mut rng);
                self.kit.fit(&head, head.len(), &mut rng, target)?.words
            } else {
                self.kit.random_words(&mut rng, target as usize)
            };
            messages.push(content);
            if k < turn {
                messages.push(self.kit.random_words(&mut rng, max_tokens as usize));
            }
        }
        let turns: Vec<&[&'static str]> = messages.iter().map(Vec::as_slice).collect();
        Ok(Prompt {
            input: self.kit.input_of(&turns),
            planned_prompt_tokens: Some(self.kit.count_words(&turns)?),
            max_tokens,
            expected: None,
            scheduled_at: None,
            archetype: None,
            model: None,
            session: None,
        })
    }

    /// Trace entry `index % len`: one block of words per hash id (equal ids give equal
    /// blocks), cut or extended to `input_length` tokens in all. Later passes over the trace
    /// are shifted by the span plus one mean gap.
    fn build_trace(&self, t: &trace::TraceSource, index: u64) -> Result<Prompt, WorkloadError> {
        let len = t.entries.len() as u64;
        let entry = &t.entries[(index % len) as usize];
        let pass = index / len;
        let mut head = self.salt_words();
        let salted = head.len();
        for id in &entry.hash_ids {
            if (head.len() - salted) as u64 >= entry.input_length {
                break;
            }
            let mut block_rng = stream_rng(self.context.seed, Purpose::TraceBlock, *id);
            head.extend(
                self.kit
                    .random_words(&mut block_rng, t.block_tokens as usize),
            );
        }
        // Seeded by the entry, so a later pass repeats the same prompt.
        let mut rng = stream_rng(self.context.seed, Purpose::Request, index % len);
        let fitted = self.kit.fit(&head, salted, &mut rng, entry.input_length)?;
        let span = t.span();
        let gap = if len > 1 {
            span / (len - 1) as u32
        } else {
            Duration::from_secs(1)
        };
        let offset = (span + gap) * u32::try_from(pass).unwrap_or(u32::MAX);
        let max_tokens = u32::try_from(entry.output_length).unwrap_or(u32::MAX);
        Ok(Prompt {
            input: fitted.input,
            planned_prompt_tokens: Some(fitted.tokens),
            max_tokens,
            expected: None,
            scheduled_at: Some(t.schedule[(index % len) as usize] + offset),
            archetype: None,
            model: None,
            session: None,
        })
    }
}
