//! Building a report's parts from request records: phase results (with a probe's verdict),
//! and the parts drawn across phases (rechecks, repeat groups).

pub mod capacity;
pub mod phase;
pub mod probe;
pub mod relate;
pub mod repeats;
