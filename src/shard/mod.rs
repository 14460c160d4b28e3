//! Sharded runs: `--shard I/N` specs, each shard's share of a phase, aligned start times, and
//! `servebench merge` of the shards' reports into one exact report.
//!
//! Shards never talk to each other. Each one runs the whole expanded plan with its share of
//! every phase's load; with `--start-at`, every shard begins phase k at `start_at` plus the
//! phase's planned offset, so the phases line up in time on every machine. The merge then
//! recomputes every figure from the union of the shards' request records.

mod merge;
mod model;

pub use merge::{MergeError, merge_command, merge_files, merge_reports, plan_sha256};
pub use model::*;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::runner::settings::PhaseSettings;
use crate::scheduler::Load;

/// Most shards one plan may be split into; far more machines than any fleet test needs.
pub const MAX_SHARDS: u32 = 10_000;

/// Planned gap after each phase's bound (and its cooldown) before the next phase starts on
/// every shard: time for in-flight streams to finish. A shard whose stragglers take longer
/// starts the next phase late and its report says by how much.
pub const DRAIN_ALLOWANCE: Duration = Duration::from_secs(30);

/// Shard `index` of `count` (0-based), written `I/N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShardSpec {
    pub index: u32,
    pub count: u32,
}

impl ShardSpec {
    /// `count` must be ≥ 1 and `index < count`.
    pub fn new(index: u32, count: u32) -> Result<Self, String> {
        if count == 0 {
            return Err("the shard count N in I/N must be at least 1".to_string());
        }
        if count > MAX_SHARDS {
            return Err(format!(
                "the shard count N in I/N is at most {MAX_SHARDS}, found {count}"
            ));
        }
        if index >= count {
            return Err(format!(
                "shard index {index} is out of range for {count} shard(s): indices run from 0 to {}",
                count - 1
            ));
        }
        Ok(ShardSpec { index, count })
    }

    /// This shard's part of `total` indivisible units (workers, requests): `total / N`, plus
    /// one for each of the lowest `total % N` indices, so the parts sum to `total`.
    pub fn share(&self, total: u64) -> u64 {
        let n = u64::from(self.count);
        total / n + u64::from(u64::from(self.index) < total % n)
    }

    /// This shard's part of a rate.
    pub fn rate_share(&self, rps: f64) -> f64 {
        rps / f64::from(self.count)
    }

    /// A seed of its own for this shard, so that shards draw independent arrivals and prompts.
    pub fn mix_seed(&self, seed: u64) -> u64 {
        seed ^ crate::hash::splitmix64((u64::from(self.count) << 32) | u64::from(self.index))
    }
}

impl fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for ShardSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (index, count) = s.trim().split_once('/').ok_or_else(|| {
            format!("expected I/N (shard index / shard count, e.g. 0/4), found `{s}`")
        })?;
        let number = |part: &str, what: &str| {
            part.trim().parse::<u32>().map_err(|_| {
                format!(
                    "expected I/N with whole numbers (e.g. 0/4); the {what} `{part}` is not one"
                )
            })
        };
        ShardSpec::new(number(index, "index")?, number(count, "count")?)
    }
}

/// `--start-at`: an RFC 3339 time (`2026-12-02T14:00:00Z`).
pub fn parse_start_at(s: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            format!("expected an RFC 3339 time such as 2026-12-02T14:00:00Z, found `{s}` ({e})")
        })
}

/// This shard's part of a load: its workers (closed loop), or its part of the rate and of the
/// concurrency cap (open loop; a cap never drops below 1 so the shard can still send).
pub fn split_load(load: &Load, shard: ShardSpec) -> Load {
    match load {
        Load::Closed { concurrency } => Load::Closed {
            concurrency: shard.share(u64::from(*concurrency)) as u32,
        },
        Load::Open {
            rps,
            arrival,
            burstiness,
            max_concurrency,
        } => Load::Open {
            rps: shard.rate_share(*rps),
            arrival: *arrival,
            burstiness: *burstiness,
            max_concurrency: max_concurrency.map(|cap| (shard.share(u64::from(cap)) as u32).max(1)),
        },
        Load::Replay => Load::Replay,
    }
}

