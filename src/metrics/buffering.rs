//! Whether something between client and server buffers the stream: a proxy that holds the
//! events back delivers them all at once at the end, so every TTFT becomes an end-to-end time.

use crate::client::RequestRecord;

/// Outputs shorter than this stream too briefly to tell buffered from fast.
const MIN_OUTPUT_TOKENS: u64 = 8;
/// Fewer streamed chunks than this say nothing about how they were spaced.
const MIN_CHUNKS: u64 = 4;
/// A stream counts as delivered at once when its first content came this close (as a share
/// of the whole request) to its end.
const COLLAPSED_SHARE: f64 = 0.1;
/// ... and its chunks came closer together than this on average: faster than any engine
/// decodes, so they were held back and released together.
const MAX_MEAN_GAP_MS: f64 = 0.5;
/// A stream this short end to end is too fast to judge.
const MIN_E2E_MS: f64 = 20.0;
/// At least this many judged requests before a phase is flagged.
const MIN_JUDGED: usize = 5;
/// Share of judged requests that must look buffered.
const FLAGGED_SHARE: f64 = 0.8;

/// The warning for a phase whose streams arrived in one piece at the end, or `None`.
pub fn buffering_warning(records: &[RequestRecord]) -> Option<String> {
    let judged: Vec<&RequestRecord> = records.iter().filter(|r| judgeable(r)).collect();
    if judged.len() < MIN_JUDGED {
        return None;
    }
    let collapsed = judged.iter().filter(|r| arrived_at_once(r)).count();
    if (collapsed as f64) < FLAGGED_SHARE * judged.len() as f64 {
        return None;
    }
    Some(format!(
        "streams arrive all at once at the end ({collapsed} of {} requests: first content within \
         10% of the end-to-end time): something in the path buffers the stream, so TTFT here is \
         an end-to-end time; behind nginx set `proxy_buffering off` (or have the server send \
         `X-Accel-Buffering: no`), and turn off response buffering in other proxies",
        judged.len()
    ))
}

/// A successful stream long enough, in tokens, chunks and time, to show its spacing.
fn judgeable(r: &RequestRecord) -> bool {
    r.is_ok()
        && r.ttft_ms.is_some()
        && r.output_tokens.is_some_and(|n| n >= MIN_OUTPUT_TOKENS)
        && r.content_chunks >= MIN_CHUNKS
        && r.e2e_ms >= MIN_E2E_MS
}

/// First content near the end and the chunks packed together: a long prefill followed by a
/// short but paced decode is not this.
fn arrived_at_once(r: &RequestRecord) -> bool {
    r.ttft_ms.is_some_and(|ttft| {
        let spread = r.e2e_ms - ttft;
        spread <= COLLAPSED_SHARE * r.e2e_ms
            && spread / (r.content_chunks - 1) as f64 <= MAX_MEAN_GAP_MS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ttft_ms: f64, e2e_ms: f64, output_tokens: u64) -> RequestRecord {
        RequestRecord {
            ttft_ms: Some(ttft_ms),
            e2e_ms,
            output_tokens: Some(output_tokens),
            content_chunks: output_tokens,
            ..RequestRecord::default()
        }
    }

    #[test]
    fn streams_delivered_at_the_end_are_flagged() {
        let records: Vec<_> = (0..10).map(|_| record(398.0, 400.0, 32)).collect();
        let warning = buffering_warning(&records).expect("buffered");
        assert!(warning.contains("10 of 10"), "{warning}");
        assert!(warning.contains("proxy_buffering off"), "{warning}");
        assert!(warning.contains("X-Accel-Buffering: no"), "{warning}");
    }

    #[test]
    fn streams_spread_over_their_generation_are_not() {
        let records: Vec<_> = (0..10).map(|_| record(20.0, 400.0, 32)).collect();
        assert_eq!(buffering_warning(&records), None);
        // A long prefill and a short but spaced decode is not buffering either.
        let records: Vec<_> = (0..10).map(|_| record(300.0, 400.0, 32)).collect();
        assert_eq!(buffering_warning(&records), None);
        // Nor is a prefill of a second before eight tokens paced 1.4 ms apart.
        let records: Vec<_> = (0..10).map(|_| record(990.0, 1000.0, 8)).collect();
        assert_eq!(buffering_warning(&records), None);
    }

    #[test]
    fn one_token_outputs_and_small_phases_are_not_judged() {
        // TTFT equals e2e for a one-token answer by nature.
        let records: Vec<_> = (0..50).map(|_| record(400.0, 400.0, 1)).collect();
        assert_eq!(buffering_warning(&records), None);
        let records: Vec<_> = (0..4).map(|_| record(398.0, 400.0, 32)).collect();
        assert_eq!(buffering_warning(&records), None);
        // A failed request or an instant stream says nothing.
        let mut failed = record(398.0, 400.0, 32);
        failed.error = Some(crate::client::RequestError::new(
            crate::client::ErrorKind::HttpStatus,
            Some(500),
            String::new(),
        ));
        let records: Vec<_> = (0..10).map(|_| failed.clone()).collect();
        assert_eq!(buffering_warning(&records), None);
        let records: Vec<_> = (0..10).map(|_| record(5.0, 5.0, 32)).collect();
        assert_eq!(buffering_warning(&records), None);
    }

    #[test]
    fn a_few_collapsed_streams_among_spread_ones_are_not_flagged() {
        let mut records: Vec<_> = (0..7).map(|_| record(20.0, 400.0, 32)).collect();
        records.extend((0..3).map(|_| record(398.0, 400.0, 32)));
        assert_eq!(buffering_warning(&records), None);
    }
}
