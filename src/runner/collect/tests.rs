use std::path::Path;

use super::*;
use crate::client::{ErrorKind, RequestError};
use crate::metrics::{Distribution, Distributions, PhaseSummary, SessionSummary, TransportSummary};
use crate::plan::Slo;
use crate::workload::PromptTokenCheck;

/// Varied records: ties, errors, server timings, send lags, sessions of four turns with tool
/// calls, some fields missing.
fn records(n: u64) -> Vec<RequestRecord> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let jitter = (state % 10_000) as f64 / 100.0;
            let mut r = RequestRecord {
                request_index: i,
                start_offset_ms: i as f64 * 0.5,
                send_lag_ms: (i % 3 != 0).then_some(jitter / 10.0),
                slot_wait_ms: (i % 3 == 1).then_some(jitter / 40.0),
                ttft_ms: Some(if i % 5 == 0 { 20.0 } else { 10.0 + jitter }),
                e2e_ms: 50.0 + jitter * 2.0,
                tpot_ms: (i % 7 != 0).then_some(2.0 + jitter / 50.0),
                mean_inter_token_latency_ms: Some(2.0 + jitter / 50.0),
                max_inter_chunk_ms: Some(jitter),
                decode_tok_s: Some(500.0 - jitter),
                time_to_first_output_ms: Some(10.0 + jitter),
                planned_context_tokens: Some(64),
                prompt_tokens: Some(60 + i % 9),
                output_tokens: Some(16 + i % 4),
                cached_tokens: (i % 3 != 2).then_some(i % 5),
                content_chunks: 16,
                new_connection: Some(i % 11 == 0),
                server_prompt_ms: (i % 4 == 0).then_some(jitter / 3.0),
                server_total_ms: (i % 4 == 0).then_some(jitter),
                server_queue_ms: (i % 4 == 0).then_some(jitter / 7.0),
                session: Some(i / 4),
                turn: Some(i % 4),
                ttft_tool_ms: (i % 3 == 1).then_some(5.0 + jitter),
                tool_call_chunks: if i % 3 == 1 { 1 + i % 6 } else { 0 },
                request_bytes: Some(400 + i % 97),
                images: i % 2,
                reasoning_tokens: (i % 5 != 4).then_some(i % 6),
                spec_decoding: (i % 2 == 0).then(|| crate::client::SpecDecoding {
                    mean_acceptance_length: 1.0 + (i % 4) as f64 / 3.0,
                    draft_acceptance_rate: (i % 4) as f64 / 9.0,
                    acceptance_histogram: vec![1, 1, 1, 0],
                    num_spec_steps: 3,
                    num_accepted_draft_tokens: i % 4,
                    num_draft_tokens: Some(9),
                    num_spec_tokens: Some(3),
                }),
                ..RequestRecord::default()
            };
            if i % 97 == 0 {
                r.error = Some(RequestError::new(
                    ErrorKind::TotalTimeout,
                    None,
                    "timed out".to_string(),
                ));
            } else if i % 89 == 0 {
                // Causes with several messages each: the example must not depend on order.
                r.error = Some(RequestError {
                    body: Some(format!("{{\"error\":{{\"message\":\"{i}\"}}}}")),
                    code: Some(["context_length_exceeded", "rate"][(i % 2) as usize].into()),
                    error_type: Some("invalid_request_error".into()),
                    ..RequestError::new(ErrorKind::HttpStatus, Some(400), format!("too long {i}"))
                });
            } else if i % 83 == 0 {
                r.error = Some(RequestError {
                    body: Some(String::new()),
                    ..RequestError::new(ErrorKind::HttpStatus, Some(401), format!("no key {i}"))
                });
            }
            r
        })
        .collect()
}

fn collect(records: &[RequestRecord], keep: usize, dir: &Path, slo: Option<Slo>) -> Measured {
    let mut collector = PhaseCollector::new(CollectSettings {
        keep,
        seed: 7,
        dir: dir.to_path_buf(),
        label: "phase one".to_string(),
        slo,
    });
    // Arrival order is completion order, not request order.
    for r in records.iter().rev() {
        collector.add(r.clone()).unwrap();
    }
    collector.finish(PercentileMethod::Linear, true).unwrap()
}

