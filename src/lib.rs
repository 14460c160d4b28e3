//! servebench: declarative benchmark plans for OpenAI-compatible LLM serving endpoints.
//!
//! Data flows one way: [`plan`] → [`workload`] → [`client`] → [`schedule`] → [`scheduler`] →
//! [`metrics`] → [`report`] → [`runner`] → [`shard`], with [`sim`] standing in for a real
//! server. [`commands`] is the command line: argument types, printing and exit codes; [`hash`]
//! holds the stable hashes and seeded streams that reports and the simulator depend on, and
//! [`duration`] the human-readable durations plans and simulator settings are written in, and
//! [`quantile`] the one percentile every figure is read with.

pub mod api;
pub mod client;
pub mod commands;
pub mod duration;
pub mod exit;
pub mod figure;
pub mod hash;
pub mod history;
pub mod metrics;
pub mod plan;
pub mod probe_samples;
pub mod quantile;
pub mod report;
pub mod runner;
pub mod schedule;
pub mod scheduler;
pub mod selftest;
pub mod shard;
pub mod sim;
pub mod wakeup;
pub mod workload;
