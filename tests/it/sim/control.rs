//! Faults switched on and off over HTTP (`/sim/faults`) while the simulator serves.

use super::*;

#[tokio::test]
async fn faults_switch_on_and_off_over_http() {
    let (base, handle) = start(fast()).await;
    let control = format!("{base}/sim/faults");
    let (status, _, _) = stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert_eq!(status, 200);

    let on = http()
        .post(&control)
        .json_body(&json!({"kind": "status", "probability": 1.0, "status": 503}))
        .send()
        .await
        .expect("switch on");
    assert_eq!(on.status(), 200);
    let listed = http()
        .get(&control)
        .send()
        .await
        .unwrap()
        .json_value()
        .await
        .unwrap();
    assert_eq!(listed["faults"][0]["kind"], "status");
    for _ in 0..3 {
        let response = http()
            .post(format!("{base}/v1/chat/completions"))
            .json_body(&stream_body())
            .send()
            .await
            .expect("response");
        assert_eq!(response.status(), 503);
    }

    let off = http().delete(&control).send().await.expect("switch off");
    assert_eq!(off.status(), 200);
    let (status, events, _) = stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert_eq!(status, 200);
    assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
    assert_eq!(handle.stats().faults_injected, 3);
    handle.shutdown().await;
}

#[tokio::test]
async fn a_bad_rule_is_refused_with_the_reason() {
    let (base, handle) = start(fast()).await;
    let control = format!("{base}/sim/faults");
    let unknown = http()
        .post(&control)
        .json_body(&json!({"kind": "meltdown"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 400);
    let text = unknown.text().await.unwrap();
    assert!(text.contains("meltdown"), "{text}");
    let odds = http()
        .post(&control)
        .json_body(&json!([{"kind": "status", "probability": 2.0}]))
        .send()
        .await
        .unwrap();
    assert_eq!(odds.status(), 400);
    // Nothing was switched on by either.
    let (status, _, _) = stream_request(&base, "/v1/chat/completions", stream_body()).await;
    assert_eq!(status, 200);
    handle.shutdown().await;
}
