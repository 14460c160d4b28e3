//! CSV writer: one row per phase, or one row per request with `--requests` (RFC 4180).

use super::model::Report;
use crate::client::RequestRecord;
use crate::metrics::Distribution;

/// One row per phase, latencies in milliseconds.
pub fn render_phases(report: &Report) -> String {
    let mut header: Vec<String> = [
        "phase",
        "route",
        "target",
        "workload",
        "concurrency",
        "rate_rps",
        "recheck_of",
        "partial",
        "requests",
        "success",
        "errors",
        "elapsed_s",
        "output_tokens_per_second",
        "request_rate",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    const DISTS: [&str; 3] = ["ttft", "tpot", "e2e"];
    const STATS: [&str; 6] = ["p50", "p95", "p99", "min", "max", "mean"];
    for d in DISTS {
        for s in STATS {
            header.push(format!("{d}_{s}_ms"));
        }
    }
    header.extend(
        [
            "total_input_tokens",
            "total_output_tokens",
            "planned_prompt_tokens_mean",
            "actual_prompt_tokens_mean",
            "prompt_tokens_warning",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let mut out = String::new();
    push_row(&mut out, &header);
    for p in &report.phases {
        let s = &p.summary;
        let mut row = vec![
            p.phase.clone(),
            p.route.clone(),
            p.target.clone(),
            p.workload.clone(),
            opt(p.concurrency),
            opt(p.rate_rps),
            p.recheck_of.clone().unwrap_or_default(),
            p.partial.to_string(),
            s.requests.to_string(),
            s.success.to_string(),
            s.errors.to_string(),
            s.elapsed.to_string(),
            s.output_tokens_per_second.to_string(),
            s.request_rate.to_string(),
        ];
        for d in [&s.ttft, &s.tpot, &s.e2e] {
            row.extend(dist_ms(d.as_ref()));
        }
        row.push(s.total_input_tokens.to_string());
        row.push(s.total_output_tokens.to_string());
        row.push(opt(p.prompt_tokens.planned_mean));
        row.push(opt(p.prompt_tokens.actual_mean));
        row.push(p.prompt_tokens.warning.to_string());
        push_row(&mut out, &row);
    }
    out
}

fn dist_ms(d: Option<&Distribution>) -> Vec<String> {
    match d {
        Some(d) => [d.p50, d.p95, d.p99, d.min, d.max, d.mean]
            .iter()
            .map(|v| (v * 1000.0).to_string())
            .collect(),
        None => vec![String::new(); 6],
    }
}

/// One row per request of every phase, with seed 000's field names.
pub fn render_requests(report: &Report) -> String {
    let header = [
        "phase",
        "request_index",
        "request_id",
        "start_offset_ms",
        "scheduled_offset_ms",
        "send_lag_ms",
        "time_to_first_output_ms",
        "ttft_ms",
        "e2e_ms",
        "generation_ms",
        "visible_generation_ms",
        "decode_tok_s",
        "mean_inter_token_latency_ms",
        "tpot_ms",
        "effective_prefill_tok_s",
        "planned_context_tokens",
        "prompt_tokens",
        "cached_tokens",
        "output_tokens",
        "output_token_source",
        "content_chunks",
        "reasoning_chunks",
        "max_inter_chunk_ms",
        "error_kind",
        "error_status",
        "error_message",
    ];
    let mut out = String::new();
    push_row(
        &mut out,
        &header.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
    );
    for p in &report.phases {
        for r in &p.request_timings {
            push_row(&mut out, &request_row(&p.phase, r));
        }
    }
    out
}

fn request_row(phase: &str, r: &RequestRecord) -> Vec<String> {
    let enum_name = |v: serde_json::Result<serde_json::Value>| {
        v.ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    vec![
        phase.to_string(),
        r.request_index.to_string(),
        r.request_id.clone(),
        r.start_offset_ms.to_string(),
        opt(r.scheduled_offset_ms),
        opt(r.send_lag_ms),
        opt(r.time_to_first_output_ms),
        opt(r.ttft_ms),
        r.e2e_ms.to_string(),
        opt(r.generation_ms),
        opt(r.visible_generation_ms),
        opt(r.decode_tok_s),
        opt(r.mean_inter_token_latency_ms),
        opt(r.tpot_ms),
        opt(r.effective_prefill_tok_s),
        opt(r.planned_context_tokens),
        opt(r.prompt_tokens),
        opt(r.cached_tokens),
        opt(r.output_tokens),
        r.output_token_source
            .map(|s| enum_name(serde_json::to_value(s)))
            .unwrap_or_default(),
        r.content_chunks.to_string(),
        r.reasoning_chunks.to_string(),
        opt(r.max_inter_chunk_ms),
        r.error
            .as_ref()
            .map(|e| enum_name(serde_json::to_value(e.kind)))
            .unwrap_or_default(),
        r.error
            .as_ref()
            .and_then(|e| e.status)
            .map(|s| s.to_string())
            .unwrap_or_default(),
        r.error
            .as_ref()
            .map(|e| e.message.clone())
            .unwrap_or_default(),
    ]
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn push_row(out: &mut String, fields: &[String]) {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&quote(f));
    }
    out.push_str("\r\n");
}

/// RFC 4180: quote fields holding a comma, quote, CR or LF; double inner quotes.
pub(crate) fn quote(field: &str) -> String {
    if field.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quotes_per_rfc4180() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote("two\nlines"), "\"two\nlines\"");
    }
}
