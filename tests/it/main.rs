//! Integration tests: one binary, one module per area.
mod client;
mod metrics;
mod perf;
mod plans;
mod report;
mod run;
mod sim;
mod workload;
