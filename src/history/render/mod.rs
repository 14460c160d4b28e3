//! The trend report.
