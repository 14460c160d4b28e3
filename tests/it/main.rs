//! Integration tests: one binary, one module per area.
mod client;
mod common;
mod e2e;
mod faults;
mod fuzz_corpus;
mod hardening;
mod metrics;
mod perf;
mod plan_ci;
mod plan_include;
mod plan_schema;
mod plans;
mod report;
mod run;
mod shard;
mod sim;
mod workload;
