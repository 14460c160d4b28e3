//! A phase's figures without holding its records: running counts and sums per record, and
//! each distribution's values handed to a column sink, read back at the end for exact
//! order statistics ([`super::select`]). Gives what [`super::summarize`], the send lags,
//! [`super::transport`] and the prompt check give on the full slice.

use std::collections::BTreeMap;

use super::select::{Rescan, distribution_by_selection};
use super::{
    CauseCounts, ConnectionCounts, Distribution, Goodput, PhaseSummary, ServerTimingGap, SplitSums,
    TransportSummary, meets_slo, per_second, transport_from_counts,
};
use crate::client::RequestRecord;
use crate::plan::{PercentileMethod, Slo};
use crate::workload::PromptTally;

/// One distribution's values, as a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Column {
    Ttft,
    Tpot,
    E2e,
    TimeToFirstOutput,
    MeanInterTokenLatency,
    MaxInterChunk,
    DecodeTokS,
    InputTokens,
    OutputTokens,
    SendLag,
    TtftMinusServerPrompt,
    E2eMinusServerTotal,
}

impl Column {
    pub const ALL: [Column; 12] = [
        Column::Ttft,
        Column::Tpot,
        Column::E2e,
        Column::TimeToFirstOutput,
        Column::MeanInterTokenLatency,
        Column::MaxInterChunk,
        Column::DecodeTokS,
        Column::InputTokens,
        Column::OutputTokens,
        Column::SendLag,
        Column::TtftMinusServerPrompt,
        Column::E2eMinusServerTotal,
    ];

    /// A file-name-safe name.
    pub fn name(self) -> &'static str {
        match self {
            Column::Ttft => "ttft",
            Column::Tpot => "tpot",
            Column::E2e => "e2e",
            Column::TimeToFirstOutput => "time_to_first_output",
            Column::MeanInterTokenLatency => "mean_inter_token_latency",
            Column::MaxInterChunk => "max_inter_chunk",
            Column::DecodeTokS => "decode_tok_s",
            Column::InputTokens => "input_tokens",
            Column::OutputTokens => "output_tokens",
            Column::SendLag => "send_lag",
            Column::TtftMinusServerPrompt => "ttft_minus_server_prompt",
            Column::E2eMinusServerTotal => "e2e_minus_server_total",
        }
    }

    /// The latency distributions carry their percentiles' intervals, as `summarize` gives them.
    fn with_intervals(self) -> bool {
        matches!(
            self,
            Column::Ttft | Column::Tpot | Column::E2e | Column::MeanInterTokenLatency
        )
    }

    /// Its place in [`Column::ALL`], which lists the columns in declaration order.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Running figures of a phase's records.
#[derive(Debug, Clone)]
pub struct PhaseTally {
    slo: Option<Slo>,
    /// The summary's counters and totals; distributions are filled at the end.
    summary: PhaseSummary,
    first_start_ms: f64,
    last_start_ms: f64,
    last_end_ms: f64,
    cached: Option<(u64, u64)>,
    good: u64,
    connections: ConnectionCounts,
    timed: u64,
    split: SplitSums,
    prompt: PromptTally,
    causes: CauseCounts,
    /// Per column: values and their sum.
    columns: [(u64, f64); 12],
}

/// Everything a phase's result needs from its records.
#[derive(Debug, Clone)]
pub struct TallyFigures {
    pub summary: PhaseSummary,
    pub send_lag_ms: Option<Distribution>,
    pub transport: TransportSummary,
    /// Requests per second between the first and the last start.
    pub achieved_rate: Option<f64>,
    /// Milliseconds from the window's origin to the last record's end (0 when none).
    pub last_end_ms: f64,
    pub prompt: PromptTally,
}

impl PhaseTally {
    pub fn new(slo: Option<&Slo>) -> Self {
        PhaseTally {
            slo: slo.cloned(),
            summary: PhaseSummary::default(),
            first_start_ms: f64::INFINITY,
            last_start_ms: f64::NEG_INFINITY,
            last_end_ms: f64::NEG_INFINITY,
            cached: None,
            good: 0,
            connections: ConnectionCounts::default(),
            timed: 0,
            split: SplitSums::default(),
            prompt: PromptTally::default(),
            causes: CauseCounts::default(),
            columns: [(0, 0.0); 12],
        }
    }

    /// Records seen.
    pub fn requests(&self) -> u64 {
        self.summary.requests
    }

