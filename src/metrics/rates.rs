//! Rates: requests per second over a window's starts, and SSE events estimated from chunks.

use crate::client::RequestRecord;

/// Requests per second between the first and the last start.
pub fn achieved_rate(records: &[RequestRecord]) -> Option<f64> {
    let first = records
        .iter()
        .map(|r| r.start_offset_ms)
        .fold(f64::INFINITY, f64::min);
    let last = records
        .iter()
        .map(|r| r.start_offset_ms)
        .fold(f64::NEG_INFINITY, f64::max);
    (records.len() > 1 && last > first).then(|| (records.len() - 1) as f64 / ((last - first) / 1e3))
}

/// SSE events of a set of requests, estimated the same way for any server: text chunks plus
/// three framing events (role, usage, `[DONE]`) per request.
pub fn phase_events(requests: u64, text_chunks: u64) -> u64 {
    text_chunks + 3 * requests
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn achieved_rate_is_measured_between_first_and_last_start() {
        let records: Vec<_> = (0..101)
            .map(|i| RequestRecord {
                start_offset_ms: i as f64 * 10.0,
                ..RequestRecord::default()
            })
            .collect();
        assert!((achieved_rate(&records).unwrap() - 100.0).abs() < 1e-9);
        assert_eq!(achieved_rate(&records[..1]), None);
    }
}
