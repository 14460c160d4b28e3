//! vLLM's own view of servebench's requests: the `llm_request` span it exports per finished
//! request to the test's OTLP receiver (`--otlp-traces-endpoint`, which every test's server
//! is started with), joined to the report's records by the trace id of their `traceparent`.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::real_otlp::Span;
use crate::real_support::{Checks, VLLM_MODEL, VllmServer};
use crate::real_vllm::records;

/// How long vLLM's exporter may take to send a finished request's span (it sends in batches,
/// every 5 s by default).
const SPAN_DEADLINE: Duration = Duration::from_secs(60);

/// vLLM's own view of each request: the `llm_request` span it exported to the test's OTLP
/// receiver carries the record's trace id (vLLM read the `traceparent`, and the span is its
/// child), and joins the record on its token counts and, where vLLM takes the `x-request-id`
/// (chat and the Messages API: `chatcmpl-<id>`; `/v1/responses` names its own), the request id.
pub async fn check_traces(checks: &mut Checks, server: &VllmServer, phases: &[Value]) {
    let joined = traced_records(checks, phases);
    let wanted: BTreeSet<String> = joined.iter().map(|(_, id, _)| id.clone()).collect();
    let spans = match server
        .traces
        .wait_for_traces("llm_request", &wanted, SPAN_DEADLINE)
        .await
    {
        Ok(spans) => spans,
        Err(missing) => {
            let received = server.traces.spans();
            let lost: Vec<String> = joined
                .iter()
                .filter(|(_, id, _)| missing.contains(id))
                .map(|(phase, id, r)| format!("{phase} {} (trace {id})", r["request_id"]))
                .collect();
            checks.check(false, || {
                format!(
                    "{} of {} records have no `llm_request` span with their trace id at the OTLP receiver after {SPAN_DEADLINE:?} ({} spans received, trace ids {:?}): {lost:?}",
                    lost.len(),
                    joined.len(),
                    received.len(),
                    received.iter().map(|s| &s.trace_id).collect::<BTreeSet<_>>(),
                )
            });
            return;
        }
    };
    for (phase, trace_id, r) in &joined {
        check_record_spans(checks, phase, trace_id, r, &spans[trace_id]);
    }
    let shared = spans.values().filter(|s| s.len() > 1).count();
    if let Some((_, trace_id, _)) = joined.first() {
        let example = &spans[trace_id][0];
        println!(
            "vLLM exported {} `llm_request` spans for {} records ({shared} trace ids with two or more); one: trace {} parent {} {}",
            spans.values().map(Vec::len).sum::<usize>(),
            joined.len(),
            example.trace_id,
            example.parent_span_id,
            Value::Object(example.attributes.clone())
        );
    }
}

/// Every record of the phases with its phase's name and trace id; one without a trace id
/// fails the check.
fn traced_records(checks: &mut Checks, phases: &[Value]) -> Vec<(String, String, Value)> {
    let mut joined = Vec::new();
    for phase in phases {
        let name = phase["phase"].as_str().unwrap_or("?").to_string();
        for r in records(phase) {
            match r["trace_id"].as_str() {
                Some(id) => joined.push((name.clone(), id.to_string(), r)),
                None => checks.check(false, || {
                    format!("{name}: a record without a trace id: {r}")
                }),
            }
        }
    }
    joined
}

/// One record's spans (`candidates`, those with its trace id): exactly one, joined to the
/// record on its token counts and request id, and the child of the record's `traceparent`.
fn check_record_spans(
    checks: &mut Checks,
    phase: &str,
    trace_id: &str,
    r: &Value,
    candidates: &[Span],
) {
    let sent_id = r["sent_request_id"].as_str().or(r["request_id"].as_str());
    let vllm_id = (phase != "responses-c2").then(|| format!("chatcmpl-{}", sent_id.unwrap_or("?")));
    // A warmup request has trace and request ids of its own: one span per trace id.
    checks.check(candidates.len() == 1, || {
        format!(
            "{phase} {}: {} spans carry trace {trace_id}",
            r["request_id"],
            candidates.len()
        )
    });
    let joins = candidates.iter().any(|s| {
        let a = &s.attributes;
        a["gen_ai.usage.prompt_tokens"] == r["prompt_tokens"]
            && a["gen_ai.usage.completion_tokens"] == r["output_tokens"]
            && vllm_id
                .as_ref()
                .is_none_or(|id| a["gen_ai.request.id"] == id.as_str())
    });
    checks.check(joins, || {
        format!(
            "{phase} {}: no span of trace {trace_id} joins it (want request id {vllm_id:?}, prompt tokens {}, output tokens {}): {:?}",
            r["request_id"],
            r["prompt_tokens"],
            r["output_tokens"],
            candidates.iter().map(|s| &s.attributes).collect::<Vec<_>>()
        )
    });
    checks.check(
        candidates
            .iter()
            .all(|s| s.parent_span_id.len() == 16 && s.span_id != s.parent_span_id),
        || {
            format!(
                "{phase} {}: a root span, not the traceparent's child: {candidates:?}",
                r["request_id"]
            )
        },
    );
}

/// vLLM exports its `llm_request` span when a request finishes, not when it is aborted: each
/// whole reply's trace id reaches the receiver, a cancelled stream's never does.
pub async fn check_cancelled_spans(checks: &mut Checks, server: &VllmServer, records: &[Value]) {
    let trace_ids = |cancelled: bool| -> BTreeSet<String> {
        records
            .iter()
            .filter(|r| r["cancelled_ms"].is_f64() == cancelled)
            .filter_map(|r| r["trace_id"].as_str().map(str::to_string))
            .collect()
    };
    let (mut wanted, cancelled) = (trace_ids(false), trace_ids(true));
    checks.check(wanted.len() == 4 && cancelled.len() == 4, || {
        format!(
            "cancel-c2: trace ids of {} whole and {} cancelled records",
            wanted.len(),
            cancelled.len()
        )
    });
    // The exporter sends spans in the order they end: once the span of a request sent after
    // the run is in, any span of a cancelled stream would be too.
    wanted.insert(send_marker_request(server).await);
    let spans = server
        .traces
        .wait_for_traces("llm_request", &wanted, SPAN_DEADLINE)
        .await;
    checks.check(spans.is_ok(), || {
        format!(
            "cancel-c2: no `llm_request` span after {SPAN_DEADLINE:?} for the trace ids {:?} (whole replies and the request sent after the run)",
            spans.as_ref().err()
        )
    });
    let exported: BTreeSet<String> = server
        .traces
        .spans()
        .into_iter()
        .map(|s| s.trace_id)
        .collect();
    let cancelled_exported: Vec<&String> = cancelled.intersection(&exported).collect();
    checks.check(cancelled_exported.is_empty(), || {
        format!("cancel-c2: vLLM exported spans for cancelled streams: {cancelled_exported:?}")
    });
}

/// One short chat request with a trace id of its own; that trace id.
async fn send_marker_request(server: &VllmServer) -> String {
    const MARKER: &str = "5e7ab0de000000000000000000000001";
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", server.base_url()))
        .header("traceparent", format!("00-{MARKER}-00f067aa0ba902b7-01"))
        .header("content-type", "application/json")
        .body(
            serde_json::json!({
            "model": VLLM_MODEL,
            "messages": [{"role": "user", "content": "Hello"}],
            "max_tokens": 1,
            })
            .to_string(),
        )
        .send()
        .await
        .expect("vLLM answers");
    assert!(response.status().is_success(), "{response:?}");
    MARKER.to_string()
}
