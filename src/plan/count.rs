//! A count drawn per request, a fixed number or a distribution to sample from: a prompt's
//! or a reply's tokens, a turn's words, a request's images.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A token count: a fixed number or a distribution to sample from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TokenCount {
    Fixed(u32),
    Normal(NormalLength),
    LogNormal(LogNormalLength),
    Uniform(UniformLength),
    Choice(ChoiceLength),
}

/// Normal distribution, clamped to `[min, max]` and to at least 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NormalLength {
    /// Mean length in tokens.
    pub mean: f64,
    /// Standard deviation in tokens.
    pub stddev: f64,
    /// Smallest length drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<u32>,
    /// Largest length drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u32>,
}

/// Log-normal distribution given by its median and the sigma of the underlying normal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogNormalLength {
    /// Median length in tokens.
    pub median: f64,
    /// Sigma of the underlying normal distribution.
    pub sigma: f64,
    /// Smallest length drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<u32>,
    /// Largest length drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u32>,
}

/// Uniform over `[min, max]`, both inclusive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UniformLength {
    /// Smallest length, inclusive.
    pub min: u32,
    /// Largest length, inclusive.
    pub max: u32,
}

/// One of an explicit list, optionally weighted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChoiceLength {
    /// The lengths to choose from.
    pub values: Vec<u32>,
    /// Relative weight of each value, in the same order; equal when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<Vec<f64>>,
}
