//! The word list synthetic prompts are made of.
//!
//! Common short lowercase English words: with a leading space each is a single token in the
//! usual byte-level BPE vocabularies (GPT-2, cl100k, Llama 3, Qwen, SmolLM). Every counter
//! filters the list again at start-up and keeps only the words it counts as one token.

pub const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
    "been", "if", "more", "when", "will", "would", "who", "so", "no", "she", "other", "its",
    "may", "these", "what", "them", "than", "some", "him", "time", "into", "only", "do", "new",
    "about", "two", "also", "any", "first", "could", "then", "like", "made", "over", "such",
    "our", "after", "most", "well", "where", "how", "many", "people", "back", "good", "your",
    "way", "make", "each", "work", "year", "years", "because", "much", "very", "just", "even",
    "still", "through", "long", "world", "great", "those", "life", "day", "same", "under",
    "never", "own", "last", "while", "might", "down", "here", "should", "both", "found",
    "take", "place", "part", "three", "man", "old", "small", "before", "between", "last",
    "used", "see", "right", "little", "home", "state", "water", "high", "house", "name",
    "come", "came", "went", "give", "think", "know", "want", "look", "find", "tell", "ask",
    "seem", "feel", "try", "leave", "call", "keep", "let", "begin", "help", "talk", "turn",
    "start", "show", "hear", "play", "run", "move", "live", "hold", "bring", "write", "sit",
    "stand", "lose", "pay", "meet", "learn", "change", "lead", "watch", "follow", "stop",
    "speak", "read", "spend", "grow", "open", "walk", "win", "offer", "love", "buy", "wait",
    "serve", "die", "send", "build", "stay", "fall", "cut", "reach", "kill", "raise", "pass",
    "sell", "decide", "return", "explain", "hope", "carry", "break", "agree", "city", "town",
    "country", "family", "group", "problem", "hand", "side", "week", "company", "system",
    "program", "question", "number", "night", "point", "room", "money", "story", "fact",
    "month", "lot", "study", "book", "eye", "job", "word", "business", "issue", "kind",
    "head", "service", "friend", "father", "mother", "power", "hour", "game", "line", "end",
    "member", "law", "car", "school", "face", "others", "level", "office", "door", "health",
    "person", "art", "war", "history", "party", "result", "morning", "reason", "research",
    "girl", "guy", "moment", "air", "teacher", "force", "education", "food", "table", "tree",
    "river", "road", "field", "light", "sound", "music", "paper", "letter", "color", "market",
    "child", "church", "model", "plan", "order", "area", "field", "course", "voice", "heart",
    "mind", "body", "board", "black", "white", "red", "green", "blue", "long", "short", "big",
    "large", "young", "important", "public", "bad", "able", "late", "hard", "major", "better",
    "best", "free", "full", "true", "whole", "clear", "sure", "early", "real", "strong",
    "possible", "simple", "local", "social", "low", "far", "near", "next", "again", "always",
    "often", "together", "already", "almost", "enough", "quite", "ever", "soon", "far",
];
