//! Measured conditions across a change: a moved cached-token ratio or server queue share, a
//! server restart, client-bound runs nearby. A latency change across a cache ratio that
//! moved beyond [`CACHE_RATIO_BOUND`] is not called a regression or an improvement.

use std::fmt;

use crate::history::series::Point;

/// How far (absolute, 0–1) the mean cached-token ratio may move across a change before a
/// latency change there is put down to the cache. Shared with `compare`'s bound once that
/// lands in `metrics::conditions`.
pub const CACHE_RATIO_BOUND: f64 = 0.10;

/// How far the mean server queue share may move before it is flagged beside a change.
pub const QUEUE_SHARE_BOUND: f64 = 0.10;

/// A measured condition that differs across a change.
#[derive(Debug, Clone, PartialEq)]
pub enum ConditionChange {
    CacheRatio {
        before: f64,
        after: f64,
    },
    ServerQueueShare {
        before: f64,
        after: f64,
    },
    /// The server's uptime went down across the change.
    ServerRestarted,
    /// Runs around the change were client-bound (left out of detection).
    ClientBound {
        runs: usize,
    },
}

impl ConditionChange {
    /// Whether it explains away a latency change.
    pub fn explains_latency(&self) -> bool {
        matches!(self, ConditionChange::CacheRatio { .. })
    }
}

impl fmt::Display for ConditionChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConditionChange::CacheRatio { before, after } => {
                write!(f, "condition changed: cache ratio {before:.2} → {after:.2}")
            }
            ConditionChange::ServerQueueShare { before, after } => {
                write!(f, "server queue share {before:.2} → {after:.2}")
            }
            ConditionChange::ServerRestarted => f.write_str("server restarted"),
            ConditionChange::ClientBound { runs } => {
                write!(f, "{runs} client-bound run(s) nearby, left out")
            }
        }
    }
}

fn mean_of(points: &[&Point], read: impl Fn(&Point) -> Option<f64>) -> Option<f64> {
    let values: Vec<f64> = points.iter().filter_map(|p| read(p)).collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The conditions that differ between the runs `before` and `after` a change; `around` is
/// every run of both levels, excluded and client-bound ones included.
pub fn across(before: &[&Point], after: &[&Point], around: &[Point]) -> Vec<ConditionChange> {
    let mut out = Vec::new();
    let cache = |p: &Point| p.conditions.cached_token_ratio;
    if let (Some(b), Some(a)) = (mean_of(before, cache), mean_of(after, cache))
        && (a - b).abs() > CACHE_RATIO_BOUND
    {
        out.push(ConditionChange::CacheRatio {
            before: b,
            after: a,
        });
    }
    let queue = |p: &Point| p.conditions.server_queue_share;
    if let (Some(b), Some(a)) = (mean_of(before, queue), mean_of(after, queue))
        && (a - b).abs() > QUEUE_SHARE_BOUND
    {
        out.push(ConditionChange::ServerQueueShare {
            before: b,
            after: a,
        });
    }
    let last_before = before.last().and_then(|p| p.conditions.server_uptime_s);
    let first_after = after.first().and_then(|p| p.conditions.server_uptime_s);
    if let (Some(b), Some(a)) = (last_before, first_after)
        && a < b
    {
        out.push(ConditionChange::ServerRestarted);
    }
    let client_bound = around.iter().filter(|p| p.client_bound).count();
    if client_bound > 0 {
        out.push(ConditionChange::ClientBound { runs: client_bound });
    }
    out
}
