//! vLLM's `bench serve --save-result` JSON: `completed`, `failed`, `duration`,
//! `request_throughput`, `output_throughput`, totals, and per latency (`ttft`, `tpot`, `itl`,
//! `e2el`) `mean_…_ms`, `median_…_ms`, `std_…_ms` and `pNN_…_ms` for each
//! `--metric-percentiles` value; `date` (`%Y%m%d-%H%M%S`), `model_id`, `max_concurrency`.

use serde_json::Value;

use super::peer::{PeerSummary, number};

/// vLLM's latency, the servebench figure it becomes, and how the definitions differ. vLLM's
/// ITL (every gap between chunks pooled) has no servebench figure and is not imported.
const LATENCIES: [(&str, &str, Option<&str>); 3] = [
    (
        "ttft",
        "ttft",
        Some(
            "vLLM's TTFT: request start to the first streamed chunk with text; with a reasoning model that may be reasoning text, which servebench's ttft excludes",
        ),
    ),
    (
        "tpot",
        "tpot",
        Some("vLLM's TPOT: (latency − TTFT) / (output tokens − 1), as servebench's tpot"),
    ),
    ("e2el", "e2e", None),
];

/// vLLM's statistic and servebench's.
const STATS: [(&str, &str); 4] = [
    ("median", "p50"),
    ("p95", "p95"),
    ("p99", "p99"),
    ("mean", "mean"),
];

const THROUGHPUT_NOTE: &str = "vLLM divides by the benchmark's wall time (first send to last response), as servebench does, but its sends follow its own schedule";

/// Read a vLLM bench serve result.
pub fn summary(doc: &Value) -> Result<PeerSummary, String> {
    let completed =
        number(doc, "completed").ok_or("no `completed` count: not a vLLM bench serve result")?;
    let failed = number(doc, "failed").unwrap_or(0.0);
    let mut summary = PeerSummary {
        tool: "vllm bench serve".to_string(),
        started_at: doc.get("date").and_then(Value::as_str).and_then(date),
        finished_at: None,
        cancelled: false,
        model: doc
            .get("model_id")
            .and_then(Value::as_str)
            .map(str::to_string),
        concurrency: doc.get("max_concurrency").and_then(Value::as_i64),
        rate_rps: number(doc, "request_rate"),
        requests: (completed + failed) as i64,
        errors: failed as i64,
        elapsed_s: number(doc, "duration").unwrap_or(0.0),
        settings: serde_json::json!({
            "backend": doc.get("backend"),
            "model_id": doc.get("model_id"),
            "num_prompts": doc.get("num_prompts"),
            "request_rate": doc.get("request_rate"),
            "burstiness": doc.get("burstiness"),
            "max_concurrency": doc.get("max_concurrency"),
        }),
        ..PeerSummary::default()
    };
    for (theirs, ours, note) in LATENCIES {
        for (their_stat, our_stat) in STATS {
            summary.figure(
                &format!("{ours}.{our_stat}"),
                number(doc, &format!("{their_stat}_{theirs}_ms")),
                1e-3,
                note,
            );
        }
    }
    summary.figure(
        "output_tokens_per_second",
        number(doc, "output_throughput"),
        1.0,
        Some(THROUGHPUT_NOTE),
    );
    summary.figure(
        "request_rate",
        number(doc, "request_throughput"),
        1.0,
        Some(THROUGHPUT_NOTE),
    );
    summary.figure(
        "total_input_tokens",
        number(doc, "total_input_tokens"),
        1.0,
        None,
    );
    summary.figure(
        "total_output_tokens",
        number(doc, "total_output_tokens"),
        1.0,
        None,
    );
    summary.figure("elapsed", number(doc, "duration"), 1.0, None);
    summary.count_figures();
    Ok(summary)
}

/// vLLM's `date` (`20250101-120000`, the benchmark machine's local time, read as UTC), or
/// an RFC 3339 time.
fn date(text: &str) -> Option<String> {
    if chrono::DateTime::parse_from_rfc3339(text).is_ok() {
        return Some(text.to_string());
    }
    chrono::NaiveDateTime::parse_from_str(text, "%Y%m%d-%H%M%S")
        .ok()
        .map(|t| {
            t.and_utc()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        })
}
