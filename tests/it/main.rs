//! Integration tests: one binary, one module per area.
mod client;
mod metrics;
mod plans;
mod report;
mod run;
mod shard;
mod sim;
mod workload;
