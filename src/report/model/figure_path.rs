//! A figure path's value in a report: lookup in a phase and per-request samples. The paths
//! themselves (parsing, units, which way is better) are `figure::path`'s.

use super::PhaseResult;
pub use crate::figure::path::{
    FigurePath, FigurePathError, Scalar, compared_paths, figure_path_names, known_figure_paths,
    repeated_paths,
};
pub use crate::figure::{Better, Stat, Unit};

impl FigurePath {
    /// The phase's figure, in the unit of [`FigurePath::unit`].
    pub fn value(self, phase: &PhaseResult) -> Option<f64> {
        let s = &phase.summary;
        match self {
            // Imported summaries carry no mean; `samples == 0` marks it unknown.
            FigurePath::Dist(_, Stat::Mean) if self.dist_samples(phase) == Some(0) => None,
            FigurePath::Dist(figure, stat) => {
                phase.summary.distribution(figure).map(|d| stat.of(d))
            }
            FigurePath::Scalar(sc) => match sc {
                Scalar::Requests => Some(s.requests as f64),
                Scalar::Success => Some(s.success as f64),
                Scalar::Errors => Some(s.errors as f64),
                Scalar::ErrorRate => (s.requests > 0).then(|| s.errors as f64 / s.requests as f64),
                Scalar::Elapsed => Some(s.elapsed),
                // Embeddings and rerank generate nothing: no figure rather than a zero.
                Scalar::OutputTokensPerSecond => {
                    (!s.encodes()).then_some(s.output_tokens_per_second)
                }
                Scalar::InputsPerSecond => s.inputs_per_second,
                Scalar::InputTokensPerSecond => s.input_tokens_per_second,
                Scalar::TotalInputs => s.total_inputs.map(|n| n as f64),
                Scalar::RequestRate => Some(s.request_rate),
                Scalar::TotalInputTokens => Some(s.total_input_tokens as f64),
                Scalar::TotalOutputTokens => Some(s.total_output_tokens as f64),
                Scalar::CachedTokenRatio => s.cached_token_ratio,
                Scalar::GoodputRequestRate => s.goodput.as_ref().map(|g| g.request_rate),
                Scalar::GoodputFraction => s.goodput.as_ref().map(|g| g.fraction),
                Scalar::RequestsInFlight => s.in_flight.map(|h| h.requests),
                Scalar::TokensInFlight => s.in_flight.map(|h| h.tokens),
                Scalar::RequestBytesPerSecond => s.request_bytes_per_second,
                Scalar::ImagesPerSecond => s.images_per_second,
                Scalar::TotalReasoningTokens => s
                    .reasoning
                    .as_ref()
                    .map(|r| r.total_reasoning_tokens as f64),
                Scalar::TotalContentTokens => {
                    s.reasoning.as_ref().map(|r| r.total_content_tokens as f64)
                }
                Scalar::ContentTokensPerSecond => {
                    s.reasoning.as_ref().map(|r| r.content_tokens_per_second)
                }
                Scalar::SpecAcceptanceRate => {
                    s.spec_decode.as_ref().and_then(|d| d.acceptance_rate)
                }
                Scalar::SpecAcceptanceLength => {
                    s.spec_decode.as_ref().and_then(|d| d.acceptance_length)
                }
                Scalar::CostPerMillionOutputTokens => {
                    phase.cost.as_ref()?.per_million_output_tokens
                }
                Scalar::CostPerMillionTokens => phase.cost.as_ref()?.per_million_tokens,
                Scalar::MeanPowerWatts => phase.energy.as_ref()?.mean_watts,
                Scalar::JoulesPerOutputToken => phase.energy.as_ref()?.joules_per_output_token,
                Scalar::JoulesPerRequest => phase.energy.as_ref()?.joules_per_request,
                Scalar::ValidShare => s.structured_output.as_ref().map(|o| o.valid_share),
                Scalar::OverheadTtft => overhead(phase, "ttft.p50"),
                Scalar::OverheadTpot => overhead(phase, "tpot.p50"),
                Scalar::OverheadDecodeTokS => overhead(phase, "decode_tok_s.p50"),
                Scalar::Accuracy => s.accuracy.as_ref().map(|a| a.accuracy),
            },
        }
    }

