//! Sharded runs: `servebench merge` of the shards' reports into one exact report.
//!
//! Shards never talk to each other. Each one runs the whole expanded plan with its share of
//! every phase's load (see [`crate::schedule`]); with `--start-at`, every shard begins phase k
//! at `start_at` plus the phase's planned offset, so the phases line up in time on every
//! machine, and draws its own arrivals and prompts ([`crate::hash::mix_seed`]). The merge then
//! recomputes every figure from the union of the shards' request records.

mod backends;
mod merge;

pub use merge::{MergeError, merge_files, merge_reports};
// The shard split lives in the schedule and the report sections in the report; named here
// too, where sharded runs are described.
pub use crate::report::{MergedShard, PlannedStart, ShardInfo, ShardPhaseFacts};
pub use crate::schedule::{DRAIN_ALLOWANCE, MAX_SHARDS, ShardSpec, parse_start_at, plan_sha256};
