//! Pure functions from request records to summaries: percentiles, rates, goodput, drift.

mod drift;
mod summary;

pub use drift::*;

pub use summary::*;

use crate::client::RequestRecord;
use crate::plan::{PercentileMethod, Slo};

/// Fill a record's derived fields (generation, decode rate, ITL, TPOT, prefill rate) from its
/// raw timings and token counts, exactly as DESIGN.md defines them.
pub fn derive_record_fields(record: &mut RequestRecord) {
    let _ = record;
    unimplemented!("lands with the metrics issue")
}

/// One phase's figures from its measured records.
pub fn summarize(
    records: &[RequestRecord],
    method: PercentileMethod,
    slo: Option<&Slo>,
) -> PhaseSummary {
    let _ = (records, method, slo);
    unimplemented!("lands with the metrics issue")
}

/// Order statistics and mean of `values`; `None` when empty.
pub fn distribution(
    values: impl Iterator<Item = f64>,
    method: PercentileMethod,
) -> Option<Distribution> {
    let _ = (values, method);
    unimplemented!("lands with the metrics issue")
}