/// Trace replays send each trace request at its recorded time; splitting a trace among
/// shards is not supported yet, so a replay phase runs unsharded or not at all.
pub fn check_shardable(phases: &[PhaseSettings<'_>], shard: ShardSpec) -> Result<(), String> {
    let replays: Vec<&str> = phases
        .iter()
        .filter(|p| matches!(p.load, Load::Replay))
        .map(|p| p.name)
        .collect();
    if shard.count > 1 && !replays.is_empty() {
        return Err(format!(
            "--shard {shard}: trace replay phases cannot be split among shards (every shard would replay the whole trace): {}; run them without --shard, or leave them out with --only",
            replays.join(", ")
        ));
    }
    Ok(())
}

/// This shard's part of a request count under `load` (the whole phase's load). In a closed
/// loop with fewer workers than shards only the shards with a worker send, so the requests
/// are split among them; in an open loop every shard sends.
pub fn request_share(load: &Load, requests: u64, shard: ShardSpec) -> u64 {
    match load {
        Load::Closed { concurrency } => {
            let senders = shard.count.min(*concurrency);
            if shard.index < senders {
                ShardSpec {
                    index: shard.index,
                    count: senders,
                }
                .share(requests)
            } else {
                0
            }
        }
        Load::Open { .. } | Load::Replay => shard.share(requests),
    }
}

/// This shard's part of a phase's warmup request bound, if the warmup has one.
pub fn warmup_requests(phase: &PhaseSettings<'_>, shard: Option<ShardSpec>) -> Option<u64> {
    let requests = phase.warmup.and_then(|w| w.requests)?;
    Some(shard.map_or(requests, |s| request_share(&phase.load, requests, s)))
}

/// A phase as this shard runs it: its share of the load and of the request bound.
pub fn split_phase<'p>(mut phase: PhaseSettings<'p>, shard: ShardSpec) -> PhaseSettings<'p> {
    phase.requests = phase.requests.map(|n| request_share(&phase.load, n, shard));
    phase.load = split_load(&phase.load, shard);
    phase
}

/// True when this shard's share of the phase is nothing: no workers, or no requests. Such a
/// shard sends nothing for the phase but still keeps the schedule.
pub fn runs_nothing(phase: &PhaseSettings<'_>) -> bool {
    matches!(phase.load, Load::Closed { concurrency: 0 }) || phase.requests == Some(0)
}

/// When each phase starts, as offsets from `--start-at`: the sum of the earlier phases'
/// warmup duration, duration, cooldown and [`DRAIN_ALLOWANCE`]. Every phase but the last must
/// have a planned length (a `duration`, and a warmup with a `duration` if any).
pub fn planned_offsets(phases: &[PhaseSettings<'_>]) -> Result<Vec<Duration>, String> {
    let mut offsets = Vec::with_capacity(phases.len());
    let mut problems = Vec::new();
    let mut offset = Duration::ZERO;
    for (i, phase) in phases.iter().enumerate() {
        offsets.push(offset);
        if i + 1 == phases.len() {
            break;
        }
        let warmup = match phase.warmup {
            None => Some(Duration::ZERO),
            Some(w) => w.duration.map(|d| d.0),
        };
        match (warmup, phase.duration) {
            (Some(warmup), Some(duration)) => {
                offset += warmup + duration + phase.cooldown.unwrap_or_default() + DRAIN_ALLOWANCE;
            }
            (None, _) => problems.push(format!(
                "phase `{}` has a warmup bounded only by a request count, so its length is unknown; give the warmup a `duration`",
                phase.name
            )),
            (_, None) => problems.push(format!(
                "phase `{}` is bounded only by a request count, so its length is unknown; give it a `duration`",
                phase.name
            )),
        }
    }
    if problems.is_empty() {
        Ok(offsets)
    } else {
        Err(format!(
            "--start-at starts every phase at a planned time, which needs the length of every phase but the last:\n  {}\n(or run without --start-at: shards then start each phase as soon as they finish the previous one)",
            problems.join("\n  ")
        ))
    }
}

/// `--dry-run` of a sharded or scheduled run: which shard, and when each phase starts.
pub fn describe_schedule(
    shard: Option<ShardSpec>,
    phases: &[PhaseSettings<'_>],
    starts: &[DateTime<Utc>],
) -> String {
    let mut out = String::new();
    if let Some(shard) = shard {
        out.push_str(&format!(
            "shard {shard}: the loads above are this shard's share{}\n",
            if phases.iter().any(runs_nothing) {
                "; phases with no workers or no requests send nothing here"
            } else {
                ""
            }
        ));
    }
    for (phase, at) in phases.iter().zip(starts) {
        out.push_str(&format!(
            "  {} starts at {}\n",
            phase.name,
            at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ));
    }
    out
}

/// Wait until `at` (wall clock) unless a stop comes first; returns how late we are, in
/// milliseconds (0 when on time).
pub async fn wait_until(at: DateTime<Utc>, stop: &tokio_util::sync::CancellationToken) -> f64 {
    let now = Utc::now();
    match (at - now).to_std() {
        Ok(wait) if !wait.is_zero() => {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.cancelled() => {}
            }
            0.0
        }
        _ => (now - at).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e3,
    }
}

#[cfg(test)]
mod tests;
