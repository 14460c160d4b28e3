//! servebench: declarative benchmark plans for OpenAI-compatible LLM serving endpoints.
//!
//! Data flows one way. Each module imports only modules of the steps before its own, and
//! modules that share a step import none of each other (`tests/it/layout.rs` reads this flow
//! and holds the code to it):
//!
//! [`hash`], [`duration`], [`quantile`], [`probe_samples`], [`figure`], [`api`], [`exit`] →
//! [`sim`], [`wakeup`] → [`plan`] → [`workload`] → [`client`] → [`schedule`] → [`scheduler`] →
//! [`metrics`] → [`report`], [`selftest`] → [`runner`], [`history`] → [`shard`] → [`commands`]
//!
//! The first step is what every layer reads: [`hash`] the stable hashes and seeded streams
//! that reports and the simulator depend on, [`duration`] the human-readable durations plans
//! and simulator settings are written in, [`quantile`] the one percentile every figure is read
//! with, [`probe_samples`] a probe's verdict and the samples it needs, [`figure`] the
//! per-request figures and the paths that name them, [`api`] the APIs requests go to, and
//! [`exit`] the exit codes. [`sim`] stands in for a real server (a plan's target may be one);
//! [`wakeup`] measures how late this machine wakes a sleeping thread. [`selftest`] measures
//! the client on this machine, [`history`] keeps results across runs, [`shard`] merges the
//! shards of a run, and [`commands`] is the command line: argument types, printing and exit
//! codes.

// Functions of at most 80 lines (clippy.toml); SQL text and data tables say why they are longer.
#![warn(clippy::too_many_lines)]

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
