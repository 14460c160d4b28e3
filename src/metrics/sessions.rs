//! Session workloads: figures by turn index and how long whole sessions took, tallied record
//! by record as part of the phase's one tally, so a sampled phase's turns cover every request.
//! Which figures a turn has is the figure table's `by_turn` column.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::select::{Rescan, distribution_by_selection};
use super::tally::Column;
use super::{Distribution, Distributions, distribution};
use crate::client::RequestRecord;
use crate::figure::{FIGURES, Figure, Spec};
use crate::quantile::PercentileMethod;

/// A phase of sessions, over every measured request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SessionSummary {
    /// Sessions with at least one request.
    pub sessions: u64,
    /// Sessions whose every planned turn succeeded.
    pub complete: u64,
    /// First request's start to last request's end, seconds, over complete sessions (think
    /// times included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<Distribution>,
    /// One entry per turn index, in order.
    pub turns: Vec<TurnFigures>,
}

/// The requests of one turn index across sessions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct TurnFigures {
    /// Turn index, from 0.
    pub turn: u64,
    pub requests: u64,
    pub errors: u64,
    /// The figures the figure table gives turns (`ttft`, `input_tokens`, `cached_tokens`,
    /// `ttft_tool_ms`, …), over the turn's requests each figure counts, under their names.
    #[serde(flatten)]
    pub figures: Distributions,
}

/// The figures tallied by turn.
pub fn turn_figures() -> impl Iterator<Item = &'static Spec> {
    FIGURES.iter().filter(|s| s.by_turn.is_some())
}

/// Running figures of a phase's session records.
#[derive(Debug, Clone, Default)]
pub struct SessionTally {
    turns: BTreeMap<u64, TurnTally>,
    sessions: BTreeMap<u64, SessionSpan>,
}

#[derive(Debug, Clone, Default)]
struct TurnTally {
    requests: u64,
    errors: u64,
    /// Per figure: values and their sum.
    columns: BTreeMap<Figure, (u64, f64)>,
}

/// One session's requests so far.
#[derive(Debug, Clone, Copy)]
struct SessionSpan {
    requests: u64,
    all_ok: bool,
    start_ms: f64,
    end_ms: f64,
}

impl SessionTally {
    /// Count one record (nothing unless it belongs to a session); each by-turn value goes to
    /// `sink` under its turn.
    pub fn add(&mut self, r: &RequestRecord, sink: &mut dyn FnMut(Column, f64)) {
        let (Some(session), Some(turn)) = (r.session, r.turn) else {
            return;
        };
        let t = self.turns.entry(turn).or_default();
        t.requests += 1;
        t.errors += u64::from(!r.is_ok());
        for spec in turn_figures() {
            if let Some(v) = r.value(spec.figure) {
                let slot = t.columns.entry(spec.figure).or_insert((0, 0.0));
                slot.0 += 1;
                slot.1 += v;
                sink(Column::Turn(turn, spec.figure), v);
            }
        }
        let end_ms = r.start_offset_ms + r.e2e_ms;
        let span = self.sessions.entry(session).or_insert(SessionSpan {
            requests: 0,
            all_ok: true,
            start_ms: r.start_offset_ms,
            end_ms,
        });
        span.requests += 1;
        span.all_ok &= r.is_ok();
        span.start_ms = span.start_ms.min(r.start_offset_ms);
        span.end_ms = span.end_ms.max(end_ms);
    }

    /// The sessions' figures, `None` when no record belonged to a session; `column` opens a
    /// turn's column of values for scanning again.
    pub fn finish<S: Rescan>(
        &self,
        method: PercentileMethod,
        column: &mut impl FnMut(Column) -> Result<S, S::Error>,
    ) -> Result<Option<SessionSummary>, S::Error> {
        if self.sessions.is_empty() {
            return Ok(None);
        }
        let mut turns = Vec::with_capacity(self.turns.len());
        for (&turn, t) in &self.turns {
            let mut figures = Distributions::default();
            for (&figure, &(n, sum)) in &t.columns {
                let mut source = column(Column::Turn(turn, figure))?;
                let intervals = figure.spec().intervals;
                let d = distribution_by_selection(&mut source, n, sum, method, intervals)?;
                figures.set(figure, Some(d));
            }
            turns.push(TurnFigures {
                turn,
                requests: t.requests,
                errors: t.errors,
                figures,
            });
        }
        let planned_turns = self.turns.keys().max().map_or(0, |t| t + 1);
        let complete: Vec<f64> = self
            .sessions
            .values()
            .filter(|s| s.requests == planned_turns && s.all_ok)
            .map(|s| (s.end_ms - s.start_ms) / 1e3)
            .collect();
        Ok(Some(SessionSummary {
            sessions: self.sessions.len() as u64,
            complete: complete.len() as u64,
            duration: distribution(&complete, method),
            turns,
        }))
    }
}
