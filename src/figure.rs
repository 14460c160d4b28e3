//! Every per-request figure a phase reports as a distribution, in one table: its name (as
//! plans, `compare` and gates write it), unit, which way is better, whether its percentiles
//! carry intervals, which requests count, what it means, and where it is listed without
//! being asked for (the markdown and HTML phase tables, the sessions table, `compare`, repeat
//! groups). The tally, the summaries and their schema, figure paths, `compare`, `until`,
//! search and SLO objectives, the CSV and the tables read it; adding a figure is a variant
//! and a row here and its per-request value in `client::record` (`RequestRecord::value`).
//! [`path`] names one figure of a phase as plans, `compare` and gates write it.

pub mod path;

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
    /// Of the send lag, the wait for a free `max_concurrency` slot.
    SlotWait,
    /// The send lag less the slot wait: the client's own lateness.
    ClientSendLag,
    TtftMinusServerPrompt,
    E2eMinusServerTotal,
    CachedTokens,
    /// Time to the first tool-call delta, among replies that called a tool.
    TtftTool,
    ToolCallChunks,
    /// Bytes of the request's JSON body as sent.
    RequestBytes,
    /// Of the output tokens, the reasoning ones.
    ReasoningTokens,
    /// Output tokens less reasoning tokens.
    ContentTokens,
    /// The server's mean acceptance length per verify step, bonus token included (vLLM).
    SpecAcceptanceLength,
    /// The server's share of draft tokens accepted (vLLM).
    SpecAcceptanceRate,
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
    ImagesPerSecond,
    Bytes,
    BytesPerSecond,
    Count,
    Tokens,
    /// A fraction in `[0, 1]`.
    Ratio,
    /// Money in the target's `cost` currency per million tokens.
    PricePerMillionTokens,
    Watts,
    JoulesPerToken,
    JoulesPerRequest,
}

impl Unit {
    /// The unit a stored value is in, as a CSV or JSON column names it (`""` for a count).
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::Millis => "ms",
            Unit::TokensPerSecond => "tok/s",
            Unit::RequestsPerSecond => "req/s",
            Unit::InputsPerSecond => "inputs/s",
            Unit::ImagesPerSecond => "images/s",
            Unit::Bytes => "B",
            Unit::BytesPerSecond => "B/s",
            Unit::Count => "",
            Unit::Tokens => "tokens",
            Unit::Ratio => "ratio",
            Unit::PricePerMillionTokens => "per Mtok",
            Unit::Watts => "W",
            Unit::JoulesPerToken => "J/tok",
            Unit::JoulesPerRequest => "J/req",
        }
    }
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
    /// Successful requests, and cancelled ones whose first output had come: a true
    /// first-token time either way.
    FirstOutput,
    /// Every request, failed ones too (when it was sent is known either way).
    Every,
    /// Successful requests that carried the server's own timing.
    ServerTimed,
}

/// A figure's columns in a table: the phase table (markdown and HTML) or the sessions table.
#[derive(Debug, Clone, Copy)]
pub struct Shown {
    /// Column heading, before the statistic (`TTFT` in `TTFT p50 (ms)`).
    pub label: &'static str,
    pub stats: &'static [Stat],
    pub when: ShownWhen,
    /// Heading of a column counting the requests that have the figure (`tool calls` for the
    /// tool-call TTFT, which only replies that called a tool have).
    pub count: Option<&'static str>,
}

/// When a report's table has a figure's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShownWhen {
    Always,
    /// When any phase generates tokens (not only embeddings or rerank).
    Generating,
    /// When any phase (or turn) measured it.
    Measured,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub figure: Figure,
    /// As plans, `compare`, gates and report.json write it (`ttft` in `ttft.p99`).
    pub name: &'static str,
    pub unit: Unit,
    pub better: Better,
    /// Its p50/p95/p99 carry 95% intervals.
    pub intervals: bool,
    pub counted: Counted,
    /// Only requests that generate tokens have it: embeddings and rerank never do.
    pub generated: bool,
    /// What it is, in the report schema's words.
    pub doc: &'static str,
    /// The statistics `compare` lists for every matched phase where either side has it.
    pub compared: &'static [Stat],
    /// The statistics a repeat group judges its arms on, round by round.
    pub repeated: &'static [Stat],
    /// Its columns in the phase tables; `None` keeps it to report.json, gates and `compare`.
    pub shown: Option<Shown>,
    /// Its figures by turn in session workloads, and their columns in the sessions table;
    /// `None` leaves it out of the turns.
    pub by_turn: Option<Shown>,
}