    /// Count one record; each distribution value it carries goes to `sink`.
    pub fn add(&mut self, r: &RequestRecord, sink: &mut dyn FnMut(Column, f64)) {
        let mut put = |columns: &mut [(u64, f64); 12], column: Column, value: Option<f64>| {
            if let Some(v) = value.filter(|v| v.is_finite()) {
                let slot = &mut columns[column.index()];
                slot.0 += 1;
                slot.1 += v;
                sink(column, v);
            }
        };
        let s = &mut self.summary;
        s.requests += 1;
        self.first_start_ms = self.first_start_ms.min(r.start_offset_ms);
        self.last_start_ms = self.last_start_ms.max(r.start_offset_ms);
        self.last_end_ms = self.last_end_ms.max(r.start_offset_ms + r.e2e_ms);
        self.prompt.add(r.planned_context_tokens, r.prompt_tokens);
        put(&mut self.columns, Column::SendLag, r.send_lag_ms);
        self.connections.add(r);
        if let Some(err) = &r.error {
            *s.errors_by_kind.entry(err.kind).or_insert(0) += 1;
        }
        self.causes.add(r);
        if !r.is_ok() {
            s.errors += 1;
            return;
        }
        s.success += 1;
        s.total_input_tokens += r.prompt_tokens.unwrap_or(0);
        s.add_inputs(r);
        s.total_output_tokens += r.output_tokens.unwrap_or(0);
        s.content_chunks += r.content_chunks;
        s.reasoning_chunks += r.reasoning_chunks;
        if let Some(source) = r.output_token_source {
            *s.output_token_sources.entry(source).or_insert(0) += 1;
        }
        if let (Some(cached), Some(prompt)) = (r.cached_tokens, r.prompt_tokens) {
            let (c, p) = self.cached.get_or_insert((0, 0));
            *c += cached;
            *p += prompt;
        }
        self.good += u64::from(self.slo.as_ref().is_some_and(|slo| meets_slo(r, slo)));
        let scaled = |v: Option<f64>, scale: f64| v.filter(|v| v.is_finite()).map(|v| v * scale);
        let c = &mut self.columns;
        put(c, Column::Ttft, scaled(r.ttft_ms, 1e-3));
        put(c, Column::Tpot, scaled(r.tpot_ms, 1e-3));
        put(c, Column::E2e, scaled(Some(r.e2e_ms), 1e-3));
        put(
            c,
            Column::TimeToFirstOutput,
            scaled(r.time_to_first_output_ms, 1e-3),
        );
        put(
            c,
            Column::MeanInterTokenLatency,
            r.mean_inter_token_latency_ms,
        );
        put(c, Column::MaxInterChunk, r.max_inter_chunk_ms);
        put(c, Column::DecodeTokS, r.decode_tok_s);
        put(c, Column::InputTokens, r.prompt_tokens.map(|t| t as f64));
        put(c, Column::OutputTokens, r.output_tokens.map(|t| t as f64));
        if r.server_prompt_ms.is_some() || r.server_total_ms.is_some() {
            self.timed += 1;
            self.split.add(r);
            let prompt_gap = r.ttft_ms.zip(r.server_prompt_ms).map(|(a, b)| a - b);
            let total_gap = r.server_total_ms.map(|b| r.e2e_ms - b);
            put(c, Column::TtftMinusServerPrompt, prompt_gap);
            put(c, Column::E2eMinusServerTotal, total_gap);
        }
    }

    /// The phase's figures; `column` opens a column's values for scanning again, and
    /// `peak_in_flight` is asked only when the connection warning needs it.
    pub fn finish<S: Rescan>(
        &self,
        method: PercentileMethod,
        reuse: bool,
        peak_in_flight: impl FnOnce() -> usize,
        mut column: impl FnMut(Column) -> Result<S, S::Error>,
    ) -> Result<TallyFigures, S::Error> {
        let mut dists: BTreeMap<Column, Distribution> = BTreeMap::new();
        for c in Column::ALL {
            let (n, sum) = self.columns[c.index()];
            if n > 0 {
                let mut source = column(c)?;
                let d = distribution_by_selection(&mut source, n, sum, method, c.with_intervals())?;
                dists.insert(c, d);
            }
        }
        let mut s = self.summary.clone();
        s.errors_by_cause = self.causes.finish();
        let n = s.requests;
        s.elapsed = if n == 0 || self.last_end_ms <= self.first_start_ms {
            0.0
        } else {
            (self.last_end_ms - self.first_start_ms) / 1000.0
        };
        s.request_rate = per_second(n as f64, s.elapsed);
        s.output_tokens_per_second = per_second(s.total_output_tokens as f64, s.elapsed);
        s.set_input_rates();
        s.cached_token_ratio = self
            .cached
            .and_then(|(c, p)| (p > 0).then(|| c as f64 / p as f64));
        s.goodput = self.slo.as_ref().map(|_| Goodput {
            requests: self.good,
            request_rate: per_second(self.good as f64, s.elapsed),
            fraction: if n == 0 {
                0.0
            } else {
                self.good as f64 / n as f64
            },
        });
        let mut take = |c: Column| dists.remove(&c);
        s.ttft = take(Column::Ttft);
        s.tpot = take(Column::Tpot);
        s.e2e = take(Column::E2e);
        s.time_to_first_output = take(Column::TimeToFirstOutput);
        s.mean_inter_token_latency_ms = take(Column::MeanInterTokenLatency);
        s.max_inter_chunk_ms = take(Column::MaxInterChunk);
        s.decode_tok_s = take(Column::DecodeTokS);
        s.input_tokens = take(Column::InputTokens);
        s.output_tokens = take(Column::OutputTokens);
        let gap = (self.timed > 0).then(|| ServerTimingGap {
            requests: self.timed,
            ttft_minus_server_prompt_ms: take(Column::TtftMinusServerPrompt),
            e2e_minus_server_total_ms: take(Column::E2eMinusServerTotal),
            split: self.split.finish(),
        });
        let span = self.last_start_ms - self.first_start_ms;
        Ok(TallyFigures {
            summary: s,
            send_lag_ms: take(Column::SendLag),
            transport: transport_from_counts(self.connections, peak_in_flight, gap, reuse),
            achieved_rate: (n > 1 && span > 0.0).then(|| (n - 1) as f64 / (span / 1e3)),
            last_end_ms: self.last_end_ms.max(0.0),
            prompt: self.prompt.clone(),
        })
    }
}
