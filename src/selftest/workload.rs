//! Selftest cases fed by a real workload's prompt queue: the ceiling and the timing error with
//! the prompt path a phase uses (its workload and tokenizer), not a fixed prompt.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{
    CaseResult, CaseSpec, Quantiles, SimThread, client_for, closed_case_with, quantiles,
    window_with_feed,
};
use crate::plan::Arrival;
use crate::scheduler::Load;
use crate::workload::PromptQueue;

/// A closed loop at `concurrency` against the zero-delay simulator, prompts from `queue`
/// (`prompt_tokens` only labels the result).
pub fn workload_closed_case(
    concurrency: u32,
    queue: &Arc<PromptQueue>,
    prompt_tokens: u32,
    warmup: Duration,
    window: Duration,
) -> Result<CaseResult, String> {
    let case = CaseSpec::zero_delay(concurrency, prompt_tokens, warmup, window);
    closed_case_with(&case, queue)
}

/// An open loop's timing with a workload's prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenLoopTiming {
    pub target_rps: f64,
    pub requests: u64,
    pub errors: u64,
    /// Client time to first content against the zero-delay simulator, ms.
    pub ttft_ms: Option<Quantiles>,
    /// Actual minus scheduled send, ms.
    pub send_lag_ms: Option<Quantiles>,
    /// Takes that found their prompt not built yet.
    pub prompt_waits: u64,
}

/// Constant arrivals at `rps` on the multi-thread runtime `run` uses, prompts from `queue`,
/// against the zero-delay simulator on its own thread.
pub fn workload_open_case(
    rps: f64,
    queue: &Arc<PromptQueue>,
    warmup: Duration,
    window: Duration,
) -> Result<OpenLoopTiming, String> {
    let sim = SimThread::start(false, 0.0)?;
    let runtime =
        tokio::runtime::Runtime::new().map_err(|e| format!("cannot start a runtime: {e}"))?;
    let client = Arc::new(client_for(sim.addr, 256)?);
    let load = Load::Open {
        rps,
        arrival: Arrival::Constant,
        burstiness: None,
        max_concurrency: None,
    };
    runtime.block_on(window_with_feed(&client, queue, load.clone(), warmup));
    let waits_before = queue.stats().waits;
    let measured = runtime.block_on(window_with_feed(&client, queue, load, window));
    let prompt_waits = queue.stats().waits - waits_before;
    drop(client);
    drop(runtime);
    sim.stop();
    let ok: Vec<_> = measured.records.iter().filter(|r| r.is_ok()).collect();
    Ok(OpenLoopTiming {
        target_rps: rps,
        requests: measured.records.len() as u64,
        errors: (measured.records.len() - ok.len()) as u64,
        ttft_ms: quantiles(ok.iter().filter_map(|r| r.ttft_ms).collect()),
        send_lag_ms: quantiles(
            measured
                .records
                .iter()
                .filter_map(|r| r.send_lag_ms)
                .collect(),
        ),
        prompt_waits,
    })
}
