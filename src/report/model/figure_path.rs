//! Paths to a figure in a report (`ttft.p95`, `errors`, …), as compare and gates name them: parsing, lookup in a phase, units and per-request samples.

use std::fmt;
use std::str::FromStr;

use super::PhaseResult;
pub use crate::figure::{Better, Unit};
use crate::figure::{FIGURES, Figure};
pub use crate::metrics::Stat;

/// A figure of one phase that can be compared and gated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FigurePath {
    Scalar(Scalar),
    Dist(Figure, Stat),
}

/// A single number per phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scalar {
    Requests,
    Success,
    Errors,
    /// `errors / requests`.
    ErrorRate,
    Elapsed,
    OutputTokensPerSecond,
    RequestRate,
    TotalInputTokens,
    TotalOutputTokens,
    CachedTokenRatio,
    GoodputRequestRate,
    GoodputFraction,
    /// Embeddings and rerank: texts or documents per second.
    InputsPerSecond,
    InputTokensPerSecond,
    TotalInputs,
    /// Time-weighted mean requests in flight over the window.
    RequestsInFlight,
    /// Time-weighted mean tokens (prompt + generated so far) in flight.
    TokensInFlight,
    /// Request body bytes sent per second.
    RequestBytesPerSecond,
    /// Images sent per second.
    ImagesPerSecond,
}

const SCALARS: [(Scalar, &str); 19] = [
    (Scalar::Requests, "requests"),
    (Scalar::Success, "success"),
    (Scalar::Errors, "errors"),
    (Scalar::ErrorRate, "error_rate"),
    (Scalar::Elapsed, "elapsed"),
    (Scalar::OutputTokensPerSecond, "output_tokens_per_second"),
    (Scalar::RequestRate, "request_rate"),
    (Scalar::TotalInputTokens, "total_input_tokens"),
    (Scalar::TotalOutputTokens, "total_output_tokens"),
    (Scalar::CachedTokenRatio, "cached_token_ratio"),
    (Scalar::GoodputRequestRate, "goodput.request_rate"),
    (Scalar::GoodputFraction, "goodput.fraction"),
    (Scalar::InputsPerSecond, "inputs_per_second"),
    (Scalar::InputTokensPerSecond, "input_tokens_per_second"),
    (Scalar::TotalInputs, "total_inputs"),
    (Scalar::RequestsInFlight, "in_flight.requests"),
    (Scalar::TokensInFlight, "in_flight.tokens"),
    (Scalar::RequestBytesPerSecond, "request_bytes_per_second"),
    (Scalar::ImagesPerSecond, "images_per_second"),
];

/// The counts and rates `compare` lists for every matched phase, before the figures.
const COMPARED_SCALARS: [Scalar; 9] = [
    Scalar::Requests,
    Scalar::Errors,
    Scalar::ErrorRate,
    Scalar::OutputTokensPerSecond,
    Scalar::RequestRate,
    Scalar::InputsPerSecond,
    Scalar::InputTokensPerSecond,
    Scalar::RequestBytesPerSecond,
    Scalar::ImagesPerSecond,
];

/// What `compare` lists for every matched phase (those either side has): the counts and
/// rates, then each figure's statistics the figure table marks `compared`.
pub fn compared_paths() -> Vec<FigurePath> {
    let scalars = COMPARED_SCALARS.map(FigurePath::Scalar);
    let figures = FIGURES.iter().flat_map(|s| {
        s.compared
            .iter()
            .map(|&stat| FigurePath::Dist(s.figure, stat))
    });
    scalars.into_iter().chain(figures).collect()
}

/// What a repeat group judges its arms on, round by round: each figure's statistics the
/// figure table marks `repeated`, then output throughput.
pub fn repeated_paths() -> Vec<FigurePath> {
    let figures = FIGURES.iter().flat_map(|s| {
        s.repeated
            .iter()
            .map(|&stat| FigurePath::Dist(s.figure, stat))
    });
    let scalars = [FigurePath::Scalar(Scalar::OutputTokensPerSecond)];
    figures.chain(scalars).collect()
}

/// Every figure path in full (`errors`, `ttft.p99`, …), for "did you mean" hints.
pub fn figure_path_names() -> Vec<String> {
    let mut names: Vec<String> = SCALARS.iter().map(|(_, n)| n.to_string()).collect();
    for spec in &FIGURES {
        names.extend(
            Stat::ALL
                .iter()
                .map(|stat| format!("{}.{}", spec.name, stat.name())),
        );
    }
    names
}

/// Why `text` is not a figure path, with a did-you-mean among the figure paths and `also`
/// (names the caller accepts besides them), else the list of what may be written.
pub fn explain(text: &str, e: &FigurePathError, also: &[&str]) -> String {
    if !matches!(e, FigurePathError::Unknown(_)) {
        return e.to_string();
    }
    let mut names = figure_path_names();
    names.extend(also.iter().map(|n| n.to_string()));
    match crate::plan::diag::did_you_mean(text, names.iter().map(String::as_str)) {
        Some(hint) => format!("{e}; {hint}"),
        None => {
            let known = std::iter::once(known_figure_paths())
                .chain(also.iter().map(|n| n.to_string()))
                .collect::<Vec<_>>()
                .join(", ");
            format!("{e}; known metrics: {known}")
        }
    }
}

