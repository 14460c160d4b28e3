//! Weighted mixes of names: a workload's requests spread over several served model names (a
//! base model and its LoRA adapters), and a phase's requests spread over several named
//! workloads (its archetypes). One type serves both.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::fraction::Fraction;

/// Names with the share of requests each gets, e.g. `{base: 60%, adapter-a: 30%,
/// adapter-b: 10%}`; the shares sum to 100%.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct ModelMix(pub IndexMap<String, Fraction>);

/// A phase's workloads with their shares of its requests, e.g. `{short-chat: 70%,
/// long-rag: 20%, vision: 10%}`: the same shape as a model mix.
pub type ArchetypeMix = ModelMix;

/// How far the weights' sum may be from 1 (rounding in `33.3%`-style weights).
pub const SUM_TOLERANCE: f64 = 1e-3;

impl ModelMix {
    /// The names, in plan order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// The weights' sum (1 for a valid mix).
    pub fn total(&self) -> f64 {
        self.0.values().map(|w| w.0).sum()
    }
}
