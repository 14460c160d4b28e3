//! An OTLP trace receiver for the real-engine tests: `tests/real/otlp_receiver.py` on
//! loopback (gRPC, the protocol vLLM's exporter speaks by default), and the spans it wrote
//! read back from its JSON-lines file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::real_support::{ChildProcess, repo_path};

/// One exported span as the receiver wrote it.
#[derive(Debug, Clone, Deserialize)]
pub struct Span {
    /// 32 lower-case hex digits.
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    pub attributes: Map<String, Value>,
}

/// The receiver process and the file its spans go to.
pub struct OtlpReceiver {
    _process: ChildProcess,
    spans: PathBuf,
    _dir: tempfile::TempDir,
    /// `http://127.0.0.1:PORT`, for `--otlp-traces-endpoint`.
    pub endpoint: String,
}

impl OtlpReceiver {
    /// Start the receiver with `python` (a venv holding grpcio and opentelemetry-proto).
    pub async fn start(python: &Path) -> OtlpReceiver {
        let dir = tempfile::tempdir().expect("temp dir");
        let spans = dir.path().join("spans.jsonl");
        let mut command = Command::new(python);
        command
            .arg(repo_path("tests/real/otlp_receiver.py"))
            .args(["--host", "127.0.0.1", "--port", "0", "--out"])
            .arg(&spans)
            .arg("--exit-on-stdin-eof");
        let mut process = ChildProcess::spawn("otlp-receiver", command, true);
        let endpoint = process.listening_root_within(Duration::from_secs(60)).await;
        OtlpReceiver {
            _process: process,
            spans,
            _dir: dir,
            endpoint,
        }
    }

    /// Every span received so far (each line is flushed whole; an unfinished last one waits
    /// for the next read).
    pub fn spans(&self) -> Vec<Span> {
        let text = std::fs::read_to_string(&self.spans).unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// The spans named `name` by trace id, once every one of `trace_ids` has one, polling the
    /// file until `within` has passed (the exporter sends in batches, every 5 s by default).
    /// At the deadline: the trace ids still missing.
    pub async fn wait_for_traces(
        &self,
        name: &str,
        trace_ids: &BTreeSet<String>,
        within: Duration,
    ) -> Result<BTreeMap<String, Vec<Span>>, BTreeSet<String>> {
        let deadline = Instant::now() + within;
        loop {
            let mut by_trace: BTreeMap<String, Vec<Span>> = BTreeMap::new();
            for span in self.spans().into_iter().filter(|s| s.name == name) {
                by_trace
                    .entry(span.trace_id.clone())
                    .or_default()
                    .push(span);
            }
            let missing: BTreeSet<String> = trace_ids
                .iter()
                .filter(|id| !by_trace.contains_key(*id))
                .cloned()
                .collect();
            if missing.is_empty() {
                return Ok(by_trace);
            }
            if Instant::now() >= deadline {
                return Err(missing);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}
