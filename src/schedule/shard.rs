//! Splitting a schedule among shards (`--shard I/N`): each shard's share of a phase's load
//! and bounds, the `--start-at` time, and the plan digest shards of one run share.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::settings::{Load, PhaseSettings};
use crate::plan::Plan;

/// Most shards one plan may be split into; far more machines than any fleet test needs.
pub const MAX_SHARDS: u32 = 10_000;

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
            "--shard {shard}: trace replay phases cannot be split among shards (every shard would replay the whole trace): {}; run them without --shard, or leave them out with --phase",
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

/// sha256 (hex) of the canonical JSON of an expanded plan: object keys sorted, no spaces.
pub fn plan_sha256(plan: &Plan) -> String {
    canonical_sha256(&serde_json::to_value(plan).unwrap_or(Value::Null))
}

/// sha256 (hex) of `value` with every object's keys sorted: equal for equal values whatever
/// order their keys were written in.
pub fn canonical_sha256(value: &Value) -> String {
    let mut text = String::new();
    write_canonical(value, &mut text);
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}
