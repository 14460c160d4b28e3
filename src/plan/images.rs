//! A workload's images: how many each chat request carries, their size and encoding, and how
//! many distinct ones are built ahead of a phase.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::count::TokenCount;
use super::schema::Issue;

/// Distinct images built ahead of a phase when the plan sets no `pool`.
pub const DEFAULT_POOL: u32 = 64;
/// The largest side accepted: a 16384² RGB image is 768 MiB before encoding.
pub const MAX_SIDE: u32 = 8192;
/// The largest pool accepted.
pub const MAX_POOL: u32 = 4096;

/// `images: {count: 1, width: 512, height: 512, format: jpeg}`: each chat request's user
/// message carries `count` seeded images as base64 data URLs (OpenAI content parts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Images {
    /// Images per request: a number or a distribution, as `input_tokens` takes (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<TokenCount>,
    /// Width in pixels (1 to 8192).
    pub width: u32,
    /// Height in pixels (1 to 8192).
    pub height: u32,
    /// Encoding: `jpeg` (default) or `png`.
    #[serde(default)]
    pub format: ImageFormat,
    /// Distinct images built ahead of the phase and sent in turn (default 64): requests
    /// `pool` apart carry the same image. Set it to the phase's request count for images that
    /// never repeat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<u32>,
}

/// How a generated image is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImageFormat {
    #[default]
    Jpeg,
    Png,
}

impl ImageFormat {
    /// The MIME type a data URL names.
    pub fn mime(self) -> &'static str {
        match self {
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Png => "image/png",
        }
    }
}

impl Images {
    /// Distinct images to build.
    pub fn pool_size(&self) -> u32 {
        self.pool.unwrap_or(DEFAULT_POOL)
    }
}

/// Sides within 1..=8192 and a pool within 1..=4096 (the count is checked as other counts).
pub(crate) fn check_images(p: &str, images: &Images, issues: &mut Vec<Issue>) {
    for (key, side) in [("width", images.width), ("height", images.height)] {
        if !(1..=MAX_SIDE).contains(&side) {
            issues.push(Issue::new(
                format!("{p}/{key}"),
                format!("must be 1 to {MAX_SIDE} pixels, found {side}"),
            ));
        }
    }
    if let Some(pool) = images.pool
        && !(1..=MAX_POOL).contains(&pool)
    {
        issues.push(Issue::new(
            format!("{p}/pool"),
            format!("must be 1 to {MAX_POOL} images, found {pool}"),
        ));
    }
}
