//! The limits no real plan reaches: a phase of months, a million connections. The checks
//! refuse values past them (a phase's load, `on_target_down`'s wait).

/// Longest duration a phase, warmup, cooldown or drain may have: 30 days.
pub const MAX_PHASE_DURATION_S: u64 = 30 * 24 * 3600;
/// Most concurrent requests (closed loop) or in-flight cap (open loop) a phase may ask for.
pub const MAX_CONCURRENCY: u32 = 1_000_000;
/// Highest open-loop request rate, requests per second.
pub const MAX_RPS: f64 = 1_000_000.0;
