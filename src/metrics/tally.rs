//! A phase's figures without holding its records: running counts and sums per record, and
//! each distribution's values handed to a column sink, read back at the end for exact
//! order statistics ([`super::select`]). Gives what [`super::summarize`],
//! [`super::transport`], the sessions' figures and the prompt check give on the full slice.

use std::collections::BTreeMap;

use super::select::{Rescan, distribution_by_selection};
use super::{
    CauseCounts, ConnectionCounts, Distributions, Goodput, InFlightSums, PhaseSummary,
    ServerTimingGap, SessionSummary, SessionTally, SplitSums, TransportSummary, meets_slo,
    per_second, transport_from_counts,
};
use crate::client::RequestRecord;
use crate::figure::{FIGURES, Figure};
use crate::plan::{PercentileMethod, Slo};
use crate::workload::PromptTally;

/// Running figures of a phase's records.
#[derive(Debug, Clone)]
pub struct PhaseTally {
    /// What a request must stay within to count toward goodput, when the plan sets an SLO.
    goodput_limits: Option<Vec<(Figure, f64)>>,
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
    sessions: SessionTally,
    in_flight: InFlightSums,
    models: super::ModelTally,
    spec_decode: super::SpecDecodeTally,
    /// Replies checked against a `response_format`.
    checks: super::reply_check::CheckTally,
    /// Replies scored against their `expected`.
    scores: super::score::ScoreTally,
    /// Per figure: values and their sum.
    columns: [(u64, f64); FIGURES.len()],
    /// The plan's SLO objectives, each judged per archetype and per model.
    objectives: Option<Vec<crate::plan::Objective>>,
    archetypes: super::MixTally,
}

/// Which column a value goes to: a figure's over the phase, over one turn of its sessions,
/// or over one model of its mix (numbered in the order the tally first saw it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Column {
    Phase(Figure),
    Turn(u64, Figure),
    Model(u32, Figure),
    Archetype(u32, Figure),
}

/// Everything a phase's result needs from its records.
#[derive(Debug, Clone)]
pub struct TallyFigures {
    pub summary: PhaseSummary,
    pub transport: TransportSummary,
    /// Requests per second between the first and the last start.
    pub achieved_rate: Option<f64>,
    /// Milliseconds from the window's origin to the last record's end (0 when none).
    pub last_end_ms: f64,
    pub prompt: PromptTally,
    /// Figures by turn, when the phase ran sessions.
    pub sessions: Option<SessionSummary>,
    /// Figures by model, when the phase's workload mixes models.
    pub models: Vec<super::ModelFigures>,
    /// Figures by archetype, when the phase mixes workloads.
    pub archetypes: Vec<super::ArchetypeFigures>,
    /// With archetypes: each SLO objective against the whole phase's figures, as each
    /// archetype has its own.
    pub slo: Vec<super::SloCheck>,
}

impl PhaseTally {
    pub fn new(slo: Option<&Slo>) -> Self {
        PhaseTally {
            goodput_limits: slo.map(Slo::request_limits),
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
            sessions: SessionTally::default(),
            in_flight: InFlightSums::default(),
            models: super::MixTally::new(super::MixKey::Model),
            spec_decode: super::SpecDecodeTally::default(),
            checks: super::reply_check::CheckTally::default(),
            scores: super::score::ScoreTally::default(),
            columns: [(0, 0.0); FIGURES.len()],
            objectives: slo.map(Slo::objectives),
            archetypes: super::MixTally::new(super::MixKey::Archetype),
        }
    }

    /// Records seen.
    pub fn requests(&self) -> u64 {
        self.summary.requests
    }

