//! Trace replay: arrival times and token counts from a Mooncake JSONL trace (prompts built
//! from its shared hash blocks), an Azure LLM inference trace CSV or a BurstGPT CSV.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::WorkloadError;
use super::dataset::read_file;
use crate::plan::TraceFormat;

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
#[derive(Debug)]
pub struct TraceSource {
    pub sha256: String,
    pub entries: Vec<TraceEntry>,
    /// Send time of each entry: `(timestamp - first timestamp) × time_scale`.
    pub schedule: Vec<Duration>,
    pub block_tokens: u32,
}

pub fn load(
    path: &Path,
    format: TraceFormat,
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
    let mut entries = match format {
        TraceFormat::Mooncake => mooncake(path, text)?,
        TraceFormat::Azure | TraceFormat::Burstgpt => csv_entries(path, text, format)?,
    };
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

fn mooncake(path: &Path, text: &str) -> Result<Vec<TraceEntry>, WorkloadError> {
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
    Ok(entries)
}

/// The columns a CSV trace format needs: arrival time, prompt tokens, output tokens.
fn csv_columns(format: TraceFormat) -> [&'static str; 3] {
    match format {
        TraceFormat::Azure => ["TIMESTAMP", "ContextTokens", "GeneratedTokens"],
        _ => ["Timestamp", "Request tokens", "Response tokens"],
    }
}

/// An Azure or BurstGPT CSV trace. Rows with no prompt or no output tokens (BurstGPT records
/// failed requests with 0 response tokens) cannot be replayed as generations: they are
/// skipped and counted in a warning.
fn csv_entries(
    path: &Path,
    text: &str,
    format: TraceFormat,
) -> Result<Vec<TraceEntry>, WorkloadError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let wanted = csv_columns(format);
    let index = column_indexes(path, &mut reader, format)?;
    let mut entries = Vec::new();
    let mut skipped = 0u64;
    let mut first_time: Option<chrono::NaiveDateTime> = None;
    for (row, record) in reader.records().enumerate() {
        // Line 1 is the header.
        let at = |msg: String| WorkloadError(format!("{}:{}: {msg}", path.display(), row + 2));
        let record = record.map_err(|e| at(e.to_string()))?;
        let field = |i: usize| record.get(index[i]).unwrap_or("");
        let count = |i: usize| {
            let text = field(i);
            text.parse::<f64>()
                .ok()
                .filter(|n| n.is_finite() && *n >= 0.0 && n.fract() == 0.0)
                .map(|n| n as u64)
                .ok_or_else(|| {
                    at(format!(
                        "`{}` must be a whole number, found {text:?}",
                        wanted[i]
                    ))
                })
        };
        let (input_length, output_length) = (count(1)?, count(2)?);
        let timestamp = row_timestamp_ms(format, field(0), &mut first_time).map_err(at)?;
        if input_length == 0 || output_length == 0 {
            skipped += 1;
            continue;
        }
        entries.push(TraceEntry {
            timestamp,
            input_length,
            output_length,
            hash_ids: Vec::new(),
        });
    }
    if skipped > 0 {
        eprintln!(
            "warning: {}: skipped {skipped} row(s) with 0 prompt or 0 output tokens (failed \
             requests cannot be replayed as generations)",
            path.display()
        );
    }
    Ok(entries)
}

/// Where the format's columns are in the CSV's header.
fn column_indexes(
    path: &Path,
    reader: &mut csv::Reader<&[u8]>,
    format: TraceFormat,
) -> Result<[usize; 3], WorkloadError> {
    let wanted = csv_columns(format);
    let headers = reader
        .headers()
        .map_err(|e| WorkloadError(format!("{}: no CSV header: {e}", path.display())))?;
    let mut index = [0usize; 3];
    for (slot, name) in index.iter_mut().zip(wanted) {
        *slot = headers.iter().position(|h| h == name).ok_or_else(|| {
            WorkloadError(format!(
                "{}: no `{name}` column; a {format:?} trace has {}",
                path.display(),
                wanted.join(", ")
            ))
        })?;
    }
    Ok(index)
}

/// A row's arrival in ms: Azure's date and time from the first row's (`first_time`), or
/// BurstGPT's seconds.
fn row_timestamp_ms(
    format: TraceFormat,
    text: &str,
    first_time: &mut Option<chrono::NaiveDateTime>,
) -> Result<f64, String> {
    match format {
        TraceFormat::Azure => {
            let time = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
                .map_err(|_| {
                    format!(
                        "`TIMESTAMP` must read like 2023-11-16 18:15:46.6805900, found {text:?}"
                    )
                })?;
            let first = *first_time.get_or_insert(time);
            // Milliseconds from the first row; an earlier row gives a negative offset, which
            // the load's sort places first.
            Ok((time - first).num_microseconds().unwrap_or(i64::MAX) as f64 / 1000.0)
        }
        _ => {
            let seconds = text
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .ok_or_else(|| {
                    format!("`Timestamp` must be a non-negative number of seconds, found {text:?}")
                })?;
            Ok(seconds * 1000.0)
        }
    }
}

impl TraceSource {
    /// Time from the first arrival to the last.
    pub fn span(&self) -> Duration {
        self.schedule.last().copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.csv");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn azure_rows_become_millisecond_offsets_from_the_first() {
        let (_dir, path) = write(
            "TIMESTAMP,ContextTokens,GeneratedTokens\n\
             2023-11-16 18:15:47.1805900,100,7\n\
             2023-11-16 18:15:46.6805900,374,44\n",
        );
        let trace = load(&path, TraceFormat::Azure, 2.0, None).unwrap();
        let lengths: Vec<(u64, u64)> = trace
            .entries
            .iter()
            .map(|e| (e.input_length, e.output_length))
            .collect();
        // Sorted by time: the earlier second row first, the other 500 ms later, doubled.
        assert_eq!(lengths, [(374, 44), (100, 7)]);
        assert_eq!(
            trace.schedule,
            [Duration::ZERO, Duration::from_millis(1000)]
        );
    }

    #[test]
    fn burstgpt_seconds_are_read_and_failed_rows_skipped() {
        let (_dir, path) = write(
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
             5,ChatGPT,472,18,490,Conversation log\n\
             5.3,ChatGPT,417,0,417,Conversation log\n\
             5.75,GPT-4,68,42,110,API log\n",
        );
        let trace = load(&path, TraceFormat::Burstgpt, 1.0, None).unwrap();
        assert_eq!(trace.entries.len(), 2);
        assert_eq!(trace.schedule[1], Duration::from_millis(750));
        assert_eq!(trace.entries[1].input_length, 68);
    }

    #[test]
    fn csv_problems_name_the_file_line_and_column() {
        let (_dir, path) = write("TIMESTAMP,ContextTokens\n2023-11-16 18:15:46.1,3\n");
        let err = load(&path, TraceFormat::Azure, 1.0, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no `GeneratedTokens` column"), "{err}");
        let (_dir, path) = write(
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,3,4\nyesterday,3,4\n",
        );
        let err = load(&path, TraceFormat::Azure, 1.0, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("trace.csv:3:") && err.contains("TIMESTAMP"),
            "{err}"
        );
        let (_dir, path) = write(
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,m,12.5,3,15,API log\n",
        );
        let err = load(&path, TraceFormat::Burstgpt, 1.0, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("trace.csv:2:") && err.contains("Request tokens"),
            "{err}"
        );
    }
}
