//! The simulator's tokenizer, documented so that prompts can be built to an exact size.
//!
//! - Text: every maximal run of non-whitespace characters is one token; whitespace is free.
//! - Chat: each message costs its content's tokens plus [`MESSAGE_OVERHEAD_TOKENS`] (role
//!   markers), and the generation prompt adds [`GENERATION_PROMPT_TOKENS`], the way a real chat
//!   template adds tens of tokens to a short conversation.

/// Tokens a chat template adds per message.
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;
/// Tokens the assistant generation prompt adds once per chat request.
pub const GENERATION_PROMPT_TOKENS: u64 = 3;

/// Tokens in plain text.
pub fn count_text_tokens(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// Tokens in a chat request whose messages have these contents.
pub fn count_chat_tokens<'a>(contents: impl IntoIterator<Item = &'a str>) -> u64 {
    contents
        .into_iter()
        .map(|c| count_text_tokens(c) + MESSAGE_OVERHEAD_TOKENS)
        .sum::<u64>()
        + GENERATION_PROMPT_TOKENS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_whitespace_separated_runs() {
        assert_eq!(count_text_tokens(""), 0);
        assert_eq!(count_text_tokens("  a  bc\td\n"), 3);
    }

    #[test]
    fn chat_adds_template_overhead() {
        assert_eq!(
            count_chat_tokens(["one two", "three"]),
            3 + 2 * MESSAGE_OVERHEAD_TOKENS + GENERATION_PROMPT_TOKENS
        );
    }
}
