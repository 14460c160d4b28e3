//! What the peers' result files share once read: one phase's figures under servebench's
//! figure paths and units, each with its definition note, and the rows they become.

use std::path::Path;

use serde_json::{Value, json};

use super::super::HistoryError;
use super::super::deployment::deployment_sha256_of;
use super::super::record::{self, ErrorRow, FigureRow, PhaseRow, RunRow, RunRows, RunSource};
use super::super::series::Conditions;

/// A peer tool's result format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerFormat {
    /// AIPerf's `profile_export_aiperf.json`.
    Aiperf,
    /// `vllm bench serve --save-result` JSON.
    VllmBenchServe,
}

impl PeerFormat {
    pub fn describe(self) -> &'static str {
        match self {
            PeerFormat::Aiperf => "an AIPerf export",
            PeerFormat::VllmBenchServe => "a vLLM bench serve result",
        }
    }

    fn source(self) -> RunSource {
        match self {
            PeerFormat::Aiperf => RunSource::Aiperf,
            PeerFormat::VllmBenchServe => RunSource::VllmBenchServe,
        }
    }
}

/// Which peer format `doc` is, from the fields each documents.
pub fn detect(doc: &Value) -> Option<PeerFormat> {
    let obj = doc.as_object()?;
    let metrics = obj
        .get("records")
        .or(obj.get("metrics"))
        .and_then(Value::as_object)
        .unwrap_or(obj);
    let aiperf = obj.contains_key("aiperf_version")
        || obj.contains_key("input_config")
        || metrics
            .get("request_latency")
            .is_some_and(|m| m.get("unit").is_some());
    let vllm = [
        "completed",
        "duration",
        "mean_ttft_ms",
        "request_throughput",
    ]
    .iter()
    .all(|k| obj.contains_key(*k));
    match (aiperf, vllm) {
        (true, false) => Some(PeerFormat::Aiperf),
        (false, true) => Some(PeerFormat::VllmBenchServe),
        _ => None,
    }
}

/// One peer run, read: figures in servebench's paths and units.
#[derive(Debug, Clone, Default)]
pub struct PeerSummary {
    /// The tool and its version, as the file states them.
    pub tool: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// The file says the run was stopped early.
    pub cancelled: bool,
    pub model: Option<String>,
    pub concurrency: Option<i64>,
    pub rate_rps: Option<f64>,
    pub requests: i64,
    pub errors: i64,
    pub elapsed_s: f64,
    pub figures: Vec<FigureRow>,
    pub errors_by_cause: Vec<ErrorRow>,
    /// The input's own settings worth keeping (its command line, endpoint).
    pub settings: Value,
}

impl PeerSummary {
    /// Add `figure` = `value × scale` when `value` is a finite number.
    pub fn figure(&mut self, figure: &str, value: Option<f64>, scale: f64, note: Option<&str>) {
        if let Some(v) = value.map(|v| v * scale).filter(|v| v.is_finite()) {
            self.figures.push(FigureRow {
                figure: figure.to_string(),
                value: v,
                interval: None,
                note: note.map(str::to_string),
            });
        }
    }

    /// The counts' figures (`requests`, `errors`, `success`, `error_rate`), once both are known.
    pub fn count_figures(&mut self) {
        let (requests, errors) = (self.requests as f64, self.errors as f64);
        self.figure("requests", Some(requests), 1.0, None);
        self.figure("errors", Some(errors), 1.0, None);
        self.figure("success", Some(requests - errors), 1.0, None);
        if self.requests > 0 {
            self.figure("error_rate", Some(errors / requests), 1.0, None);
        }
    }
}

/// The series an import joins and the file it came from.
pub struct Identity<'a> {
    pub plan: &'a str,
    pub phase: &'a str,
    pub target: &'a str,
    pub started_at: &'a str,
    pub file_sha256: &'a str,
    pub path: &'a Path,
}

