//! Building a report's parts from request records: phase results and repeat groups.

pub mod phase;
pub mod repeats;
