//! A request's speculative-decoding acceptance, as vLLM reports it per request under
//! `metrics.speculative_decoding` (with `--per-request-spec-decode-metrics`): kept as the
//! server sends it, and read leniently, since a server's odd object loses the acceptance,
//! not the chunk.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// vLLM's per-request acceptance object. `acceptance_histogram[j]` counts the verify steps
/// that accepted exactly `j` draft tokens (the bonus token left out);
/// `mean_acceptance_length` counts the bonus token (`1 + accepted / steps`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SpecDecoding {
    pub mean_acceptance_length: f64,
    pub draft_acceptance_rate: f64,
    #[serde(default)]
    pub acceptance_histogram: Vec<u64>,
    pub num_spec_steps: u64,
    pub num_accepted_draft_tokens: u64,
    /// Draft tokens proposed; absent from servers that leave it out, when it is
    /// `num_spec_steps × num_spec_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_draft_tokens: Option<u64>,
    /// Draft tokens proposed per step (the server's `num_speculative_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_spec_tokens: Option<u64>,
}

impl SpecDecoding {
    /// Draft tokens proposed: as sent, else steps × tokens per step, else from the histogram's
    /// length (one more than the tokens per step).
    pub fn draft_tokens(&self) -> Option<u64> {
        let per_step = self
            .num_spec_tokens
            .or_else(|| (self.acceptance_histogram.len() as u64).checked_sub(1))
            .filter(|&k| k > 0);
        self.num_draft_tokens
            .or_else(|| per_step.map(|k| k * self.num_spec_steps))
    }

    /// An object the figures can use: counts that agree with each other.
    fn is_consistent(&self) -> bool {
        let finite =
            self.mean_acceptance_length.is_finite() && self.draft_acceptance_rate.is_finite();
        let within = self
            .draft_tokens()
            .is_none_or(|d| self.num_accepted_draft_tokens <= d);
        finite && within
    }
}

/// `metrics.speculative_decoding`: an object of vLLM's shape, or none (anything else, or an
/// object whose counts contradict each other).
pub fn lenient_spec_decoding<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<SpecDecoding>, D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value::<SpecDecoding>(value)
        .ok()
        .filter(SpecDecoding::is_consistent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Holder {
        #[serde(deserialize_with = "lenient_spec_decoding")]
        s: Option<SpecDecoding>,
    }

    fn read(json: &str) -> Option<SpecDecoding> {
        serde_json::from_str::<Holder>(json).expect("holder").s
    }

    #[test]
    fn reads_vllms_object_and_drops_odd_ones() {
        let s = read(
            r#"{"s":{"mean_acceptance_length":2.5,"draft_acceptance_rate":0.5,"acceptance_histogram":[1,0,1,2],"num_spec_steps":4,"num_accepted_draft_tokens":8,"num_draft_tokens":12,"num_spec_tokens":3}}"#,
        )
        .expect("vLLM's shape");
        assert_eq!(s.draft_tokens(), Some(12));
        assert_eq!(s.acceptance_histogram, vec![1, 0, 1, 2]);
        // Without num_draft_tokens: steps × tokens per step, read from the histogram.
        let s = read(
            r#"{"s":{"mean_acceptance_length":2.5,"draft_acceptance_rate":0.5,"acceptance_histogram":[1,0,1,2],"num_spec_steps":4,"num_accepted_draft_tokens":8}}"#,
        )
        .expect("without draft tokens");
        assert_eq!(s.draft_tokens(), Some(12));
        assert_eq!(read(r#"{"s":null}"#), None);
        assert_eq!(read(r#"{"s":"x"}"#), None);
        assert_eq!(read(r#"{"s":{"mean_acceptance_length":2}}"#), None);
        // More accepted than drafted contradicts itself.
        assert_eq!(
            read(
                r#"{"s":{"mean_acceptance_length":2,"draft_acceptance_rate":2,"num_spec_steps":1,"num_accepted_draft_tokens":5,"num_draft_tokens":3}}"#
            ),
            None
        );
    }
}
