//! servebench: declarative benchmark plans for OpenAI-compatible LLM serving endpoints.
//!
//! Data flows one way: [`plan`] → [`workload`] → [`client`] → [`schedule`] → [`scheduler`] →
//! [`metrics`] → [`report`] → [`runner`] → [`shard`], with [`sim`] standing in for a real
//! server.

pub mod cli;
pub mod client;
pub mod exit;
pub mod metrics;
pub mod plan;
pub mod report;
pub mod runner;
pub mod schedule;
pub mod scheduler;
pub mod selftest;
pub mod shard;
pub mod sim;
pub mod wakeup;
pub mod workload;
