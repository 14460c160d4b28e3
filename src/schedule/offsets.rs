//! Planned phase starts: when each phase begins, as an offset from the run's start time.

use std::time::Duration;

use super::settings::PhaseSettings;

/// Planned gap after each phase's bound (and its cooldown) before the next phase starts on
/// every shard: time for in-flight streams to finish. A shard whose stragglers take longer
/// starts the next phase late and its report says by how much.
pub const DRAIN_ALLOWANCE: Duration = Duration::from_secs(30);

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
