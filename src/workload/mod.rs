//! Prompt sources: synthetic (seeded, token-count targets, shared prefixes), datasets, traces.

use serde::{Deserialize, Serialize};

/// One request's input, ready for the client to put in a body.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub input: PromptInput,
    /// Prompt tokens the server should report (chat template included), when known.
    pub planned_prompt_tokens: Option<u64>,
    /// `max_tokens` for the request.
    pub max_tokens: u32,
    /// Trace replay: when to send, relative to the phase start.
    pub scheduled_at: Option<std::time::Duration>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PromptInput {
    /// Chat API messages.
    Messages(Vec<ChatMessage>),
    /// Completions API prompt text.
    Text(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

use std::path::PathBuf;

use crate::plan::{Api, TokenizerSpec, Workload};

/// What a prompt source needs to know about where its prompts go.
#[derive(Debug, Clone)]
pub struct WorkloadContext {
    pub api: Api,
    /// Resolved tokenizer: the workload's, else the target's, else the simulator's for a
    /// simulator target, else the built-in table.
    pub tokenizer: TokenizerSpec,
    /// Directory relative paths in the plan are taken from.
    pub plan_dir: PathBuf,
    /// The workload's seed, else the plan's, else 0.
    pub seed: u64,
    /// Base URL including `/v1` (for `/tokenize` calibration).
    pub base_url: String,
    pub model: String,
}

/// A workload could not be built (missing dataset, bad tokenizer file, …).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct WorkloadError(pub String);

/// Deterministic stream of prompts for one phase.
pub struct PromptSource {
    _workload: Workload,
}

impl PromptSource {
    pub fn new(workload: &Workload, context: &WorkloadContext) -> Result<Self, WorkloadError> {
        let _ = context;
        Ok(PromptSource {
            _workload: workload.clone(),
        })
    }

    /// For `tokenizer: server`: measure the chat-template overhead against `/tokenize`.
    pub async fn calibrate(&mut self) -> Result<(), WorkloadError> {
        Ok(())
    }

    /// The next prompt, in a seeded, reproducible order.
    pub fn next_prompt(&mut self) -> Prompt {
        unimplemented!("lands with the workload issue")
    }
}
