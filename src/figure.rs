//! Every per-request figure a phase reports as a distribution, in one table: its name (as
//! plans, `compare` and gates write it), unit, which way is better, whether its percentiles
//! carry intervals, which requests count, and which columns the markdown and HTML phase
//! tables give it. The tally, the summaries, figure paths, `compare`, `until` and the phase
//! tables read it; adding a figure is a variant and a row here, its
//! per-request value in `client::record` (`RequestRecord::value`), and its slot in
//! `metrics::summary`.

/// A per-request figure with a per-phase distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Figure {
    Ttft,
    Tpot,
    E2e,
    TimeToFirstOutput,
    MeanInterTokenLatency,
    MaxInterChunk,
    DecodeTokS,
    InputTokens,
    OutputTokens,
    /// Time the server says the request waited in its scheduler queue (vLLM).
    ServerQueue,
    SendLag,
    TtftMinusServerPrompt,
    E2eMinusServerTotal,
}

/// An order statistic or the mean of a distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stat {
    P50,
    P95,
    P99,
    Min,
    Max,
    Mean,
}

impl Stat {
    pub const ALL: [Stat; 6] = [
        Stat::P50,
        Stat::P95,
        Stat::P99,
        Stat::Min,
        Stat::Max,
        Stat::Mean,
    ];

    /// The percentiles, which carry intervals.
    pub const PERCENTILES: [Stat; 3] = [Stat::P50, Stat::P95, Stat::P99];

    /// As figure paths write it (`p99` in `ttft.p99`).
    pub fn name(self) -> &'static str {
        match self {
            Stat::P50 => "p50",
            Stat::P95 => "p95",
            Stat::P99 => "p99",
            Stat::Min => "min",
            Stat::Max => "max",
            Stat::Mean => "mean",
        }
    }

    /// A percentile's quantile (0–1); `None` for min, max and the mean.
    pub fn quantile(self) -> Option<f64> {
        match self {
            Stat::P50 => Some(0.50),
            Stat::P95 => Some(0.95),
            Stat::P99 => Some(0.99),
            Stat::Min | Stat::Max | Stat::Mean => None,
        }
    }
}

/// What a figure's numbers mean, for formatting and for gate thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    Millis,
    TokensPerSecond,
    RequestsPerSecond,
    InputsPerSecond,
    Count,
    Tokens,
    /// A fraction in `[0, 1]`.
    Ratio,
}

/// Which direction is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
    Neither,
}

/// Which of a phase's measured requests a figure's distribution covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// Successful requests.
    Succeeded,
    /// Every request, failed ones too (when it was sent is known either way).
    Every,
    /// Successful requests that carried the server's own timing.
    ServerTimed,
}

/// A figure's columns in the markdown and HTML phase tables.
#[derive(Debug, Clone, Copy)]
pub struct Shown {
    /// Column heading, before the statistic (`TTFT` in `TTFT p50 (ms)`).
    pub label: &'static str,
    pub stats: &'static [Stat],
    pub when: ShownWhen,
}

/// When a report's phase table has a figure's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShownWhen {
    Always,
    /// When any phase generates tokens (not only embeddings or rerank).
    Generating,
    /// When any phase measured it (a server that reports its own timing).
    Measured,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub figure: Figure,
    /// As plans, `compare` and gates write it (`ttft` in `ttft.p99`).
    pub name: &'static str,
    pub unit: Unit,
    pub better: Better,
    /// Its p50/p95/p99 carry 95% intervals.
    pub intervals: bool,
    pub counted: Counted,
    /// Its columns in the phase tables; `None` keeps it to report.json, gates and `compare`.
    pub shown: Option<Shown>,
}

const fn spec(
    figure: Figure,
    name: &'static str,
    unit: Unit,
    better: Better,
    intervals: bool,
    counted: Counted,
) -> Spec {
    Spec {
        figure,
        name,
        unit,
        better,
        intervals,
        counted,
        shown: None,
    }
}

/// `spec` with columns in the phase tables.
const fn shown(spec: Spec, label: &'static str, stats: &'static [Stat], when: ShownWhen) -> Spec {
    Spec {
        shown: Some(Shown { label, stats, when }),
        ..spec
    }
}

use Better::{Higher, Lower, Neither};
use Counted::{Every, ServerTimed, Succeeded};

/// Every figure, in [`Figure`]'s order.
pub static FIGURES: [Spec; 13] = [
    shown(
        spec(Figure::Ttft, "ttft", Unit::Seconds, Lower, true, Succeeded),
        "TTFT",
        &[Stat::P50, Stat::P95, Stat::P99],
        ShownWhen::Generating,
    ),
    shown(
        spec(Figure::Tpot, "tpot", Unit::Seconds, Lower, true, Succeeded),
        "TPOT",
        &[Stat::P50, Stat::P95],
        ShownWhen::Generating,
    ),
    shown(
        spec(Figure::E2e, "e2e", Unit::Seconds, Lower, true, Succeeded),
        "E2E",
        &[Stat::P50, Stat::P95],
        ShownWhen::Always,
    ),
    spec(
        Figure::TimeToFirstOutput,
        "time_to_first_output",
        Unit::Seconds,
        Lower,
        false,
        Succeeded,
    ),
    spec(
        Figure::MeanInterTokenLatency,
        "mean_inter_token_latency_ms",
        Unit::Millis,
        Lower,
        true,
        Succeeded,
    ),
    spec(
        Figure::MaxInterChunk,
        "max_inter_chunk_ms",
        Unit::Millis,
        Lower,
        false,
        Succeeded,
    ),
    spec(
        Figure::DecodeTokS,
        "decode_tok_s",
        Unit::TokensPerSecond,
        Higher,
        false,
        Succeeded,
    ),
    spec(
        Figure::InputTokens,
        "input_tokens",
        Unit::Tokens,
        Neither,
        false,
        Succeeded,
    ),
    spec(
        Figure::OutputTokens,
        "output_tokens",
        Unit::Tokens,
        Neither,
        false,
        Succeeded,
    ),
    shown(
        spec(
            Figure::ServerQueue,
            "server_queue_ms",
            Unit::Millis,
            Lower,
            false,
            Succeeded,
        ),
        "Server queue",
        &[Stat::P50, Stat::P99],
        ShownWhen::Measured,
    ),
    spec(
        Figure::SendLag,
        "send_lag_ms",
        Unit::Millis,
        Lower,
        false,
        Every,
    ),
    spec(
        Figure::TtftMinusServerPrompt,
        "ttft_minus_server_prompt_ms",
        Unit::Millis,
        Lower,
        false,
        ServerTimed,
    ),
    spec(
        Figure::E2eMinusServerTotal,
        "e2e_minus_server_total_ms",
        Unit::Millis,
        Lower,
        false,
        ServerTimed,
    ),
];

impl Figure {
    /// Every figure, in declaration order.
    pub fn all() -> impl Iterator<Item = Figure> {
        FIGURES.iter().map(|s| s.figure)
    }

    /// Its place in [`FIGURES`].
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn spec(self) -> &'static Spec {
        &FIGURES[self.index()]
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The figure `name` names.
    pub fn named(name: &str) -> Option<Figure> {
        FIGURES.iter().find(|s| s.name == name).map(|s| s.figure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_declaration_order_with_unique_names() {
        for (i, spec) in FIGURES.iter().enumerate() {
            assert_eq!(spec.figure.index(), i, "{}", spec.name);
            assert_eq!(Figure::named(spec.name), Some(spec.figure));
        }
    }
}
