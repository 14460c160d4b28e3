//! Mooncake-format trace replay: arrival times and prompts built from shared hash blocks.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::WorkloadError;
use super::dataset::read_file;

/// Mooncake's block size: tokens per hash id.
pub const DEFAULT_BLOCK_TOKENS: u32 = 512;

/// One trace line: `{timestamp (ms), input_length, output_length, hash_ids}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TraceEntry {
    pub timestamp: f64,
    pub input_length: u64,
    pub output_length: u64,
    #[serde(default)]
    pub hash_ids: Vec<u64>,
}

/// A parsed trace, sorted by timestamp, with its schedule relative to the first arrival.
pub struct TraceSource {
    pub sha256: String,
    pub entries: Vec<TraceEntry>,
    /// Send time of each entry: `(timestamp - first timestamp) × time_scale`.
    pub schedule: Vec<Duration>,
    pub block_tokens: u32,
}

pub fn load(
    path: &Path,
    time_scale: f64,
    block_tokens: Option<u32>,
) -> Result<TraceSource, WorkloadError> {
    if !(time_scale.is_finite() && time_scale > 0.0) {
        return Err(WorkloadError(format!(
            "{}: time_scale must be a positive number, got {time_scale}",
            path.display()
        )));
    }
    let block_tokens = block_tokens.unwrap_or(DEFAULT_BLOCK_TOKENS);
    if block_tokens == 0 {
        return Err(WorkloadError(format!(
            "{}: block_tokens must be at least 1",
            path.display()
        )));
    }
    let (bytes, sha256) = read_file(path)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| WorkloadError(format!("{}: not UTF-8: {e}", path.display())))?;
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |msg: String| WorkloadError(format!("{}:{}: {msg}", path.display(), i + 1));
        let entry: TraceEntry = serde_json::from_str(line).map_err(|e| {
            at(format!(
                "expected {{timestamp, input_length, output_length, hash_ids}}: {e}"
            ))
        })?;
        if !(entry.timestamp.is_finite() && entry.timestamp >= 0.0) {
            return Err(at("timestamp must be a non-negative number of ms".into()));
        }
        if entry.input_length == 0 || entry.output_length == 0 {
            return Err(at(
                "input_length and output_length must be at least 1".into()
            ));
        }
        entries.push(entry);
    }
    if entries.is_empty() {
        return Err(WorkloadError(format!(
            "{}: the trace has no entries",
            path.display()
        )));
    }
    // Stable: entries with equal timestamps keep file order.
    entries.sort_by(|a, b| a.timestamp.total_cmp(&b.timestamp));
    let first = entries[0].timestamp;
    let schedule = entries
        .iter()
        .map(|e| Duration::from_secs_f64((e.timestamp - first) * time_scale / 1000.0))
        .collect();
    Ok(TraceSource {
        sha256,
        entries,
        schedule,
        block_tokens,
    })
}

impl TraceSource {
    /// Time from the first arrival to the last.
    pub fn span(&self) -> Duration {
        self.schedule.last().copied().unwrap_or_default()
    }
}
