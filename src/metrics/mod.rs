//! Pure functions from request records to summaries: percentiles, rates, goodput, drift.

mod summary;

pub use summary::*;
