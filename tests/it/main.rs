//! Integration tests: one binary, one module per area.
mod client;
mod common;
mod connections;
mod docs;
mod e2e;
mod faults;
mod fuzz_corpus;
mod golden;
mod hardening;
mod metrics;
mod perf;
mod plans;
mod report;
mod run;
mod shard;
mod sim;
mod workload;
