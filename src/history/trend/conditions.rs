//! Measured conditions across a change in a series: each level's mean cached-token ratio and
//! server queue share, the uptimes either side of it, the client-bound runs around it, read
//! by the rules `compare` shares ([`crate::metrics::conditions`]).

use crate::history::series::Point;
use crate::metrics::conditions::{Conditions, changes};

pub use crate::metrics::conditions::{CACHE_RATIO_BOUND, ConditionChange, QUEUE_SHARE_BOUND};

fn mean_of(points: &[&Point], read: impl Fn(&Point) -> Option<f64>) -> Option<f64> {
    let values: Vec<f64> = points.iter().filter_map(|p| read(p)).collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The conditions that differ between the runs `before` and `after` a change; `around` is
/// every run of both levels, excluded and client-bound ones included.
pub fn across(before: &[&Point], after: &[&Point], around: &[Point]) -> Vec<ConditionChange> {
    let side = |points: &[&Point], uptime: Option<&&Point>| Conditions {
        cached_token_ratio: mean_of(points, |p| p.conditions.cached_token_ratio),
        server_queue_share: mean_of(points, |p| p.conditions.server_queue_share),
        server_uptime_s: uptime.and_then(|p| p.conditions.server_uptime_s),
        ..Conditions::default()
    };
    let client_bound = around.iter().filter(|p| p.client_bound).count();
    changes(
        &side(before, before.last()),
        &side(after, after.first()),
        client_bound,
    )
}
