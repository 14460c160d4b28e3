//! The simulator's tokenizer, documented so that prompts can be built to an exact size.
//!
//! - Text: every maximal run of non-whitespace characters is one token; whitespace is free.
//! - Chat: each message costs its content's tokens plus [`MESSAGE_OVERHEAD_TOKENS`] (role
//!   markers), and the generation prompt adds [`GENERATION_PROMPT_TOKENS`], the way a real chat
//!   template adds tens of tokens to a short conversation.
//! - Token ids (for `/tokenize` and the prefix cache): a word's id is [`token_id`] (a stable
//!   FNV-1a hash, at least [`FIRST_WORD_ID`]); chat messages are framed as
//!   `[IM_START, ROLE, content…, IM_END, NEWLINE]` and the generation prompt is
//!   `[IM_START, ASSISTANT, NEWLINE]`, so [`chat_token_ids`] has exactly
//!   [`count_chat_tokens`] ids.

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

/// Special token ids used by the chat framing; word ids start at [`FIRST_WORD_ID`].
pub const IM_START_ID: u32 = 1;
pub const ROLE_ID: u32 = 2;
pub const IM_END_ID: u32 = 3;
pub const NEWLINE_ID: u32 = 4;
pub const ASSISTANT_ID: u32 = 5;
pub const FIRST_WORD_ID: u32 = 16;

/// Stable id of one whitespace-free word.
pub fn token_id(word: &str) -> u32 {
    let hash = crate::hash::fnv1a_64(word.as_bytes());
    let span = u64::from(i32::MAX as u32 - FIRST_WORD_ID);
    FIRST_WORD_ID + (hash % span) as u32
}

/// Token ids of plain text, one per [`count_text_tokens`] token.
pub fn text_token_ids(text: &str) -> impl Iterator<Item = u32> + '_ {
    text.split_whitespace().map(token_id)
}

/// Token ids of a chat request whose messages have these contents (generation prompt included).
pub fn chat_token_ids<'a>(contents: impl IntoIterator<Item = &'a str>) -> Vec<u32> {
    let mut ids = Vec::new();
    for content in contents {
        ids.extend([IM_START_ID, ROLE_ID]);
        ids.extend(text_token_ids(content));
        ids.extend([IM_END_ID, NEWLINE_ID]);
    }
    ids.extend([IM_START_ID, ASSISTANT_ID, NEWLINE_ID]);
    ids
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

    #[test]
    fn ids_match_counts() {
        let contents = ["You are terse.", "  say   hello\n to me "];
        assert_eq!(
            chat_token_ids(contents).len() as u64,
            count_chat_tokens(contents)
        );
        assert_eq!(text_token_ids("a b  c").count(), 3);
        assert_eq!(token_id("hello"), token_id("hello"));
        assert_ne!(token_id("hello"), token_id("world"));
        assert!(token_id("x") >= FIRST_WORD_ID);
    }
}
