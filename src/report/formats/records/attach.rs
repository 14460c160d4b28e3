//! Readers that need every record (merge, compare's bootstrap) take them from the records
//! beside a report.json when there are any, since report.json may hold only a sample of a
//! large phase's records.

use std::collections::HashSet;
use std::path::Path;

use crate::report::Report;

use super::{RecordsSet, measured_by_phase};

/// Replace each phase's `request_timings` with its measured records from the records
/// beside `report_path` (its `requests/` parts, or an older run's `requests.parquet`). A phase is replaced only when the file holds
/// exactly its `summary.requests` records, every one report.json holds among them, and its
/// name is unique in the report; otherwise it keeps what report.json has. Returns the names
/// of the phases replaced (none when there is no file).
pub fn attach_records(report: &mut Report, report_path: &Path) -> Result<Vec<String>, String> {
    let Some(set) = RecordsSet::beside(report_path)? else {
        return Ok(Vec::new());
    };
    let mut replaced = Vec::new();
    for (name, mut records) in measured_by_phase(set.rows())? {
        let mut same_name = report.phases.iter_mut().filter(|p| p.header.phase == name);
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
