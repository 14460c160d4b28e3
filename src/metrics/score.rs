//! Scoring each reply against its row's `expected` answer, after the request (off the timing
//! path), and the phase's `accuracy` with its Wilson interval.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::binomial::wilson_interval;
use crate::client::RequestRecord;
use crate::plan::score::Score;

/// A workload's scorer, its pattern compiled once.
pub struct Scorer {
    score: Score,
    regex: Option<regex::Regex>,
}

impl Scorer {
    pub fn new(score: &Score) -> Result<Self, String> {
        let regex =
            match score {
                Score::Regex(pattern) => Some(regex::Regex::new(pattern).map_err(|e| {
                    format!("score.regex: {}", crate::plan::score::regex_problem(&e))
                })?),
                _ => None,
            };
        Ok(Scorer {
            score: score.clone(),
            regex,
        })
    }

    /// Mark a finished request's record correct or not; failed and cancelled requests, and
    /// records without a kept reply or an expected answer, are left unscored.
    pub fn score(&self, record: &mut RequestRecord) {
        if !record.is_ok() {
            return;
        }
        let (Some(reply), Some(expected)) = (&record.reply, &record.expected) else {
            return;
        };
        record.correct = Some(self.is_correct(reply, expected));
    }

    /// Whether `reply` answers `expected` under this scorer.
    pub fn is_correct(&self, reply: &str, expected: &str) -> bool {
        match &self.score {
            Score::Exact => reply.trim() == expected.trim(),
            Score::Normalized => normalize(reply) == normalize(expected),
            Score::Regex(_) => self
                .regex
                .as_ref()
                .and_then(|re| re.captures(reply))
                .and_then(|c| c.get(1).or_else(|| c.get(0)))
                .is_some_and(|m| normalize(m.as_str()) == normalize(expected)),
            Score::Number(n) => last_number(reply)
                .zip(expected.trim().parse::<f64>().ok())
                .is_some_and(|(got, want)| (got - want).abs() <= n.tolerance),
            Score::JsonField(path) => serde_json::from_str::<serde_json::Value>(reply.trim())
                .ok()
                .and_then(|v| field(&v, path).map(text_of))
                .is_some_and(|got| normalize(&got) == normalize(expected)),
            Score::Choice => first_choice(reply)
                .is_some_and(|c| expected.trim().eq_ignore_ascii_case(&c.to_string())),
        }
    }
}

/// Lower case, punctuation dropped, whitespace collapsed.
pub fn normalize(text: &str) -> String {
    let kept: String = text
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c.is_whitespace() {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                ' '
            }
        })
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The last number written in `text` (`-3`, `4.5`, `1,024`).
fn last_number(text: &str) -> Option<f64> {
    let cleaned = text.replace(',', "");
    let mut last = None;
    let mut current = String::new();
    for c in cleaned.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_digit()
            || (c == '.' && !current.is_empty())
            || (c == '-' && current.is_empty())
        {
            current.push(c);
        } else {
            if let Ok(n) = current.trim_end_matches('.').parse::<f64>() {
                last = Some(n);
            }
            current.clear();
        }
    }
    last
}

/// The value at `a.b.0` or `/a/b/0`.
fn field<'a>(value: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    if path.starts_with('/') {
        return value.pointer(path);
    }
    path.split('.').try_fold(value, |v, key| match v {
        serde_json::Value::Array(items) => items.get(key.parse::<usize>().ok()?),
        _ => v.get(key),
    })
}

fn text_of(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The first option letter A–J standing alone (`B`, `(B)`, `B.`, `Answer: B`).
fn first_choice(text: &str) -> Option<char> {
    let chars: Vec<char> = text.chars().collect();
    (0..chars.len()).find_map(|i| {
        let c = chars[i];
        let alone = |j: Option<&char>| j.is_none_or(|c| !c.is_alphanumeric());
        let before = if i == 0 { None } else { chars.get(i - 1) };
        (('A'..='J').contains(&c) && alone(before) && alone(chars.get(i + 1))).then_some(c)
    })
}

/// A phase's scored replies.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Accuracy {
    /// Successful replies scored against their row's `expected`.
    pub scored: u64,
    pub correct: u64,
    /// `correct / scored`.
    pub accuracy: f64,
    /// Wilson score 95% interval of `accuracy`.
    pub accuracy_ci95: [f64; 2],
}

/// Running counts of scored replies.
#[derive(Debug, Clone, Default)]
pub struct ScoreTally {
    scored: u64,
    correct: u64,
}

impl ScoreTally {
    pub fn add(&mut self, r: &RequestRecord) {
        if let Some(correct) = r.correct.filter(|_| r.is_ok()) {
            self.scored += 1;
            self.correct += u64::from(correct);
        }
    }

    /// The phase's accuracy; `None` when nothing was scored.
    pub fn finish(&self) -> Option<Accuracy> {
        (self.scored > 0).then(|| Accuracy {
            scored: self.scored,
            correct: self.correct,
            accuracy: self.correct as f64 / self.scored as f64,
            accuracy_ci95: wilson_interval(self.correct as f64, self.scored as f64),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::score::NumberScore;

    fn scorer(score: Score) -> Scorer {
        Scorer::new(&score).unwrap()
    }

    #[test]
    fn each_scorer_reads_the_answer_it_names() {
        assert!(scorer(Score::Exact).is_correct(" 42\n", "42"));
        assert!(!scorer(Score::Exact).is_correct("42.", "42"));
        assert!(scorer(Score::Normalized).is_correct("Apple, River!", "apple river"));
        let re = scorer(Score::Regex(r"answer is (\w+)".into()));
        assert!(re.is_correct("I think the answer is Paris.", "paris"));
        assert!(!re.is_correct("Paris", "paris"));
        let number = scorer(Score::Number(NumberScore { tolerance: 0.01 }));
        assert!(number.is_correct("37 + 45 = 82", "82"));
        assert!(number.is_correct("It is 1,024.004.", "1024"));
        assert!(!number.is_correct("83", "82"));
        let json = scorer(Score::JsonField("a.b.1".into()));
        assert!(json.is_correct(r#"{"a": {"b": [0, "Oslo"]}}"#, "oslo"));
        assert!(scorer(Score::JsonField("/a".into())).is_correct(r#"{"a": 3}"#, "3"));
        assert!(!json.is_correct("not json", "oslo"));
        let choice = scorer(Score::Choice);
        assert!(choice.is_correct("Answer: (C) because", "C"));
        assert!(!choice.is_correct("Because A is wrong, B", "B"));
    }

    #[test]
    fn accuracy_carries_its_interval() {
        let mut tally = ScoreTally::default();
        for i in 0..10 {
            tally.add(&RequestRecord {
                correct: Some(i < 9),
                ..RequestRecord::default()
            });
        }
        let a = tally.finish().unwrap();
        assert_eq!((a.scored, a.correct), (10, 9));
        assert!(a.accuracy_ci95[0] < 0.9 && a.accuracy_ci95[1] > 0.9);
    }
}
