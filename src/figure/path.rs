//! Paths to a figure of a phase (`ttft.p95`, `errors`, …), as plans, `compare`, gates and the
//! history name them: the scalars and distributions, parsing and printing, units and which
//! way is better. Reading a path's value out of a report is `report::model::figure_path`.

use std::fmt;
use std::str::FromStr;

use super::{Better, FIGURES, Figure, Stat, Unit};

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
    /// Reasoning tokens of the successful requests whose reasoning is known.
    TotalReasoningTokens,
    /// Their output tokens less reasoning tokens.
    TotalContentTokens,
    /// Content tokens per second, beside the output rate.
    ContentTokensPerSecond,
    /// Speculative decoding: Σ accepted / Σ drafted draft tokens over the phase's requests.
    SpecAcceptanceRate,
    /// Speculative decoding: 1 + Σ accepted / Σ verify steps.
    SpecAcceptanceLength,
    /// The target's `cost` per million output tokens over the window.
    CostPerMillionOutputTokens,
    /// The target's `cost` per million tokens (input and output) over the window.
    CostPerMillionTokens,
    /// The power gauge's mean over the window, in watts.
    MeanPowerWatts,
    /// Joules the window took per output token.
    JoulesPerOutputToken,
    /// Joules the window took per request.
    JoulesPerRequest,
    /// Structured output: share of checked replies that satisfied the `response_format`.
    ValidShare,
    /// `compare_to`: relative change of TTFT p50 over the compared phase.
    OverheadTtft,
    /// `compare_to`: relative change of TPOT p50.
    OverheadTpot,
    /// `compare_to`: relative change of per-request output tokens/s (`decode_tok_s`) p50.
    OverheadDecodeTokS,
    /// Scored workloads: share of scored replies that answered their `expected`.
    Accuracy,
}

const SCALARS: [(Scalar, &str); 34] = [
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
    (Scalar::TotalReasoningTokens, "total_reasoning_tokens"),
    (Scalar::TotalContentTokens, "total_content_tokens"),
    (Scalar::ContentTokensPerSecond, "content_tokens_per_second"),
    (Scalar::SpecAcceptanceRate, "spec_decode.acceptance_rate"),
    (
        Scalar::SpecAcceptanceLength,
        "spec_decode.acceptance_length",
    ),
    (
        Scalar::CostPerMillionOutputTokens,
        "cost_per_million_output_tokens",
    ),
    (Scalar::CostPerMillionTokens, "cost_per_million_tokens"),
    (Scalar::MeanPowerWatts, "energy.mean_watts"),
    (
        Scalar::JoulesPerOutputToken,
        "energy.joules_per_output_token",
    ),
    (Scalar::JoulesPerRequest, "energy.joules_per_request"),
    (Scalar::ValidShare, "valid_share"),
    (Scalar::OverheadTtft, "overhead.ttft_p50"),
    (Scalar::OverheadTpot, "overhead.tpot_p50"),
    (Scalar::OverheadDecodeTokS, "overhead.decode_tok_s_p50"),
    (Scalar::Accuracy, "accuracy"),
];

/// The counts and rates `compare` lists for every matched phase, before the figures.
const COMPARED_SCALARS: [Scalar; 22] = [
    Scalar::Requests,
    Scalar::Errors,
    Scalar::ErrorRate,
    Scalar::OutputTokensPerSecond,
    Scalar::RequestRate,
    Scalar::InputsPerSecond,
    Scalar::InputTokensPerSecond,
    Scalar::RequestBytesPerSecond,
    Scalar::ImagesPerSecond,
    Scalar::ContentTokensPerSecond,
    Scalar::SpecAcceptanceRate,
    Scalar::SpecAcceptanceLength,
    Scalar::CostPerMillionOutputTokens,
    Scalar::CostPerMillionTokens,
    Scalar::MeanPowerWatts,
    Scalar::JoulesPerOutputToken,
    Scalar::JoulesPerRequest,
    Scalar::ValidShare,
    Scalar::OverheadTtft,
    Scalar::OverheadTpot,
    Scalar::OverheadDecodeTokS,
    Scalar::Accuracy,
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
                Scalar::ErrorRate
                | Scalar::CachedTokenRatio
                | Scalar::GoodputFraction
                | Scalar::ValidShare
                | Scalar::OverheadTtft
                | Scalar::OverheadTpot
                | Scalar::OverheadDecodeTokS
                | Scalar::Accuracy => Unit::Ratio,
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
                Scalar::TotalReasoningTokens | Scalar::TotalContentTokens => Unit::Tokens,
                Scalar::ContentTokensPerSecond => Unit::TokensPerSecond,
                Scalar::SpecAcceptanceRate => Unit::Ratio,
                Scalar::SpecAcceptanceLength => Unit::Count,
                Scalar::CostPerMillionOutputTokens | Scalar::CostPerMillionTokens => {
                    Unit::PricePerMillionTokens
                }
                Scalar::MeanPowerWatts => Unit::Watts,
                Scalar::JoulesPerOutputToken => Unit::JoulesPerToken,
                Scalar::JoulesPerRequest => Unit::JoulesPerRequest,
            },
        }
    }

    pub fn better(self) -> Better {
        match self {
            FigurePath::Dist(figure, _) => figure.spec().better,
            FigurePath::Scalar(s) => match s {
                Scalar::Errors
                | Scalar::ErrorRate
                | Scalar::CostPerMillionOutputTokens
                | Scalar::CostPerMillionTokens
                | Scalar::JoulesPerOutputToken
                | Scalar::JoulesPerRequest
                | Scalar::OverheadTtft
                | Scalar::OverheadTpot => Better::Lower,
                Scalar::OutputTokensPerSecond
                | Scalar::InputsPerSecond
                | Scalar::InputTokensPerSecond
                | Scalar::RequestRate
                | Scalar::Success
                | Scalar::CachedTokenRatio
                | Scalar::GoodputRequestRate
                | Scalar::GoodputFraction
                | Scalar::ContentTokensPerSecond
                | Scalar::SpecAcceptanceRate
                | Scalar::SpecAcceptanceLength
                | Scalar::ValidShare
                | Scalar::OverheadDecodeTokS
                | Scalar::Accuracy => Better::Higher,
                Scalar::Requests
                | Scalar::Elapsed
                | Scalar::TotalInputTokens
                | Scalar::TotalInputs
                | Scalar::TotalOutputTokens
                | Scalar::RequestsInFlight
                | Scalar::TokensInFlight
                | Scalar::RequestBytesPerSecond
                | Scalar::ImagesPerSecond
                | Scalar::TotalReasoningTokens
                | Scalar::TotalContentTokens
                | Scalar::MeanPowerWatts => Better::Neither,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