    fn dist_samples(self, phase: &PhaseResult) -> Option<u64> {
        match self {
            FigurePath::Dist(figure, _) => phase.summary.distribution(figure).map(|d| d.samples),
            FigurePath::Scalar(_) => None,
        }
    }

    /// Per-request values a bootstrap can resample, with the statistic that reduces them;
    /// `None` for figures that are not a statistic of independent per-request values.
    pub fn samples(self, phase: &PhaseResult) -> Option<(Vec<f64>, Stat)> {
        if phase.request_timings.is_empty() {
            return None;
        }
        match self {
            FigurePath::Dist(figure, stat) => {
                let v: Vec<f64> = phase
                    .request_timings
                    .iter()
                    .filter_map(|r| r.value(figure))
                    .collect();
                (!v.is_empty()).then_some((v, stat))
            }
            FigurePath::Scalar(Scalar::ErrorRate) => Some((
                phase
                    .request_timings
                    .iter()
                    .map(|r| if r.error.is_none() { 0.0 } else { 1.0 })
                    .collect(),
                Stat::Mean,
            )),
            FigurePath::Scalar(share @ (Scalar::ValidShare | Scalar::Accuracy)) => {
                let v: Vec<f64> = phase
                    .request_timings
                    .iter()
                    .filter(|r| r.is_ok())
                    .filter_map(|r| {
                        if share == Scalar::Accuracy {
                            r.correct
                        } else {
                            r.valid
                        }
                    })
                    .map(|yes| if yes { 1.0 } else { 0.0 })
                    .collect();
                (!v.is_empty()).then_some((v, Stat::Mean))
            }
            FigurePath::Scalar(_) => None,
        }
    }

    /// A share's Wilson 95% interval, for the scalars that are shares of replies.
    pub fn share_interval(self, phase: &PhaseResult) -> Option<[f64; 2]> {
        match self {
            FigurePath::Scalar(Scalar::ValidShare) => phase
                .summary
                .structured_output
                .as_ref()
                .map(|o| o.valid_share_ci95),
            FigurePath::Scalar(Scalar::Accuracy) => {
                phase.summary.accuracy.as_ref().map(|a| a.accuracy_ci95)
            }
            _ => None,
        }
    }
}

/// The relative change of one overhead figure (`tpot.p50`), when the phase has it.
fn overhead(phase: &PhaseResult, figure: &str) -> Option<f64> {
    let o = phase.overhead.as_ref()?;
    let f = o.figures.iter().find(|f| f.figure == figure)?;
    Some(f.relative_change).filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quantile::PercentileMethod;

    #[test]
    fn gate_statistic_equals_the_reports_figure_bit_for_bit() {
        // Five values whose p95 is where a plain lerp, a + (b − a)·t, and numpy's lerp part in
        // the last bit (1.9242 against 1.9242000000000001).
        let sorted = [0.771, 0.896, 1.607, 1.849, 1.943];
        let pos = 0.95 * (sorted.len() - 1) as f64;
        let lo = pos.floor() as usize;
        let plain_lerp = sorted[lo] + (sorted[lo + 1] - sorted[lo]) * (pos - lo as f64);
        let report = crate::metrics::distribution(&sorted, PercentileMethod::Linear).unwrap();
        assert_ne!(plain_lerp.to_bits(), report.p95.to_bits());
        for (stat, figure) in [
            (Stat::P50, report.p50),
            (Stat::P95, report.p95),
            (Stat::P99, report.p99),
            (Stat::Mean, report.mean),
        ] {
            let gate = stat.of_sorted(&sorted, PercentileMethod::Linear);
            assert_eq!(gate.to_bits(), figure.to_bits(), "{stat:?}");
            assert_eq!(stat.of(&report).to_bits(), figure.to_bits(), "{stat:?}");
        }
        let nearest = crate::metrics::distribution(&sorted, PercentileMethod::NearestRank).unwrap();
        assert_eq!(
            Stat::P95.of_sorted(&sorted, PercentileMethod::NearestRank),
            nearest.p95
        );
    }
}
