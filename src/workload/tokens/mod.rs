//! Token counters: how many prompt tokens a server will report for a prompt.
//!
//! Four sources behind one trait: the simulator's documented rules (exact), a local Hugging
//! Face `tokenizer.json` with its chat template, a built-in BPE table embedded in the binary,
//! and a target's `/tokenize` endpoint (calibrated once, then applied as a linear model over
//! the built-in table).

mod hf;
mod server;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{ChatMessage, PromptInput, WorkloadError};
use crate::plan::{Api, TokenizerSource, TokenizerSpec};
use crate::sim::tokenizer as sim_tokenizer;

pub use hf::{ChatTemplate, HfCounter};
pub use server::{
    ServerCalibration, ServerCounter, TokenizeDialect, calibrate_server, server_root,
};

/// Counts prompt tokens the way a server reports them in `usage.prompt_tokens`.
pub trait TokenCounter: Send + Sync {
    /// Prompt tokens of a completions request with this prompt (special tokens included).
    fn count_text(&self, text: &str) -> Result<u64, WorkloadError>;
    /// Prompt tokens of a chat request: template, every message and the generation prompt.
    fn count_chat(&self, messages: &[ChatMessage]) -> Result<u64, WorkloadError>;
    /// Tokens of a fragment of text inside a larger prompt (no special tokens).
    fn count_fragment(&self, text: &str) -> Result<u64, WorkloadError>;
    /// Short human description for reports and warnings.
    fn description(&self) -> String;

    /// Whether appending one synthetic word (` word`) to a message made of such words adds
    /// exactly one token in this request form, wherever it lands, so that prompts can be sized
    /// by arithmetic ([`TokenCounter::count_grown`]). When not, prompts are re-tokenized.
    fn adds_one_token_per_word(
        &self,
        _api: Api,
        _words: &[&'static str],
    ) -> Result<bool, WorkloadError> {
        Ok(false)
    }

    /// Prompt tokens of `skeleton` with `grown[i]` more synthetic words appended to message
    /// `i` (one entry for a completions prompt). Exact where
    /// [`TokenCounter::adds_one_token_per_word`] holds.
    fn count_grown(&self, skeleton: &PromptInput, grown: &[u64]) -> Result<u64, WorkloadError> {
        Ok(count_input(self, skeleton)? + grown.iter().sum::<u64>())
    }
}

/// Prompt tokens of a request input.
pub fn count_input<C: TokenCounter + ?Sized>(
    counter: &C,
    input: &PromptInput,
) -> Result<u64, WorkloadError> {
    match input {
        PromptInput::Messages(m) => counter.count_chat(m),
        PromptInput::Text(t) => counter.count_text(t),
        PromptInput::Batch { texts, .. } => texts
            .iter()
            .try_fold(0, |sum, t| Ok(sum + counter.count_text(t)?)),
    }
}

/// The simulator's rules from `src/sim/tokenizer.rs`; exact against a simulator target.
#[derive(Debug, Clone, Copy, Default)]
pub struct SimulatorCounter;

impl TokenCounter for SimulatorCounter {
    fn count_text(&self, text: &str) -> Result<u64, WorkloadError> {
        Ok(sim_tokenizer::count_text_tokens(text))
    }

    fn count_chat(&self, messages: &[ChatMessage]) -> Result<u64, WorkloadError> {
        Ok(sim_tokenizer::count_chat_tokens(
            messages.iter().map(|m| m.content.as_str()),
        ))
    }

    fn count_fragment(&self, text: &str) -> Result<u64, WorkloadError> {
        Ok(sim_tokenizer::count_text_tokens(text))
    }

    fn description(&self) -> String {
        "simulator tokenizer".to_string()
    }

    fn adds_one_token_per_word(
        &self,
        _api: Api,
        words: &[&'static str],
    ) -> Result<bool, WorkloadError> {
        // One token per whitespace-free run, whatever surrounds it.
        Ok(words
            .iter()
            .all(|w| !w.is_empty() && !w.contains(char::is_whitespace)))
    }
}

/// Resolves a tokenizer spec to a counter. `server` starts as the built-in table until
/// [`calibrate_server`] replaces it.
pub fn counter_for(
    spec: &TokenizerSpec,
    plan_dir: &Path,
) -> Result<Arc<dyn TokenCounter>, WorkloadError> {
    match spec.source {
        TokenizerSource::Simulator => Ok(Arc::new(SimulatorCounter)),
        TokenizerSource::Builtin | TokenizerSource::Server => Ok(Arc::new(HfCounter::builtin()?)),
        TokenizerSource::File => {
            let path = spec.path.as_deref().ok_or_else(|| {
                WorkloadError("tokenizer `source: file` needs `path` (a tokenizer.json)".into())
            })?;
            let template = spec.chat_template.as_deref().map(|t| resolve(plan_dir, t));
            Ok(Arc::new(HfCounter::from_files(
                &resolve(plan_dir, path),
                template.as_deref(),
            )?))
        }
    }
}

/// A plan path: absolute as is, relative to the plan's directory otherwise.
pub fn resolve(plan_dir: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        plan_dir.join(p)
    }
}
