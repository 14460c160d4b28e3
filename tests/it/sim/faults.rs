//! Injected faults: statuses, resets, disconnects, stalls, malformed events, seeded probability.

use super::*;

fn fault(kind: SimFaultKind) -> SimFault {
    SimFault {
        kind,
        probability: None,
        every: None,
        at: vec![1],
        status: None,
        seconds: None,
        after_tokens: None,
    }
}

async fn start_with_fault(fault: SimFault) -> (String, SimHandle) {
    start(SimConfig {
        faults: vec![fault],
        ..fast()
    })
    .await
}

#[tokio::test]
async fn fault_status_and_rate_limit() {
    let (base, handle) = start_with_fault(SimFault {
        status: Some(503),
        ..fault(SimFaultKind::Status)
    })
    .await;
    let response = http()
        .post(format!("{base}/v1/chat/completions"))
        .json_body(&stream_body())
        .send()
        .await
        .expect("response");
    assert_eq!(response.status(), 503);
    let body: Value = response.json_value().await.expect("error body");
    assert_eq!(body["error"]["code"], 503);
    // Request 2 is not listed: served normally.
    let (status, events, _) = stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert_eq!(status, 200);
    assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
    handle.shutdown().await;

    let (base, handle) = start_with_fault(SimFault {
        at: vec![],
        every: Some(2),
        seconds: Some(3.0),
        ..fault(SimFaultKind::RateLimit)
    })
    .await;
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let response = http()
            .post(format!("{base}/v1/completions"))
            .json_body(&json!({"prompt": "x", "max_tokens": 1}))
            .send()
            .await
            .expect("response");
        if response.status() == 429 {
            assert_eq!(
                response.headers().get("retry-after").map(|v| v.as_bytes()),
                Some(&b"3"[..])
            );
        }
        statuses.push(response.status().as_u16());
    }
    assert_eq!(statuses, vec![200, 429, 200, 429]);
    assert_eq!(handle.stats().faults_injected, 2);
    handle.shutdown().await;
}

#[tokio::test]
async fn fault_reset_before_headers() {
    let (base, handle) = start_with_fault(fault(SimFaultKind::ResetBeforeHeaders)).await;
    let result = http()
        .post(format!("{base}/v1/chat/completions"))
        .json_body(&stream_body())
        .send()
        .await;
    let err = result.expect_err("no response at all");
    assert!(!err.is_status() && !err.is_timeout(), "{err:?}");
    // The simulator still serves the next request.
    let (status, _, _) = stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert_eq!(status, 200);
    handle.shutdown().await;
}

#[tokio::test]
async fn fault_disconnect_mid_stream() {
    let (base, handle) = start_with_fault(SimFault {
        after_tokens: Some(3),
        ..fault(SimFaultKind::DisconnectMidStream)
    })
    .await;
    let (status, events, error) =
        stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert_eq!(status, 200);
    assert!(error.is_some(), "the body ends with an error");
    let content: String = parse(&events)
        .iter()
        .filter_map(|c| delta_text(c, "content"))
        .collect();
    assert_eq!(
        count_text_tokens(&content),
        3,
        "tokens before the cut arrive"
    );
    assert!(events.iter().all(|e| e.data != "[DONE]"));
    // The slot is released.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let stats = handle.stats();
    assert_eq!(
        (stats.running, stats.in_flight, stats.requests_aborted),
        (0, 0, 1)
    );
    handle.shutdown().await;
}

#[tokio::test]
async fn fault_stall_mid_stream() {
    let (base, handle) = start_with_fault(SimFault {
        seconds: Some(0.3),
        after_tokens: Some(4),
        ..fault(SimFaultKind::Stall)
    })
    .await;
    let (_, events, error) = stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert!(error.is_none());
    let gaps: Vec<Duration> = events.windows(2).map(|w| w[1].at - w[0].at).collect();
    let longest = gaps.iter().max().copied().unwrap_or_default();
    assert!(longest >= Duration::from_millis(280), "{gaps:?}");
    let content: String = parse(&events)
        .iter()
        .filter_map(|c| delta_text(c, "content"))
        .collect();
    assert_eq!(
        count_text_tokens(&content),
        8,
        "the stream resumes and completes"
    );
    handle.shutdown().await;
}

#[tokio::test]
async fn fault_malformed_event() {
    let (base, handle) = start_with_fault(fault(SimFaultKind::MalformedEvent)).await;
    let (_, events, _) = stream_request(&base, "/v1/chat/completions", stream_body()).await;
    let bad: Vec<&Event> = events
        .iter()
        .filter(|e| e.data != "[DONE]" && serde_json::from_str::<Value>(&e.data).is_err())
        .collect();
    assert_eq!(bad.len(), 1, "exactly one event is not JSON");
    assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
    handle.shutdown().await;
}

#[tokio::test]
async fn fault_missing_done() {
    let (base, handle) = start_with_fault(fault(SimFaultKind::MissingDone)).await;
    let (status, events, error) =
        stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert_eq!(status, 200);
    assert!(error.is_none(), "the stream ends cleanly");
    assert!(events.iter().all(|e| e.data != "[DONE]"));
    let chunks = parse(&events);
    assert_eq!(chunks[chunks.len() - 1]["usage"]["completion_tokens"], 8);
    handle.shutdown().await;
}

#[tokio::test]
async fn fault_error_object_in_200() {
    let (base, handle) = start_with_fault(SimFault {
        at: vec![1, 2],
        ..fault(SimFaultKind::ErrorObject)
    })
    .await;
    let (status, events, _) = stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert_eq!(status, 200);
    let first: Value = serde_json::from_str(&events[0].data).expect("json");
    assert!(first["error"]["message"].is_string());
    let response = http()
        .post(format!("{base}/v1/completions"))
        .json_body(&json!({"prompt": "x"}))
        .send()
        .await
        .expect("response");
    assert_eq!(response.status(), 200);
    let body: Value = response.json_value().await.expect("json");
    assert!(body["error"]["message"].is_string());
    assert!(body.get("choices").is_none());
    handle.shutdown().await;
}

#[tokio::test]
async fn fault_probability_is_seeded() {
    let config = |seed| SimConfig {
        seed: Some(seed),
        faults: vec![SimFault {
            at: vec![],
            probability: Some(0.5),
            ..fault(SimFaultKind::Status)
        }],
        ..fast()
    };
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (base, handle) = start(config(11)).await;
        let mut statuses = Vec::new();
        for _ in 0..24 {
            let response = http()
                .post(format!("{base}/v1/completions"))
                .json_body(&json!({"prompt": "x", "max_tokens": 1}))
                .send()
                .await
                .expect("response");
            statuses.push(response.status().as_u16());
        }
        handle.shutdown().await;
        runs.push(statuses);
    }
    assert_eq!(runs[0], runs[1]);
    let failures = runs[0].iter().filter(|s| **s == 500).count();
    assert!((4..=20).contains(&failures), "{:?}", runs[0]);
}
