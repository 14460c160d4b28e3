//! Session workloads: figures by turn index, and how long whole sessions took.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Distribution, distribution};
use crate::client::RequestRecord;
use crate::quantile::PercentileMethod;

/// A phase of sessions, from the records it keeps (all of them, or its sample).
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
    /// Time to first token, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft: Option<Distribution>,
    /// Mean prompt tokens the server reported: the history grows with every turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_mean: Option<f64>,
    /// Mean cached prompt tokens the server reported: prefix reuse across turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens_mean: Option<f64>,
    /// Successful requests whose reply called a tool.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_calls: u64,
    /// Time to the first tool-call delta, seconds, over the replies that called a tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_tool: Option<Distribution>,
    /// Mean tool-call deltas (name and argument fragments) per reply that called a tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_chunks_mean: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `None` when no record belongs to a session.
pub fn session_summary(
    records: &[RequestRecord],
    method: PercentileMethod,
) -> Option<SessionSummary> {
    let mut by_turn: BTreeMap<u64, Vec<&RequestRecord>> = BTreeMap::new();
    let mut by_session: BTreeMap<u64, Vec<&RequestRecord>> = BTreeMap::new();
    for r in records {
        let (Some(session), Some(turn)) = (r.session, r.turn) else {
            continue;
        };
        by_turn.entry(turn).or_default().push(r);
        by_session.entry(session).or_default().push(r);
    }
    if by_session.is_empty() {
        return None;
    }
    let planned_turns = by_turn.keys().max().map_or(0, |t| t + 1);
    let mean = |values: Vec<f64>| {
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    let turns = by_turn
        .into_iter()
        .map(|(turn, rs)| {
            let ok: Vec<&&RequestRecord> = rs.iter().filter(|r| r.is_ok()).collect();
            let ttft: Vec<f64> = ok
                .iter()
                .filter_map(|r| r.ttft_ms)
                .map(|ms| ms / 1e3)
                .collect();
            let calling: Vec<&&&RequestRecord> =
                ok.iter().filter(|r| r.ttft_tool_ms.is_some()).collect();
            let ttft_tool: Vec<f64> = calling
                .iter()
                .filter_map(|r| r.ttft_tool_ms)
                .map(|ms| ms / 1e3)
                .collect();
            TurnFigures {
                turn,
                requests: rs.len() as u64,
                errors: (rs.len() - ok.len()) as u64,
                ttft: distribution(&ttft, method),
                prompt_tokens_mean: mean(
                    ok.iter()
                        .filter_map(|r| r.prompt_tokens)
                        .map(|t| t as f64)
                        .collect(),
                ),
                cached_tokens_mean: mean(
                    ok.iter()
                        .filter_map(|r| r.cached_tokens)
                        .map(|t| t as f64)
                        .collect(),
                ),
                tool_calls: calling.len() as u64,
                ttft_tool: distribution(&ttft_tool, method),
                tool_call_chunks_mean: mean(
                    calling.iter().map(|r| r.tool_call_chunks as f64).collect(),
                ),
            }
        })
        .collect();
    let complete: Vec<f64> = by_session
        .values()
        .filter(|rs| rs.len() as u64 == planned_turns && rs.iter().all(|r| r.is_ok()))
        .map(|rs| {
            let start = rs
                .iter()
                .map(|r| r.start_offset_ms)
                .fold(f64::INFINITY, f64::min);
            let end = rs
                .iter()
                .map(|r| r.start_offset_ms + r.e2e_ms)
                .fold(f64::NEG_INFINITY, f64::max);
            (end - start) / 1e3
        })
        .collect();
    Some(SessionSummary {
        sessions: by_session.len() as u64,
        complete: complete.len() as u64,
        duration: distribution(&complete, method),
        turns,
    })
}
