//! The report's data: the one combined report and its parts, and paths that name a figure
//! in it.

pub mod endpoints;
pub mod figure_path;
mod hooks;
mod outage;
pub mod provenance;
mod report;
pub mod schema;
pub mod search;
mod server_window;

pub use endpoints::EndpointFacts;
pub use hooks::{HookOutcome, HookStatus, HookWhen};
pub use outage::TargetOutage;
pub use provenance::{Provenance, RepositoryState, SaltUsed, ServerIdentity};
pub use report::*;
pub use search::*;
pub use server_window::*;
