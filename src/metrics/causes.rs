//! Failed requests grouped by cause: one accumulator that [`super::summarize`] and
//! [`super::PhaseTally`] both feed, so the two give the same `errors_by_cause` whatever order
//! the records come in.

use std::collections::HashMap;

use super::ErrorCause;
use crate::client::{RequestError, RequestRecord};

/// How many characters of a message an example keeps.
pub const EXAMPLE_CHARS: usize = 300;

/// Counts per cause, and each cause's earliest failure.
#[derive(Debug, Clone, Default)]
pub struct CauseCounts {
    by_cause: HashMap<String, Seen>,
}

#[derive(Debug, Clone)]
struct Seen {
    count: u64,
    /// The example's `(request_index, message)`: the smallest wins, so arrival order does not
    /// matter.
    first: (u64, String),
    kind: crate::client::ErrorKind,
    status: Option<u16>,
}

impl CauseCounts {
    /// Count one failed record (a successful one is ignored).
    pub fn add(&mut self, record: &RequestRecord) {
        if let Some(error) = &record.error {
            self.add_error(record.request_index, error);
        }
    }

    fn add_error(&mut self, request_index: u64, error: &RequestError) {
        let earlier = |seen: &Seen| {
            (request_index, error.message.as_str()) < (seen.first.0, seen.first.1.as_str())
        };
        let cause = error.cause();
        match self.by_cause.get_mut(&cause) {
            Some(seen) => {
                seen.count += 1;
                if earlier(seen) {
                    seen.first = (request_index, error.message.clone());
                    seen.kind = error.kind;
                    seen.status = error.status;
                }
            }
            None => {
                self.by_cause.insert(
                    cause,
                    Seen {
                        count: 1,
                        first: (request_index, error.message.clone()),
                        kind: error.kind,
                        status: error.status,
                    },
                );
            }
        }
    }

    /// Every cause, most frequent first, then by cause.
    pub fn finish(&self) -> Vec<ErrorCause> {
        let mut out: Vec<ErrorCause> = self
            .by_cause
            .iter()
            .map(|(cause, seen)| ErrorCause {
                cause: cause.clone(),
                kind: seen.kind,
                status: seen.status,
                count: seen.count,
                example: example(&seen.first.1),
            })
            .collect();
        out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.cause.cmp(&b.cause)));
        out
    }
}

/// `errors_by_cause` of a set of records.
pub fn errors_by_cause(records: &[RequestRecord]) -> Vec<ErrorCause> {
    let mut counts = CauseCounts::default();
    for r in records {
        counts.add(r);
    }
    counts.finish()
}

/// A message cut to [`EXAMPLE_CHARS`] characters, `…` marking the cut.
fn example(message: &str) -> String {
    match message.char_indices().nth(EXAMPLE_CHARS) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ErrorKind;

    fn failed(index: u64, error: RequestError) -> RequestRecord {
        RequestRecord {
            request_index: index,
            error: Some(error),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn causes_are_counted_sorted_and_take_the_earliest_example() {
        let context = |message: &str| RequestError {
            body: Some("{}".into()),
            code: Some("context_length_exceeded".into()),
            error_type: Some("invalid_request_error".into()),
            ..RequestError::new(ErrorKind::HttpStatus, Some(400), message)
        };
        let records = vec![
            failed(5, context("late")),
            failed(2, RequestError::new(ErrorKind::IdleTimeout, None, "idle")),
            failed(3, context("early")),
            RequestRecord::default(),
            failed(9, context(&"x".repeat(400))),
            failed(1, RequestError::new(ErrorKind::Connect, None, "refused")),
        ];
        let want = errors_by_cause(&records);
        assert_eq!(
            want.iter()
                .map(|c| (c.cause.as_str(), c.count))
                .collect::<Vec<_>>(),
            [
                (
                    "HTTP 400 · invalid_request_error · context_length_exceeded",
                    3
                ),
                ("connect", 1),
                ("idle_timeout", 1),
            ]
        );
        assert_eq!(want[0].example, "early");
        assert_eq!(
            (want[0].kind, want[0].status),
            (ErrorKind::HttpStatus, Some(400))
        );
        // Any arrival order gives the same figures.
        let mut reversed = records.clone();
        reversed.reverse();
        assert_eq!(errors_by_cause(&reversed), want);
        assert!(errors_by_cause(&[RequestRecord::default()]).is_empty());
        assert_eq!(example(&"é".repeat(400)).chars().count(), EXAMPLE_CHARS + 1);
    }
}