/// Order statistics bit for bit; the mean (a streamed sum) to rounding.
fn same_distribution(got: &mut Option<Distribution>, want: &Option<Distribution>, what: &str) {
    match (got.as_mut(), want) {
        (Some(g), Some(w)) => {
            assert!(
                (g.mean - w.mean).abs() <= 1e-12 * w.mean.abs().max(1.0),
                "{what}: mean {} vs {}",
                g.mean,
                w.mean
            );
            g.mean = w.mean;
        }
        (None, None) => {}
        _ => panic!("{what}: one side missing"),
    }
}

/// [`same_distribution`] for every figure.
fn same_figures(got: &mut Distributions, want: &Distributions, what: &str) {
    for figure in Figure::all() {
        let mut g = got.get(figure).copied();
        same_distribution(&mut g, &want.get(figure).copied(), figure.name());
        got.set(figure, g);
    }
    assert_eq!(got, want, "{what}");
}

/// The error causes of the records, in the summary's order.
fn same_error_causes(want: &PhaseSummary) {
    let causes: Vec<&str> = want
        .errors_by_cause
        .iter()
        .map(|c| c.cause.as_str())
        .collect();
    assert_eq!(
        causes,
        [
            "HTTP 401 · empty body",
            "total_timeout",
            "HTTP 400 · invalid_request_error · context_length_exceeded",
            "HTTP 400 · invalid_request_error · rate",
        ],
        "{:?}",
        want.errors_by_cause
    );
}

/// The transport summary tallied in arrival order against the one over the records: equal,
/// but for the split's means up to rounding.
fn same_transport(mut got_transport: TransportSummary, mut want_transport: TransportSummary) {
    let (g, w) = (
        got_transport.server_timing_gap.as_mut().unwrap(),
        want_transport.server_timing_gap.as_mut().unwrap(),
    );
    // Means summed in arrival order versus record order: equal up to rounding.
    if let (Some(gs), Some(ws)) = (g.split.as_mut(), w.split.as_ref()) {
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        assert_eq!(gs.requests, ws.requests);
        for (a, b) in [
            (&mut gs.connect_ms, ws.connect_ms),
            (&mut gs.tls_ms, ws.tls_ms),
            (&mut gs.server_prefill_ms, ws.server_prefill_ms),
            (&mut gs.server_decode_ms, ws.server_decode_ms),
            (&mut gs.frontend_network_ms, ws.frontend_network_ms),
            (&mut gs.e2e_ms, ws.e2e_ms),
        ] {
            assert!(close(*a, b), "split {a} vs {b}");
            *a = b;
        }
        for (got, want, what) in [
            (&mut gs.client_queue_ms, ws.client_queue_ms, "client queue"),
            (&mut gs.server_queue_ms, ws.server_queue_ms, "server queue"),
        ] {
            if let (Some(a), Some(b)) = (got.as_mut(), want) {
                assert!(close(*a, b), "{what} {a} vs {b}");
                *a = b;
            }
        }
    }
    assert_eq!(got_transport, want_transport);
}

