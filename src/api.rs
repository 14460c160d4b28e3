//! Which OpenAI-compatible API requests go to: named in plans, used by the client. A leaf:
//! it imports nothing from the crate.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which OpenAI endpoint a target is driven through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `POST /v1/chat/completions`
    #[default]
    Chat,
    /// `POST /v1/completions`
    Completions,
    /// `POST /v1/embeddings`: the prompt text as `input` (a list with `batch`), not streamed.
    Embeddings,
    /// `POST /v1/rerank` (Cohere/Jina shape): a `query` and `batch` prompts as `documents`,
    /// not streamed.
    Rerank,
    /// `POST /v1/responses` (OpenAI Responses API): the prompt as `input` messages, a stream
    /// of typed events.
    Responses,
    /// `POST /v1/messages` (Anthropic Messages API, served by vLLM, SGLang and llama.cpp too):
    /// `system` and `messages`, `max_tokens` always sent, a stream of typed events.
    Messages,
}

impl Api {
    /// Whether requests generate tokens, streamed (chat, completions, responses), rather than
    /// encode inputs into one JSON body.
    pub fn generates(self) -> bool {
        matches!(
            self,
            Api::Chat | Api::Completions | Api::Responses | Api::Messages
        )
    }

    /// The path under the base URL.
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "chat/completions",
            Api::Completions => "completions",
            Api::Embeddings => "embeddings",
            Api::Rerank => "rerank",
            Api::Responses => "responses",
            Api::Messages => "messages",
        }
    }
}
