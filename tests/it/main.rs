//! Integration tests: one binary, one module per area.
mod client;
mod faults;
mod fuzz_corpus;
mod hardening;
mod metrics;
mod plans;
mod report;
mod run;
mod sim;
mod workload;
