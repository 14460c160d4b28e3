//! Integration tests: one binary, one module per area.
mod client;
mod common;
mod e2e;
mod metrics;
mod perf;
mod plans;
mod report;
mod run;
mod shard;
mod sim;
mod workload;