#[test]
fn a_sampled_window_gives_the_full_windows_figures() {
    let dir = tempfile::tempdir().unwrap();
    let all = records(20_000);
    let slo: Slo = serde_json::from_value(serde_json::json!({"ttft": {"max": "50ms"}})).unwrap();
    let want = crate::metrics::summarize(&all, PercentileMethod::Linear, Some(&slo));
    let Measured::Sampled { sample, figures } = collect(&all, 50, dir.path(), Some(slo)) else {
        panic!("20,000 records with keep 50 are sampled");
    };
    assert_eq!(sample.len(), 50);
    assert!(
        sample
            .windows(2)
            .all(|w| w[0].request_index < w[1].request_index)
    );
    let mut got: PhaseSummary = figures.summary.clone();
    same_figures(&mut got.figures, &want.figures, "summary");
    assert_eq!(got, want);
    let ttft = want.distribution(Figure::Ttft).unwrap();
    assert!(ttft.ci95.unwrap().p99.is_some());
    // Every figure of the table had values, so each one's slot was compared.
    for figure in Figure::all() {
        let d = want.distribution(figure);
        assert!(d.is_some_and(|d| d.samples > 0), "{}", figure.name());
    }
    same_error_causes(&want);
    same_transport(
        figures.transport.clone(),
        crate::metrics::transport(&all, PercentileMethod::Linear, true),
    );
    let lags: Vec<f64> = all.iter().filter_map(|r| r.send_lag_ms).collect();
    let mut lag = figures.summary.distribution(Figure::SendLag).copied();
    let want_lag = crate::metrics::distribution(&lags, PercentileMethod::Linear);
    same_distribution(&mut lag, &want_lag, "lag");
    assert_eq!(lag, want_lag);
    assert_eq!(figures.achieved_rate, crate::metrics::achieved_rate(&all));
    let check = figures.prompt.check(0.1);
    let want_check = PromptTokenCheck::from_requests(
        all.iter()
            .map(|r| (r.planned_context_tokens, r.prompt_tokens)),
        0.1,
    );
    assert!((check.actual_mean.unwrap() - want_check.actual_mean.unwrap()).abs() < 1e-9);
    // The column directory is gone.
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_window_within_the_bound_keeps_every_record_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let all = records(300);
    let Measured::All(kept) = collect(&all, 300, dir.path(), None) else {
        panic!("300 records with keep 300 are all kept");
    };
    assert_eq!(kept, all);
}

#[test]
fn the_sample_is_seeded() {
    let dir = tempfile::tempdir().unwrap();
    let all = records(2_000);
    let indexes = |c: Measured| match c {
        Measured::Sampled { sample, .. } => {
            sample.iter().map(|r| r.request_index).collect::<Vec<_>>()
        }
        Measured::All(_) | Measured::Stated { .. } => panic!("sampled"),
    };
    let a = indexes(collect(&all, 100, dir.path(), None));
    let b = indexes(collect(&all, 100, dir.path(), None));
    assert_eq!(a, b);
    assert_eq!(a.len(), 100);
    // Spread over the window, not its first records.
    assert!(a.iter().any(|&i| i > 1_000));
}

/// The sessions' figures of every record, compared with a sampled window's: order statistics
/// bit for bit, means to rounding when the arrival order differs.
fn same_sessions(got: &SessionSummary, want: &SessionSummary) {
    let mut got = got.clone();
    assert_eq!(got.turns.len(), want.turns.len());
    for (g, w) in got.turns.iter_mut().zip(&want.turns) {
        same_figures(&mut g.figures, &w.figures, "turn");
    }
    assert_eq!(&got, want);
}

#[test]
fn a_sampled_windows_session_figures_cover_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let all = records(20_000);
    let sessions = |records: &[RequestRecord]| {
        let tally = crate::metrics::tally_records(records, PercentileMethod::Linear, None, true);
        tally.sessions.expect("sessions")
    };
    let want = sessions(&all);
    assert_eq!(want.sessions, 5_000);
    assert_eq!(want.turns.len(), 4);
    let per_turn: u64 = want.turns.iter().map(|t| t.requests).sum();
    assert_eq!(per_turn, 20_000);
    for turn in &want.turns {
        // Every figure sessions give by turn had values in every turn.
        for spec in crate::metrics::turn_figures() {
            let d = turn.figures.get(spec.figure);
            assert!(d.is_some_and(|d| d.samples > 0), "{}", spec.name);
        }
    }

    // Arrival order is the reverse of request order: means differ by rounding only.
    let Measured::Sampled { sample, figures } = collect(&all, 50, dir.path(), None) else {
        panic!("sampled");
    };
    same_sessions(figures.sessions.as_ref().expect("sessions"), &want);
    // Not the sample's figures: those cover 50 requests.
    let of_sample = sessions(&sample);
    assert_ne!(of_sample.turns, want.turns);

    // In request order the streamed sums add in the same order: every bit equal.
    let mut collector = PhaseCollector::new(CollectSettings {
        keep: 50,
        seed: 7,
        dir: dir.path().to_path_buf(),
        label: "in order".to_string(),
        slo: None,
    });
    for r in &all {
        collector.add(r.clone()).unwrap();
    }
    let Measured::Sampled { figures, .. } =
        collector.finish(PercentileMethod::Linear, true).unwrap()
    else {
        panic!("sampled");
    };
    assert_eq!(figures.sessions.as_ref(), Some(&want));
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}
