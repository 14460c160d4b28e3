//! Interleaved repeats: what an expanded phase says about the round of a `repeat` group it
//! is. The group itself exists only in authored plans; `expand::repeat` turns it into these.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Set by a `repeat` group's expansion (not written by hand): this phase is round `index`
/// of `of` of arm `arm` in group `group`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Round {
    /// The repeat group's name (`repeat-1`, … unless the group names itself).
    pub group: String,
    /// The arm: the phase's name without its `/round-N` suffix.
    pub arm: String,
    /// 1-based round number.
    #[schemars(range(min = 1))]
    pub index: u32,
    /// Rounds in the group.
    #[schemars(range(min = 1))]
    pub of: u32,
}

/// How the rounds of a repeat group are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RepeatOrder {
    /// A B C, A B C, …: drift over time hits every arm alike.
    #[default]
    Interleaved,
    /// A A A, B B B, …: the plain sequence, for comparison.
    Blocked,
    /// Each round in its own seeded order, so no arm always runs first.
    Shuffled,
}

impl RepeatOrder {
    pub const NAMES: [&str; 3] = ["interleaved", "blocked", "shuffled"];

    pub fn parse(name: &str) -> Option<RepeatOrder> {
        match name {
            "interleaved" => Some(RepeatOrder::Interleaved),
            "blocked" => Some(RepeatOrder::Blocked),
            "shuffled" => Some(RepeatOrder::Shuffled),
            _ => None,
        }
    }
}

/// Most rounds one group may ask for.
pub const MAX_ROUNDS: u64 = 1000;