/// Every metric name a user may write, for error messages.
pub fn known_figure_paths() -> String {
    let mut names: Vec<String> = SCALARS.iter().map(|(_, n)| n.to_string()).collect();
    names.extend(
        FIGURES
            .iter()
            .map(|s| format!("{}.{{p50,p95,p99,min,max,mean}}", s.name)),
    );
    names.join(", ")
}

/// Why a metric path did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FigurePathError {
    #[error("`{0}` is a distribution; name a statistic, e.g. `{0}.p95`")]
    MissingStat(String),
    #[error("unknown statistic `{stat}` in `{path}`; use p50, p95, p99, min, max or mean")]
    UnknownStat { path: String, stat: String },
    #[error("unknown metric `{0}`")]
    Unknown(String),
}

impl FromStr for FigurePath {
    type Err = FigurePathError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let path = s.trim();
        if let Some((scalar, _)) = SCALARS.iter().find(|(_, n)| *n == path) {
            return Ok(FigurePath::Scalar(*scalar));
        }
        if Figure::named(path).is_some() {
            return Err(FigurePathError::MissingStat(path.to_string()));
        }
        let Some((head, stat)) = path.rsplit_once('.') else {
            return Err(FigurePathError::Unknown(path.to_string()));
        };
        let Some(figure) = Figure::named(head) else {
            return Err(FigurePathError::Unknown(path.to_string()));
        };
        let Some(known) = Stat::ALL.into_iter().find(|s| s.name() == stat) else {
            return Err(FigurePathError::UnknownStat {
                path: path.to_string(),
                stat: stat.to_string(),
            });
        };
        Ok(FigurePath::Dist(figure, known))
    }
}

impl fmt::Display for FigurePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FigurePath::Scalar(s) => f.write_str(s.name()),
            FigurePath::Dist(figure, s) => write!(f, "{}.{}", figure.name(), s.name()),
        }
    }
}

impl Scalar {
    pub fn name(self) -> &'static str {
        SCALARS
            .iter()
            .find(|(s, _)| *s == self)
            .map_or("?", |(_, n)| n)
    }
}

impl FigurePath {
    pub fn unit(self) -> Unit {
        match self {
            FigurePath::Dist(figure, _) => figure.spec().unit,
            FigurePath::Scalar(s) => match s {
                Scalar::Requests | Scalar::Success | Scalar::Errors => Unit::Count,
                Scalar::ErrorRate | Scalar::CachedTokenRatio | Scalar::GoodputFraction => {
                    Unit::Ratio
                }
                Scalar::Elapsed => Unit::Seconds,
                Scalar::OutputTokensPerSecond | Scalar::InputTokensPerSecond => {
                    Unit::TokensPerSecond
                }
                Scalar::InputsPerSecond => Unit::InputsPerSecond,
                Scalar::RequestBytesPerSecond => Unit::BytesPerSecond,
                Scalar::ImagesPerSecond => Unit::ImagesPerSecond,
                Scalar::TotalInputs | Scalar::RequestsInFlight => Unit::Count,
                Scalar::TokensInFlight => Unit::Tokens,
                Scalar::RequestRate | Scalar::GoodputRequestRate => Unit::RequestsPerSecond,
                Scalar::TotalInputTokens | Scalar::TotalOutputTokens => Unit::Tokens,
            },
        }
    }

    pub fn better(self) -> Better {
        match self {
            FigurePath::Dist(figure, _) => figure.spec().better,
            FigurePath::Scalar(s) => match s {
                Scalar::Errors | Scalar::ErrorRate => Better::Lower,
                Scalar::OutputTokensPerSecond
                | Scalar::InputsPerSecond
                | Scalar::InputTokensPerSecond
                | Scalar::RequestRate
                | Scalar::Success
                | Scalar::CachedTokenRatio
                | Scalar::GoodputRequestRate
                | Scalar::GoodputFraction => Better::Higher,
                Scalar::Requests
                | Scalar::Elapsed
                | Scalar::TotalInputTokens
                | Scalar::TotalInputs
                | Scalar::TotalOutputTokens
                | Scalar::RequestsInFlight
                | Scalar::TokensInFlight
                | Scalar::RequestBytesPerSecond
                | Scalar::ImagesPerSecond => Better::Neither,
            },
        }
    }

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
            FigurePath::Scalar(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PercentileMethod;

    #[test]
    fn parses_and_prints_paths() {
        for p in [
            "ttft.p95",
            "errors",
            "goodput.fraction",
            "decode_tok_s.mean",
            "in_flight.requests",
        ] {
            let m: FigurePath = p.parse().unwrap();
            assert_eq!(m.to_string(), p);
        }
        assert_eq!(
            "ttft".parse::<FigurePath>(),
            Err(FigurePathError::MissingStat("ttft".into()))
        );
        assert!(matches!(
            "ttft.p90".parse::<FigurePath>(),
            Err(FigurePathError::UnknownStat { .. })
        ));
        assert!(matches!(
            "latency".parse::<FigurePath>(),
            Err(FigurePathError::Unknown(_))
        ));
        // Every per-request figure of the one table is a path, and prints back the same.
        for name in figure_path_names() {
            let path: FigurePath = name.parse().unwrap();
            assert_eq!(path.to_string(), name);
        }
        assert_eq!(
            "server_queue_ms.p99".parse::<FigurePath>(),
            Ok(FigurePath::Dist(Figure::ServerQueue, Stat::P99))
        );
    }

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