/// A row with only its required columns; the rest are added by the methods below.
const fn row(
    figure: Figure,
    name: &'static str,
    unit: Unit,
    better: Better,
    counted: Counted,
    doc: &'static str,
) -> Spec {
    Spec {
        figure,
        name,
        unit,
        better,
        intervals: false,
        counted,
        generated: false,
        doc,
        compared: &[],
        repeated: &[],
        shown: None,
        by_turn: None,
    }
}

impl Spec {
    const fn intervals(self) -> Spec {
        Spec {
            intervals: true,
            ..self
        }
    }

    const fn generated(self) -> Spec {
        Spec {
            generated: true,
            ..self
        }
    }

    const fn compared(self, stats: &'static [Stat]) -> Spec {
        Spec {
            compared: stats,
            ..self
        }
    }

    const fn repeated(self, stats: &'static [Stat]) -> Spec {
        Spec {
            repeated: stats,
            ..self
        }
    }

    const fn shown(self, label: &'static str, stats: &'static [Stat], when: ShownWhen) -> Spec {
        Spec {
            shown: Some(columns(label, stats, when)),
            ..self
        }
    }

    const fn by_turn(self, columns: Shown) -> Spec {
        Spec {
            by_turn: Some(columns),
            ..self
        }
    }
}

const fn columns(label: &'static str, stats: &'static [Stat], when: ShownWhen) -> Shown {
    Shown {
        label,
        stats,
        when,
        count: None,
    }
}

use Better::{Higher, Lower, Neither};
use Counted::{Every, FirstOutput, ServerTimed, Succeeded};
use Stat::{Mean, P50, P95, P99};