/// The rows of one peer run.
pub fn rows(
    format: PeerFormat,
    summary: PeerSummary,
    id: Identity<'_>,
) -> Result<RunRows, HistoryError> {
    let started = chrono::DateTime::parse_from_rfc3339(id.started_at)
        .map_err(|_| HistoryError::File {
            path: id.path.to_path_buf(),
            message: format!("start time {:?} is not RFC 3339", id.started_at),
        })?
        .with_timezone(&chrono::Utc);
    let run_id = format!(
        "{}-{}-{}",
        id.plan,
        format.source().name(),
        started.format("%Y%m%dT%H%M%SZ")
    );
    let labels = serde_json::Map::new();
    let run = RunRow {
        run_id,
        record_key: record::sha256_hex(
            format!(
                "{}|{}|{}|{}|{}",
                id.file_sha256, id.plan, id.phase, id.target, id.started_at
            )
            .as_bytes(),
        ),
        plan: id.plan.to_string(),
        source: format.source(),
        started_at: id.started_at.to_string(),
        finished_at: summary.finished_at.clone(),
        complete: !summary.cancelled,
        stop_reason: summary.cancelled.then(|| "stopped early".to_string()),
        tool: summary.tool.clone(),
        hostname: None,
        plan_sha256: None,
        report_path: Some(
            std::path::absolute(id.path)
                .unwrap_or_else(|_| id.path.to_path_buf())
                .display()
                .to_string(),
        ),
        report_sha256: Some(id.file_sha256.to_string()),
        records_path: None,
        records_sha256: None,
        metadata: Value::Object(labels.clone()).to_string(),
        provenance: Some(json!({ "imported": summary.settings }).to_string()),
        history: None,
    };
    let phase = PhaseRow {
        phase: id.phase.to_string(),
        target: id.target.to_string(),
        route: id.target.to_string(),
        workload: String::new(),
        concurrency: summary.concurrency,
        rate_rps: summary.rate_rps,
        recheck_of: None,
        started_at: id.started_at.to_string(),
        partial: summary.cancelled,
        work_sha256: None,
        deployment_sha256: deployment_sha256_of(
            &Value::Object(labels),
            id.target,
            summary.model.as_deref(),
            false,
        ),
        trust: None,
        trust_reasons: "[]".to_string(),
        requests: summary.requests,
        errors: summary.errors,
        elapsed_s: summary.elapsed_s,
        conditions: Conditions::default(),
        split: None,
        figures: summary.figures,
        errors_by_cause: summary.errors_by_cause,
    };
    Ok(RunRows {
        run,
        phases: vec![phase],
        searches: Vec::new(),
    })
}

/// A number at `key` of `obj`, also when written as a string (`"inf"` is not a number).
pub fn number(obj: &Value, key: &str) -> Option<f64> {
    match obj.get(key)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse::<f64>().ok().filter(|v| v.is_finite()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_told_apart_by_their_documented_fields() {
        let aiperf = json!({"aiperf_version": "0.13.0", "request_latency": {"unit": "ms"}});
        let older_aiperf = json!({"request_latency": {"unit": "ms", "avg": 1.0}});
        let vllm = json!({"completed": 1, "duration": 2.0, "mean_ttft_ms": 3.0,
                          "request_throughput": 0.5});
        assert_eq!(detect(&aiperf), Some(PeerFormat::Aiperf));
        assert_eq!(detect(&older_aiperf), Some(PeerFormat::Aiperf));
        assert_eq!(detect(&vllm), Some(PeerFormat::VllmBenchServe));
        assert_eq!(detect(&json!({"schema": "servebench.report/v1"})), None);
        assert_eq!(detect(&json!([1, 2])), None);
    }

    #[test]
    fn numbers_read_as_numbers_or_numeric_strings_but_not_infinity() {
        let doc = json!({"a": 1.5, "b": "2.5", "c": "inf", "d": null});
        assert_eq!(number(&doc, "a"), Some(1.5));
        assert_eq!(number(&doc, "b"), Some(2.5));
        assert_eq!(number(&doc, "c"), None);
        assert_eq!(number(&doc, "d"), None);
        assert_eq!(number(&doc, "e"), None);
    }
}