    /// Count one record; each distribution value it carries goes to `sink`.
    pub fn add(&mut self, r: &RequestRecord, sink: &mut dyn FnMut(Column, f64)) {
        for figure in Figure::all() {
            if let Some(v) = r.value(figure) {
                let slot = &mut self.columns[figure.index()];
                slot.0 += 1;
                slot.1 += v;
                sink(Column::Phase(figure), v);
            }
        }
        self.sessions.add(r, sink);
        let limits = self.goodput_limits.as_deref();
        let good = !r.is_cancelled() && limits.is_some_and(|limits| meets_slo(r, limits));
        self.models.add(r, good, sink);
        self.archetypes.add(r, good, sink);
        let s = &mut self.summary;
        s.requests += 1;
        self.first_start_ms = self.first_start_ms.min(r.start_offset_ms);
        self.last_start_ms = self.last_start_ms.max(r.start_offset_ms);
        self.last_end_ms = self.last_end_ms.max(r.start_offset_ms + r.e2e_ms);
        self.prompt.add(r.planned_context_tokens, r.prompt_tokens);
        self.connections.add(r);
        self.in_flight.add(r);
        if let Some(err) = &r.error {
            *s.errors_by_kind.entry(err.kind).or_insert(0) += 1;
        }
        self.causes.add(r);
        self.checks.add(r);
        self.scores.add(r);
        s.add_sent(r);
        if r.is_cancelled() {
            s.cancelled += 1;
            return;
        }
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
        super::ReasoningSummary::add(&mut s.reasoning, r);
        self.spec_decode.add(r);
        if let (Some(cached), Some(prompt)) = (r.cached_tokens, r.prompt_tokens) {
            let (c, p) = self.cached.get_or_insert((0, 0));
            *c += cached;
            *p += prompt;
        }
        self.good += u64::from(good);
        if r.server_prompt_ms.is_some() || r.server_total_ms.is_some() {
            self.timed += 1;
            self.split.add(r);
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
        let mut figures = Distributions::default();
        for spec in &FIGURES {
            let (n, sum) = self.columns[spec.figure.index()];
            if n > 0 {
                let mut source = column(Column::Phase(spec.figure))?;
                let d = distribution_by_selection(&mut source, n, sum, method, spec.intervals)?;
                figures.set(spec.figure, Some(d));
            }
        }
        let sessions = self.sessions.finish(method, &mut column)?;
        let mut s = self.summary.clone();
        s.figures = figures;
        s.errors_by_cause = self.causes.finish();
        let n = s.requests;
        s.elapsed = if n == 0 || self.last_end_ms <= self.first_start_ms {
            0.0
        } else {
            (self.last_end_ms - self.first_start_ms) / 1000.0
        };
        s.request_rate = per_second(n as f64, s.elapsed);
        let objectives = self.objectives.as_deref();
        let models = self
            .models
            .finish(method, s.elapsed, objectives, &mut column)?;
        let models = models
            .into_iter()
            .map(|(model, of)| super::ModelFigures { model, of });
        let archetypes = self
            .archetypes
            .finish(method, s.elapsed, objectives, &mut column)?;
        let archetypes: Vec<_> = archetypes
            .into_iter()
            .map(|(archetype, of)| super::ArchetypeFigures { archetype, of })
            .collect();
        s.set_token_rates();
        s.spec_decode = self.spec_decode.finish();
        s.set_input_rates();
        s.set_sent_rates();
        s.in_flight = self.in_flight.finish(s.elapsed);
        s.structured_output = self.checks.finish();
        s.accuracy = self.scores.finish();
        s.cached_token_ratio = self
            .cached
            .and_then(|(c, p)| (p > 0).then(|| c as f64 / p as f64));
        s.goodput = self.goodput_limits.as_ref().map(|_| Goodput {
            requests: self.good,
            request_rate: per_second(self.good as f64, s.elapsed),
            fraction: if n == 0 {
                0.0
            } else {
                self.good as f64 / n as f64
            },
        });
        let gap = (self.timed > 0).then(|| ServerTimingGap {
            requests: self.timed,
            split: self.split.finish(),
        });
        let span = self.last_start_ms - self.first_start_ms;
        let slo = match objectives {
            Some(objectives) if !archetypes.is_empty() => {
                super::slo_checks(objectives, &s.figures, n, s.errors)
            }
            _ => Vec::new(),
        };
        Ok(TallyFigures {
            summary: s,
            transport: transport_from_counts(self.connections, peak_in_flight, gap, reuse),
            achieved_rate: (n > 1 && span > 0.0).then(|| (n - 1) as f64 / (span / 1e3)),
            last_end_ms: self.last_end_ms.max(0.0),
            prompt: self.prompt.clone(),
            sessions,
            models: models.collect(),
            slo,
            archetypes,
        })
    }
}

/// A phase's figures from records held in memory: the same tally as a streamed phase's, its
/// columns kept in vectors instead of files.
pub fn tally_records(
    records: &[RequestRecord],
    method: PercentileMethod,
    slo: Option<&Slo>,
    reuse: bool,
) -> TallyFigures {
    let mut tally = PhaseTally::new(slo);
    let mut columns: BTreeMap<Column, Vec<f64>> = BTreeMap::new();
    for r in records {
        tally.add(r, &mut |column, v| {
            columns.entry(column).or_default().push(v)
        });
    }
    let figures = tally.finish(
        method,
        reuse,
        || super::peak_in_flight(records),
        |column| {
            let values = columns.get(&column).map_or(&[][..], Vec::as_slice);
            Ok::<&[f64], std::convert::Infallible>(values)
        },
    );
    match figures {
        Ok(figures) => figures,
        Err(never) => match never {},
    }
}