/// Every figure, in [`Figure`]'s order.
pub static FIGURES: [Spec; 23] = [
    row(
        Figure::Ttft,
        "ttft",
        Unit::Seconds,
        Lower,
        FirstOutput,
        "Request start to the first non-empty content delta, seconds.",
    )
    .intervals()
    .generated()
    .compared(&Stat::PERCENTILES)
    .repeated(&[P50])
    .shown("TTFT", &Stat::PERCENTILES, ShownWhen::Generating)
    .by_turn(columns("TTFT", &[P50, P99], ShownWhen::Always)),
    row(
        Figure::Tpot,
        "tpot",
        Unit::Seconds,
        Lower,
        Succeeded,
        "Seconds per output token after the first: (e2e − ttft) / (output tokens − 1).",
    )
    .intervals()
    .generated()
    .compared(&Stat::PERCENTILES)
    .repeated(&[P50])
    .shown("TPOT", &[P50, P95], ShownWhen::Generating),
    row(
        Figure::E2e,
        "e2e",
        Unit::Seconds,
        Lower,
        Succeeded,
        "Request start to the end of the response, seconds.",
    )
    .intervals()
    .compared(&Stat::PERCENTILES)
    .repeated(&[P50])
    .shown("E2E", &[P50, P95], ShownWhen::Always),
    row(
        Figure::TimeToFirstOutput,
        "time_to_first_output",
        Unit::Seconds,
        Lower,
        FirstOutput,
        "Request start to the first non-empty reasoning or content delta, seconds.",
    )
    .generated(),
    row(
        Figure::MeanInterTokenLatency,
        "mean_inter_token_latency_ms",
        Unit::Millis,
        Lower,
        Succeeded,
        "Per-request mean inter-token latency, milliseconds.",
    )
    .intervals()
    .generated(),
    row(
        Figure::MaxInterChunk,
        "max_inter_chunk_ms",
        Unit::Millis,
        Lower,
        Succeeded,
        "Per-request largest gap between chunks, milliseconds.",
    )
    .generated(),
    row(
        Figure::DecodeTokS,
        "decode_tok_s",
        Unit::TokensPerSecond,
        Higher,
        Succeeded,
        "Per-request decode rate after the first output, tokens per second.",
    )
    .generated(),
    row(
        Figure::InputTokens,
        "input_tokens",
        Unit::Tokens,
        Neither,
        Succeeded,
        "Server-reported prompt tokens.",
    )
    .by_turn(columns("Prompt tokens", &[Mean], ShownWhen::Always)),
    row(
        Figure::OutputTokens,
        "output_tokens",
        Unit::Tokens,
        Neither,
        Succeeded,
        "Output tokens: the server's usage, else counted from the stream.",
    )
    .generated(),
    row(
        Figure::ServerQueue,
        "server_queue_ms",
        Unit::Millis,
        Lower,
        Succeeded,
        "Milliseconds the server says requests waited in its queue (vLLM's per-request \
        metrics).",
    )
    .shown("Server queue", &[P50, P99], ShownWhen::Measured),
    row(
        Figure::SendLag,
        "send_lag_ms",
        Unit::Millis,
        Lower,
        Every,
        "Open loop: how far sends lagged their schedule, milliseconds, any wait for a \
        max_concurrency slot included.",
    ),
    row(
        Figure::SlotWait,
        "slot_wait_ms",
        Unit::Millis,
        Lower,
        Every,
        "Open loop under max_concurrency: of the send lag, milliseconds waiting for a free \
        slot (the plan's cap held the send back, not the client).",
    ),
    row(
        Figure::ClientSendLag,
        "client_send_lag_ms",
        Unit::Millis,
        Lower,
        Every,
        "Open loop: the send lag less any wait for a max_concurrency slot, milliseconds: the \
        client's own lateness, which its trust verdict is judged on.",
    ),
    row(
        Figure::TtftMinusServerPrompt,
        "ttft_minus_server_prompt_ms",
        Unit::Millis,
        Lower,
        ServerTimed,
        "Client TTFT minus the server's own prompt time, milliseconds, over the requests \
        whose server reported its timing.",
    ),
    row(
        Figure::E2eMinusServerTotal,
        "e2e_minus_server_total_ms",
        Unit::Millis,
        Lower,
        ServerTimed,
        "Client e2e minus the server's own queue, prompt and generation time, milliseconds, \
        over the requests whose server reported its timing.",
    ),
    row(
        Figure::CachedTokens,
        "cached_tokens",
        Unit::Tokens,
        Neither,
        Succeeded,
        "Cached prompt tokens the server reported (prefix reuse).",
    )
    .by_turn(columns("Cached tokens", &[Mean], ShownWhen::Always)),
    row(
        Figure::TtftTool,
        "ttft_tool_ms",
        Unit::Millis,
        Lower,
        Succeeded,
        "Request start to the first tool-call delta (a function name or argument \
        fragment), milliseconds, over the replies that called a tool.",
    )
    .intervals()
    .generated()
    .compared(&Stat::PERCENTILES)
    .by_turn(Shown {
        count: Some("Tool calls"),
        ..columns("Tool TTFT", &[P50], ShownWhen::Measured)
    }),
    row(
        Figure::ToolCallChunks,
        "tool_call_chunks",
        Unit::Count,
        Neither,
        Succeeded,
        "Streamed tool-call deltas (name and argument fragments) per reply that called a \
        tool.",
    )
    .generated()
    .by_turn(columns("Tool deltas", &[Mean], ShownWhen::Measured)),
    row(
        Figure::RequestBytes,
        "request_bytes",
        Unit::Bytes,
        Neither,
        Every,
        "Bytes of each request's JSON body as sent (images included), over every request \
        sent.",
    ),
    row(
        Figure::ReasoningTokens,
        "reasoning_tokens",
        Unit::Tokens,
        Neither,
        Succeeded,
        "Reasoning tokens of the output: the server's usage (completion_tokens_details or \
        output_tokens_details), else counted from the streamed reasoning.",
    )
    .generated(),
    row(
        Figure::ContentTokens,
        "content_tokens",
        Unit::Tokens,
        Neither,
        Succeeded,
        "Output tokens less reasoning tokens, over the requests whose reasoning is known.",
    )
    .generated(),
    row(
        Figure::SpecAcceptanceLength,
        "spec_acceptance_length",
        Unit::Count,
        Higher,
        Succeeded,
        "Speculative decoding: tokens per verify step, the bonus token included, as the \
        server reports it per request (vLLM's metrics.speculative_decoding).",
    )
    .generated()
    .compared(&[Mean]),
    row(
        Figure::SpecAcceptanceRate,
        "spec_acceptance_rate",
        Unit::Ratio,
        Higher,
        Succeeded,
        "Speculative decoding: the share of draft tokens the target accepted, as the server \
        reports it per request (vLLM's metrics.speculative_decoding).",
    )
    .generated()
    .compared(&[Mean]),
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

    /// Whether it is measured in time (seconds or milliseconds): SLO and search objectives
    /// limit these.
    pub fn is_time(self) -> bool {
        matches!(self.spec().unit, Unit::Seconds | Unit::Millis)
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
            assert!(!spec.doc.is_empty(), "{}", spec.name);
        }
    }
}
