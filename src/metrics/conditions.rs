//! Measured conditions on either side of a change, shared by `compare` and the history's
//! trends: the cached-token ratio, the server's queue share, a server restart, a client-bound
//! side. A latency change across a cache ratio that moved beyond [`CACHE_RATIO_BOUND`] is put
//! down to the cache, not called significant, a regression or an improvement.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How far (absolute, 0–1) the cached-token ratio may move across a change before a latency
/// change there is put down to the cache.
pub const CACHE_RATIO_BOUND: f64 = 0.10;

/// How far the server queue share may move before it is flagged beside a change.
pub const QUEUE_SHARE_BOUND: f64 = 0.10;

/// A measured condition that differs across a change.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "condition", rename_all = "snake_case")]
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
    /// Runs (or compared sides) around the change were client-bound.
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

/// The conditions measured on one side of a change (a phase, or a level's mean).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Conditions {
    pub cached_token_ratio: Option<f64>,
    /// Server queue time over end-to-end time.
    pub server_queue_share: Option<f64>,
    /// The server's uptime, when it states it (the latest before the change, the earliest
    /// after it).
    pub server_uptime_s: Option<f64>,
    /// The share of the client's event-loop wakes that were late (`late_wake_share`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_share: Option<f64>,
}

/// The conditions that differ between `before` and `after`; `client_bound` counts the
/// client-bound runs (or sides) around the change.
pub fn changes(
    before: &Conditions,
    after: &Conditions,
    client_bound: usize,
) -> Vec<ConditionChange> {
    let mut out = Vec::new();
    if let (Some(b), Some(a)) = (before.cached_token_ratio, after.cached_token_ratio)
        && (a - b).abs() > CACHE_RATIO_BOUND
    {
        out.push(ConditionChange::CacheRatio {
            before: b,
            after: a,
        });
    }
    if let (Some(b), Some(a)) = (before.server_queue_share, after.server_queue_share)
        && (a - b).abs() > QUEUE_SHARE_BOUND
    {
        out.push(ConditionChange::ServerQueueShare {
            before: b,
            after: a,
        });
    }
    if let (Some(b), Some(a)) = (before.server_uptime_s, after.server_uptime_s)
        && a < b
    {
        out.push(ConditionChange::ServerRestarted);
    }
    if client_bound > 0 {
        out.push(ConditionChange::ClientBound { runs: client_bound });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_ratio_beyond_the_bound_explains_a_latency_change() {
        let before = Conditions {
            cached_token_ratio: Some(0.16),
            ..Conditions::default()
        };
        let after = Conditions {
            cached_token_ratio: Some(0.99),
            ..Conditions::default()
        };
        let found = changes(&before, &after, 0);
        assert_eq!(
            found,
            vec![ConditionChange::CacheRatio {
                before: 0.16,
                after: 0.99
            }]
        );
        assert!(found[0].explains_latency());
        let near = Conditions {
            cached_token_ratio: Some(0.20),
            ..Conditions::default()
        };
        assert!(changes(&before, &near, 0).is_empty(), "within the bound");
    }

    #[test]
    fn a_lower_uptime_is_a_restart_and_client_bound_sides_are_counted() {
        let before = Conditions {
            server_uptime_s: Some(500.0),
            server_queue_share: Some(0.05),
            ..Conditions::default()
        };
        let after = Conditions {
            server_uptime_s: Some(20.0),
            server_queue_share: Some(0.40),
            ..Conditions::default()
        };
        let found = changes(&before, &after, 1);
        assert!(found.contains(&ConditionChange::ServerRestarted));
        assert!(found.contains(&ConditionChange::ClientBound { runs: 1 }));
        assert!(
            found
                .iter()
                .any(|c| matches!(c, ConditionChange::ServerQueueShare { .. }))
        );
        assert!(
            found
                .iter()
                .all(|c| !matches!(c, ConditionChange::CacheRatio { .. }))
        );
    }
}
