//! AIPerf's JSON export (`profile_export_aiperf.json`): each metric an object with its
//! `unit` and statistics (`avg`, `min`, `max`, `p50`, `p95`, `p99`, …), at the top level
//! (or under `records` in some versions), plus `start_time`, `end_time`, `was_cancelled`,
//! `error_summary` and `input_config`.

use serde_json::Value;

use super::super::record::ErrorRow;
use super::peer::{PeerSummary, number};

/// AIPerf's metric, the servebench figure it becomes, the scale to servebench's unit, and how
/// the definitions differ (`None`: the same).
const METRICS: [(&str, &str, f64, Option<&str>); 5] = [
    (
        "time_to_first_token",
        "ttft",
        1e-3,
        Some(
            "AIPerf's TTFT: request start to the first response carrying a token; with a reasoning model that may be a reasoning token, which servebench's ttft excludes",
        ),
    ),
    ("request_latency", "e2e", 1e-3, None),
    (
        "inter_token_latency",
        "tpot",
        1e-3,
        Some("AIPerf's ITL: (request latency − TTFT) / (output tokens − 1), as servebench's tpot"),
    ),
    ("input_sequence_length", "input_tokens", 1.0, None),
    ("output_sequence_length", "output_tokens", 1.0, None),
];

/// AIPerf's statistic and servebench's.
const STATS: [(&str, &str); 6] = [
    ("p50", "p50"),
    ("p95", "p95"),
    ("p99", "p99"),
    ("min", "min"),
    ("max", "max"),
    ("avg", "mean"),
];

const THROUGHPUT_NOTE: &str = "AIPerf divides by its benchmark duration (the profiling phase), servebench by first request start to last request end";

/// Read an AIPerf export.
pub fn summary(doc: &Value) -> Result<PeerSummary, String> {
    let metrics = doc
        .get("records")
        .or(doc.get("metrics"))
        .filter(|m| m.is_object())
        .unwrap_or(doc);
    let avg = |name: &str| metrics.get(name).and_then(|m| number(m, "avg"));
    let counted =
        avg("request_count").ok_or("no `request_count` metric: not an AIPerf profile export")?;
    let errors = avg("error_request_count").unwrap_or(0.0);
    // Newer exports count successes and errors together; older ones only successes.
    let requests = avg("completed_request_count").unwrap_or(counted + errors);
    let version = doc
        .get("aiperf_version")
        .and_then(Value::as_str)
        .map_or("aiperf".to_string(), |v| format!("aiperf {v}"));
    let config = doc.get("input_config").cloned().unwrap_or(Value::Null);
    let mut summary = PeerSummary {
        tool: version,
        started_at: doc.get("start_time").and_then(Value::as_str).map(as_utc),
        finished_at: doc.get("end_time").and_then(Value::as_str).map(as_utc),
        cancelled: doc
            .get("was_cancelled")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        model: config
            .pointer("/endpoint/model_names/0")
            .and_then(Value::as_str)
            .map(str::to_string),
        concurrency: config
            .pointer("/loadgen/concurrency")
            .and_then(Value::as_i64),
        rate_rps: config
            .pointer("/loadgen/request_rate")
            .and_then(Value::as_f64),
        requests: requests as i64,
        errors: errors as i64,
        elapsed_s: avg("benchmark_duration").unwrap_or(0.0),
        settings: serde_json::json!({
            "cli_command": config.get("cli_command"),
            "endpoint": config.get("endpoint"),
            "loadgen": config.get("loadgen"),
        }),
        ..PeerSummary::default()
    };
    add_figures(&mut summary, metrics);
    summary.errors_by_cause = error_rows(doc);
    Ok(summary)
}

/// Each metric's statistics, then the throughputs and totals, as servebench figures.
fn add_figures(summary: &mut PeerSummary, metrics: &Value) {
    let avg = |name: &str| metrics.get(name).and_then(|m| number(m, "avg"));
    for (metric, figure, scale, note) in METRICS {
        let Some(stats) = metrics.get(metric) else {
            continue;
        };
        for (theirs, ours) in STATS {
            summary.figure(
                &format!("{figure}.{ours}"),
                number(stats, theirs),
                scale,
                note,
            );
        }
    }
    summary.figure(
        "output_tokens_per_second",
        avg("output_token_throughput"),
        1.0,
        Some(THROUGHPUT_NOTE),
    );
    summary.figure(
        "request_rate",
        avg("request_throughput"),
        1.0,
        Some(THROUGHPUT_NOTE),
    );
    summary.figure("total_input_tokens", avg("total_isl"), 1.0, None);
    summary.figure("total_output_tokens", avg("total_osl"), 1.0, None);
    summary.figure(
        "elapsed",
        avg("benchmark_duration"),
        1.0,
        Some(THROUGHPUT_NOTE),
    );
    summary.count_figures();
}

/// `error_summary`'s entries, one row per cause.
fn error_rows(doc: &Value) -> Vec<ErrorRow> {
    doc.get("error_summary")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let details = e.get("error_details")?;
            let kind = details
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("error");
            let status = details.get("code").and_then(Value::as_i64);
            let message = details.get("message").and_then(Value::as_str).unwrap_or("");
            Some(ErrorRow {
                cause: match status {
                    Some(code) => format!("HTTP {code} · {kind}"),
                    None => kind.to_string(),
                },
                kind: kind.to_string(),
                status,
                count: e.get("count").and_then(Value::as_i64).unwrap_or(0),
                example: message.chars().take(300).collect(),
            })
        })
        .collect()
}

/// AIPerf writes local ISO 8601 times without an offset; they are read as UTC.
fn as_utc(text: &str) -> String {
    if chrono::DateTime::parse_from_rfc3339(text).is_ok() {
        return text.to_string();
    }
    match chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f") {
        Ok(t) => t
            .and_utc()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        Err(_) => text.to_string(),
    }
}
