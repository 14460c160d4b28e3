//! Small scored sets servebench writes itself (`dataset: {generate: copy | arithmetic |
//! json_extract, rows, seed}`), as JSONL with each row's `expected` answer, so a plan that
//! checks answers under load needs no download. The same seed gives the same rows on every
//! machine.

use rand::Rng;
use serde_json::json;

use super::synthetic::{Purpose, stream_rng};
use crate::plan::GeneratedSet;
use crate::sim::answers::{ARITHMETIC_LEAD, COPY_LEAD, JSON_LEAD};

/// Rows a generated set has unless the plan says.
pub const DEFAULT_ROWS: u32 = 100;

/// Plain, common words that tokenize alike in every vocabulary.
const WORDS: [&str; 24] = [
    "apple", "river", "stone", "green", "house", "light", "table", "water", "cloud", "bread",
    "music", "paper", "horse", "chair", "smile", "beach", "tiger", "lemon", "train", "glass",
    "honey", "piano", "zebra", "candle",
];
const CITIES: [&str; 8] = [
    "Paris", "Lima", "Oslo", "Cairo", "Tokyo", "Quito", "Dublin", "Nairobi",
];
const NAMES: [&str; 8] = ["Ana", "Bo", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana"];

/// The set's rows as JSONL text: `{"messages": [{role: user, content}], "expected"}` each.
pub fn jsonl(kind: GeneratedSet, rows: u32, seed: u64) -> String {
    let mut out = String::new();
    for i in 0..u64::from(rows) {
        let mut rng = stream_rng(seed, Purpose::Generated, i);
        let (prompt, expected) = match kind {
            GeneratedSet::Copy => copy_row(&mut rng),
            GeneratedSet::Arithmetic => arithmetic_row(&mut rng),
            GeneratedSet::JsonExtract => json_extract_row(&mut rng),
        };
        let row = json!({
            "messages": [{"role": "user", "content": prompt}],
            "expected": expected,
        });
        out.push_str(&row.to_string());
        out.push('\n');
    }
    out
}

fn pick<'a>(rng: &mut impl Rng, from: &[&'a str]) -> &'a str {
    from[rng.random_range(0..from.len())]
}

fn copy_row(rng: &mut impl Rng) -> (String, String) {
    let n = rng.random_range(2..=4);
    let words: Vec<&str> = (0..n).map(|_| pick(rng, &WORDS)).collect();
    let text = words.join(" ");
    (format!("{COPY_LEAD}{text}"), text)
}

fn arithmetic_row(rng: &mut impl Rng) -> (String, String) {
    let a: u32 = rng.random_range(2..100);
    let b: u32 = rng.random_range(2..100);
    (
        format!("{ARITHMETIC_LEAD}{a} + {b}? Answer with the number only."),
        (a + b).to_string(),
    )
}

fn json_extract_row(rng: &mut impl Rng) -> (String, String) {
    let city = pick(rng, &CITIES);
    let object = json!({"name": pick(rng, &NAMES), "city": city, "age": rng.random_range(18..90)});
    (format!("{JSON_LEAD}{object}"), city.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::answers::answer;

    #[test]
    fn sets_are_seeded_and_answer_themselves() {
        for kind in [
            GeneratedSet::Copy,
            GeneratedSet::Arithmetic,
            GeneratedSet::JsonExtract,
        ] {
            let text = jsonl(kind, 20, 4);
            assert_eq!(text, jsonl(kind, 20, 4));
            assert_ne!(text, jsonl(kind, 20, 5));
            assert_eq!(text.lines().count(), 20);
            for line in text.lines() {
                let row: serde_json::Value = serde_json::from_str(line).unwrap();
                let prompt = row["messages"][0]["content"].as_str().unwrap();
                assert_eq!(
                    answer(prompt).as_deref(),
                    row["expected"].as_str(),
                    "{line}"
                );
            }
        }
        assert_eq!(answer("hello"), None);
    }
}
