//! Unit tests of the token counters.

use super::*;
use crate::workload::ChatMessage;

#[test]
fn server_root_strips_v1() {
    assert_eq!(server_root("http://h:8000/v1"), "http://h:8000");
    assert_eq!(server_root("http://h:8000/v1/"), "http://h:8000");
    assert_eq!(server_root("http://h:8000"), "http://h:8000");
    assert_eq!(server_root("http://h/proxy/v1"), "http://h/proxy");
}

#[test]
fn overhead_split() {
    // fixed 10, per message 5: one message 15, three 25.
    assert_eq!(server::split_overhead(15, 25), (10, 5));
}

#[test]
fn builtin_counts_words_and_template() {
    let c = HfCounter::builtin().expect("builtin");
    assert_eq!(c.count_fragment(" the cat sat").expect("count"), 3);
    let msg = ChatMessage::new("user", "hello there");
    let empty = ChatMessage::new("user", String::new());
    let with = c.count_chat(&[msg]).expect("chat");
    let without = c.count_chat(&[empty]).expect("chat");
    assert_eq!(with - without, 2);
}
