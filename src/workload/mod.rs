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
