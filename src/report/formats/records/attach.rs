//! Readers that need every record (merge, compare's bootstrap) take them from the
//! `requests.parquet` beside a report.json when there is one, since report.json may hold
//! only a sample of a large phase's records.

use std::collections::HashSet;
use std::path::Path;

use crate::report::Report;

use super::{REQUESTS_FILE, read_measured};

/// Replace each phase's `request_timings` with its measured records from the
/// `requests.parquet` beside `report_path`. A phase is replaced only when the file holds
/// exactly its `summary.requests` records, every one report.json holds among them, and its
/// name is unique in the report; otherwise it keeps what report.json has. Returns the names
/// of the phases replaced (none when there is no file).
pub fn attach_records(report: &mut Report, report_path: &Path) -> Result<Vec<String>, String> {
    let path = report_path.with_file_name(REQUESTS_FILE);
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let mut replaced = Vec::new();
    for (name, mut records) in read_measured(&path)? {
        let mut same_name = report.phases.iter_mut().filter(|p| p.phase == name);
        let (Some(phase), None) = (same_name.next(), same_name.next()) else {
            continue;
        };
        let ids: HashSet<&str> = records.iter().map(|r| r.request_id.as_str()).collect();
        let consistent = records.len() as u64 == phase.summary.requests
            && phase
                .request_timings
                .iter()
                .all(|r| ids.contains(r.request_id.as_str()));
        if consistent {
            records.sort_by_key(|r| r.request_index);
            phase.request_timings = records;
            replaced.push(name);
        }
    }
    Ok(replaced)
}
