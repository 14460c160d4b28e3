//! The run's records: one row per finished request (warmup and measured), with its phase,
//! window and shard, in closed Parquet parts (`requests/`). [`columns`] is the one list of
//! their columns; [`RecordsWriter`] writes one file in row groups; [`PartsWriter`] closes a
//! part every so many rows and lists it in the manifest; [`RecordsSet`] reads a run's parts
//! (or an older run's single `requests.parquet`) back; [`attach_records`] gives a report read
//! from disk every record of its phases.

mod attach;
mod columns;
mod parts;
mod read;
mod set;
mod write;

use serde::{Deserialize, Serialize};

use crate::client::RequestRecord;

pub use attach::attach_records;
pub use columns::{COLUMNS, Cell};
pub use parts::{DEFAULT_PART_ROWS, OnClosed, PartsWriter};
pub use read::{measured_by_phase, read_measured, read_records};
pub use set::{
    MANIFEST_FILE, Manifest, PARTS_DIR, PartEntry, RecordsSet, part_file_name, read_files,
    sha256_file,
};
pub use write::{ROW_GROUP_ROWS, RecordsWriter, write_records};

/// The file name of the per-request records in an older run directory (one file, footed at
/// the run's end); newer runs write [`PARTS_DIR`].
pub const REQUESTS_FILE: &str = "requests.parquet";

/// Which window of a phase a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Window {
    Warmup,
    Measured,
}

impl Window {
    pub fn as_str(self) -> &'static str {
        match self {
            Window::Warmup => "warmup",
            Window::Measured => "measured",
        }
    }
}

/// One row of `requests.parquet`: a request's record and where in the run it belongs.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordRow {
    pub phase: String,
    pub window: Window,
    /// Sharded runs: the shard index (`run --shard I/N`).
    pub shard: Option<u32>,
    pub record: RequestRecord,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{ErrorKind, OutputTokenSource, RequestError};

    fn full_record(index: u64) -> RequestRecord {
        RequestRecord {
            request_index: index,
            request_id: format!("run-{index}"),
            sent_request_id: Some(crate::client::uuid_for(&format!("run-{index}"))),
            trace_id: Some(format!("{:032x}", index + 1)),
            start_offset_ms: 1.25 * index as f64,
            scheduled_offset_ms: Some(1.0),
            send_lag_ms: Some(0.125),
            slot_wait_ms: Some(0.0625),
            time_to_first_output_ms: Some(10.5),
            ttft_ms: Some(11.0),
            e2e_ms: 100.0,
            generation_ms: Some(89.5),
            visible_generation_ms: Some(89.0),
            decode_tok_s: Some(80.0),
            mean_inter_token_latency_ms: Some(12.5),
            tpot_ms: Some(12.0),
            effective_prefill_tok_s: Some(6000.0),
            planned_context_tokens: Some(64),
            prompt_tokens: Some(63),
            cached_tokens: Some(0),
            output_tokens: Some(8),
            output_token_source: Some(OutputTokenSource::Counted),
            content_chunks: 8,
            reasoning_chunks: 2,
            max_inter_chunk_ms: Some(20.0),
            error: Some(RequestError {
                body: Some(r#"{"error":{"code":"overloaded"}}"#.to_string()),
                code: Some("overloaded".to_string()),
                error_type: Some("ServiceUnavailableError".to_string()),
                ..RequestError::new(ErrorKind::HttpStatus, Some(503), "busy")
            }),
            connection_retries: 1,
            new_connection: Some(true),
            connect_ms: Some(0.25),
            tls_ms: Some(1.5),
            session: Some(3),
            turn: Some(1),
            ttft_tool_ms: Some(9.5),
            tool_call_chunks: 5,
            server_queue_ms: Some(2.0),
            server_prompt_ms: Some(3.0),
            server_total_ms: Some(90.0),
            inputs: Some(4),
            model: Some("adapter-a".to_string()),
            cancelled_ms: Some(99.5),
            request_bytes: Some(70_123),
            images: 2,
            reasoning_tokens: Some(3),
            reasoning_token_source: Some(OutputTokenSource::Counted),
            spec_decoding: Some(crate::client::SpecDecoding {
                mean_acceptance_length: 2.5,
                draft_acceptance_rate: 0.5,
                acceptance_histogram: vec![1, 0, 1, 2],
                num_spec_steps: 4,
                num_accepted_draft_tokens: 6,
                num_draft_tokens: Some(12),
                num_spec_tokens: Some(3),
            }),
            archetype: Some("long-rag".to_string()),
            reply: Some("{\"a\": \"é\"}".to_string()),
            finish_reason: Some("length".to_string()),
            valid: Some(false),
            invalid_reason: Some("cut by max_tokens".to_string()),
            expected: Some("4".to_string()),
            correct: Some(true),
        }
    }

    #[test]
    fn every_field_survives_a_round_trip_across_row_groups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(REQUESTS_FILE);
        let rows: Vec<RecordRow> = (0..7)
            .map(|i| RecordRow {
                phase: format!("p{}", i % 2),
                window: if i == 0 {
                    Window::Warmup
                } else {
                    Window::Measured
                },
                shard: (i % 3 != 0).then_some(i as u32),
                // Every other row has every optional field unset.
                record: if i % 2 == 0 {
                    full_record(i)
                } else {
                    RequestRecord {
                        request_index: i,
                        e2e_ms: 5.0,
                        ..RequestRecord::default()
                    }
                },
            })
            .collect();
        let mut writer = RecordsWriter::with_group_rows(&path, 3).unwrap();
        for row in rows.clone() {
            writer.push(row).unwrap();
        }
        assert!(!path.exists(), "the file appears only once finished");
        assert_eq!(writer.finish().unwrap(), 7);
        let back: Vec<RecordRow> = read_records(&path)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(back, rows);
        let measured = read_measured(&path).unwrap();
        let names: Vec<&str> = measured.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["p1", "p0"]);
        assert_eq!(measured[0].1.len() + measured[1].1.len(), 6);
    }

    #[test]
    fn an_empty_run_still_writes_a_readable_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(REQUESTS_FILE);
        assert_eq!(write_records(&path, Vec::new()).unwrap(), 0);
        assert_eq!(read_records(&path).unwrap().count(), 0);
    }

    #[test]
    fn a_file_that_is_not_parquet_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(REQUESTS_FILE);
        std::fs::write(&path, b"not parquet").unwrap();
        let error = read_records(&path).err().unwrap();
        assert!(
            error.contains("requests.parquet: not a Parquet file"),
            "{error}"
        );
    }
}

#[cfg(test)]
mod docs_tests {
    use super::COLUMNS;

    /// The column table in docs/reports.md lists every column, in file order.
    #[test]
    fn the_docs_list_every_column_in_order() {
        let docs = include_str!("../../../../docs/reports.md");
        let documented: Vec<&str> = docs
            .lines()
            .skip_while(|l| !l.starts_with("### `requests/` parts"))
            .skip(1)
            .take_while(|l| !l.starts_with('#'))
            .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
            .collect();
        let defined: Vec<&str> = COLUMNS.iter().map(|c| c.name).collect();
        assert_eq!(documented, defined);
    }
}
