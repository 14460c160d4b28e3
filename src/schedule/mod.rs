//! The concrete schedule of a run: every phase's settings read from the expanded plan, the
//! phases `--phase` selects, this shard's share of each (`--shard I/N`), their planned starts
//! (`--start-at`), and the one description `run --dry-run` prints. Pure arithmetic: the
//! scheduler executes what this module computes.

mod describe;
mod offsets;
pub mod search;
mod settings;
mod shard;

pub use offsets::{DRAIN_ALLOWANCE, planned_offsets};
pub use settings::{DEFAULT_DRAIN_TIMEOUT, Load, PhaseSettings, probe_load, resolve};
pub use shard::{
    MAX_SHARDS, ShardSpec, canonical_sha256, check_shardable, parse_start_at, plan_sha256,
    request_share, runs_nothing, split_load, split_phase, warmup_requests,
};

use chrono::{DateTime, Utc};

use crate::plan::Plan;

/// What a run will do, phase by phase, before anything is sent.
#[derive(Debug, Clone)]
pub struct Schedule<'p> {
    pub plan_name: &'p str,
    /// The selected phases in plan order, each this shard's share in a sharded run.
    pub phases: Vec<PhaseSettings<'p>>,
    /// Per phase: the warmup's request bound (this shard's share of it), if it has one.
    pub warmup_requests: Vec<Option<u64>>,
    /// Per phase under `--start-at`: when it starts on every shard; empty otherwise.
    pub starts: Vec<DateTime<Utc>>,
    pub shard: Option<ShardSpec>,
}

/// How to cut the plan into a schedule: `run --phase`, `--shard` and `--start-at`.
#[derive(Debug, Clone, Default)]
pub struct ScheduleOptions<'a> {
    pub only: &'a [String],
    pub shard: Option<ShardSpec>,
    pub start_at: Option<DateTime<Utc>>,
}

impl<'p> Schedule<'p> {
    /// The schedule of `plan`, or every reason it cannot run, one per line.
    pub fn new(plan: &'p Plan, options: &ScheduleOptions<'_>) -> Result<Self, String> {
        let all = resolve(plan).map_err(|errors| errors.join("\n"))?;
        let phases = select(all, options.only)?;
        // Starts and warmup shares come from the whole phases, before the split.
        let starts = match options.start_at {
            Some(at) => planned_offsets(&phases)?
                .into_iter()
                .map(|offset| chrono::Duration::from_std(offset).map(|d| at + d))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("--start-at: {e}"))?,
            None => Vec::new(),
        };
        let warmup_requests = phases
            .iter()
            .map(|p| warmup_requests(p, options.shard))
            .collect();
        let phases = match options.shard {
            Some(shard) => {
                check_shardable(&phases, shard)?;
                phases.into_iter().map(|p| split_phase(p, shard)).collect()
            }
            None => phases,
        };
        Ok(Schedule {
            plan_name: &plan.name,
            phases,
            warmup_requests,
            starts,
            shard: options.shard,
        })
    }
}

/// The phases `--phase` names, in plan order; every phase when it names none.
fn select<'p>(
    all: Vec<PhaseSettings<'p>>,
    only: &[String],
) -> Result<Vec<PhaseSettings<'p>>, String> {
    if only.is_empty() {
        return Ok(all);
    }
    let unknown: Vec<&String> = only
        .iter()
        .filter(|name| !all.iter().any(|p| p.name == name.as_str()))
        .collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = all.iter().map(|p| p.name).collect();
        return Err(format!(
            "--phase: no phase named {}; the plan's phases are: {}",
            unknown
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
            known.join(", ")
        ));
    }
    Ok(all
        .into_iter()
        .filter(|p| only.iter().any(|n| n == p.name))
        .collect())
}

#[cfg(test)]
mod tests;
