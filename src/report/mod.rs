//! The report data model and its writers and readers.

mod model;

pub use model::*;
