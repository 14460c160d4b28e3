//! `servebench selftest`: the client's own ceiling, cost and timing error on this machine.
//!
//! The real client and scheduler run against the in-process simulator with every delay at
//! zero, over loopback. The simulator runs on its own thread (a current-thread runtime) and
//! the client on the calling thread (another current-thread runtime), so each gets one core.
//! The simulator's CPU is its thread's clock; the client's is the process's less that, so it
//! includes the open-loop pacer thread.

mod harness;
mod probe;
mod render;
mod workload;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::client::RequestRecord;
use crate::metrics::phase_events;
use crate::plan::Arrival;
use crate::scheduler::{self, Load, PromptFeed};
use crate::sim::SendTimes;
use crate::wakeup::{self, CpuLatencyHint, WakeLatency};

pub use probe::{peak_rss_bytes, process_cpu_s, raise_nofile_limit, reset_peak_rss};
pub use render::render;
pub use workload::{OpenLoopTiming, workload_closed_case, workload_open_case};

use harness::{
    FixedFeed, Measured, SimThread, client_for, client_runtime, prompt_of, window_records,
    window_with_feed,
};

/// Sleeps timed by the wake-latency probe.
const WAKE_SAMPLES: u32 = 400;
/// Output tokens per request: short requests, so per-request costs show.
pub const OUTPUT_TOKENS: u32 = 16;
/// Simulator time per token in the unsaturated timing case: 1,024 streams × 20 tokens/s.
pub const UNSATURATED_DECODE_MS: f64 = 50.0;
/// SSE events per simulator response besides its text chunks: role, finish, usage, `[DONE]`.
const FRAMING_EVENTS: u64 = 4;

#[derive(Debug, Clone, Default)]
pub struct SelftestArgs {
    /// A short version (two concurrencies, short windows) for tests and smoke checks.
    pub quick: bool,
    /// Also write the results as JSON here.
    pub out: Option<PathBuf>,
    /// Hold the kernel's request to keep idle CPUs quick to wake (see [`crate::wakeup`]).
    pub latency_hint: bool,
}

/// Everything one selftest measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelftestReport {
    pub quick: bool,
    pub cpus: usize,
    /// `/proc/loadavg` when the selftest started.
    pub load_average: Option<String>,
    /// The open-file limit after raising the soft limit to the hard one.
    pub nofile_limit: Option<u64>,
    /// Whether the peak RSS could be reset between cases (`/proc/self/clear_refs`); if not,
    /// each case's peak includes the earlier cases.
    pub peak_rss_reset: bool,
    /// Whether the CPU wake-latency request was held while measuring.
    pub cpu_latency_hint: CpuLatencyHint,
    /// How late a sleeping thread woke, measured first.
    pub wake_latency: WakeLatency,
    pub output_tokens: u32,
    pub cases: Vec<CaseResult>,
    /// Timing error with the simulator pacing tokens, the client far from its ceiling.
    pub unsaturated: CaseResult,
    /// The same with the client busy polling instead of parking (`run --busy-poll`).
    pub unsaturated_busy_poll: CaseResult,
    pub open_loop: OpenLoopResult,
}

/// One closed-loop case: a concurrency and a prompt size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub concurrency: u32,
    pub prompt_tokens: u32,
    /// The simulator's time per output token (zero except in the unsaturated case).
    pub decode_ms_per_token: f64,
    /// The client's runtime polled instead of parking between events.
    #[serde(default)]
    pub busy_poll: bool,
    /// Measured window (after a warmup that opens the connections).
    pub duration_s: f64,
    pub requests: u64,
    pub errors: u64,
    pub requests_per_s: f64,
    /// SSE data events the client parsed, per second.
    pub events_per_s: f64,
    /// CPU seconds of the client over the window: the process's, less the simulator thread's.
    pub client_cpu_s: f64,
    /// CPU seconds of the simulator thread over the window.
    pub sim_cpu_s: f64,
    pub client_cpu_s_per_million_events: f64,
    /// Process peak RSS (VmHWM) by the end of the case.
    pub peak_rss_mib: f64,
    /// Client first-content instant minus the simulator's, ms.
    pub ttft_error_ms: Option<Quantiles>,
    /// Client (last − first content) minus the simulator's, ms: the error of the summed
    /// inter-chunk times.
    pub itl_span_error_ms: Option<Quantiles>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quantiles {
    pub count: u64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// Open-loop pacing: how late sends were against their schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenLoopResult {
    pub target_rps: f64,
    pub achieved_rps: f64,
    pub requests: u64,
    pub errors: u64,
    pub send_lag_ms: Option<Quantiles>,
}

/// This machine's client ceiling: what the client sustains against a zero-delay simulator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ceiling {
    pub concurrency: u32,
    pub duration_s: f64,
    pub requests_per_s: f64,
    /// Text chunks plus three framing events per request, as [`phase_events`] counts them.
    pub events_per_s: f64,
}

/// Run the whole selftest (blocking; call it outside any async runtime).
pub fn run(args: &SelftestArgs) -> Result<SelftestReport, String> {
    let load_average = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.trim().to_string());
    let nofile_limit = raise_nofile_limit();
    let (_latency_request, cpu_latency_hint) = wakeup::request_if(args.latency_hint);
    let wake_latency = wakeup::probe(if args.quick { 100 } else { WAKE_SAMPLES });
    let (concurrencies, prompts, window, warmup): (&[u32], &[u32], _, _) = if args.quick {
        (
            &[1, 64],
            &[16, 4096],
            Duration::from_millis(300),
            Duration::from_millis(100),
        )
    } else {
        (
            &[1, 64, 1024, 4096],
            &[16, 4096],
            Duration::from_secs(3),
            Duration::from_millis(500),
        )
    };
    let mut peak_rss_reset = true;
    let mut cases = Vec::new();
    for &prompt_tokens in prompts {
        for &concurrency in concurrencies {
            peak_rss_reset &= reset_peak_rss();
            let case = CaseSpec::zero_delay(concurrency, prompt_tokens, warmup, window);
            cases.push(closed_case(&case)?);
        }
    }
    let open_window = if args.quick {
        Duration::from_millis(500)
    } else {
        Duration::from_secs(3)
    };
    // Timing error when the machine is not saturated: about as many streams in flight, paced
    // by the simulator at UNSATURATED_DECODE_MS per token, so the client idles most of the time.
    let unsaturated_streams = if args.quick { 64 } else { 1024 };
    peak_rss_reset &= reset_peak_rss();
    let unsaturated_case = CaseSpec {
        decode_ms_per_token: UNSATURATED_DECODE_MS,
        ..CaseSpec::zero_delay(unsaturated_streams, 16, warmup, window)
    };
    let unsaturated = closed_case(&unsaturated_case)?;
    peak_rss_reset &= reset_peak_rss();
    let unsaturated_busy_poll = closed_case(&CaseSpec {
        busy_poll: true,
        ..unsaturated_case
    })?;
    let open_loop = open_case(2000.0, open_window)?;
    Ok(SelftestReport {
        quick: args.quick,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        load_average,
        nofile_limit,
        peak_rss_reset,
        cpu_latency_hint,
        wake_latency,
        output_tokens: OUTPUT_TOKENS,
        cases,
        unsaturated,
        unsaturated_busy_poll,
        open_loop,
    })
}

/// The client ceiling: a short closed loop at concurrency 64 with short prompts.
pub fn measure_ceiling(window: Duration) -> Result<Ceiling, String> {
    let concurrency = 64;
    let sim = SimThread::start(false, 0.0)?;
    let runtime = client_runtime()?;
    let client = Arc::new(client_for(sim.addr, concurrency)?);
    let prompt = prompt_of(16);
    let measured = runtime.block_on(async {
        window_records(&client, &prompt, Load::Closed { concurrency }, window / 4).await;
        window_records(&client, &prompt, Load::Closed { concurrency }, window).await
    });
    sim.stop();
    let ok: Vec<&RequestRecord> = measured.records.iter().filter(|r| r.is_ok()).collect();
    if ok.is_empty() {
        return Err("no calibration request succeeded".into());
    }
    let chunks: u64 = ok
        .iter()
        .map(|r| r.content_chunks + r.reasoning_chunks)
        .sum();
    let duration_s = measured.elapsed_s.max(1e-9);
    Ok(Ceiling {
        concurrency,
        duration_s,
        requests_per_s: ok.len() as f64 / duration_s,
        events_per_s: phase_events(ok.len() as u64, chunks) as f64 / duration_s,
    })
}

/// A closed-loop case with one fixed prompt.
fn closed_case(case: &CaseSpec) -> Result<CaseResult, String> {
    let feed = Arc::new(FixedFeed(prompt_of(case.prompt_tokens)));
    closed_case_with(case, &feed)
}

/// What one closed-loop case runs.
struct CaseSpec {
    concurrency: u32,
    prompt_tokens: u32,
    decode_ms_per_token: f64,
    busy_poll: bool,
    warmup: Duration,
    window: Duration,
}

impl CaseSpec {
    /// A case against the simulator with every delay at zero.
    fn zero_delay(
        concurrency: u32,
        prompt_tokens: u32,
        warmup: Duration,
        window: Duration,
    ) -> Self {
        CaseSpec {
            concurrency,
            prompt_tokens,
            decode_ms_per_token: 0.0,
            busy_poll: false,
            warmup,
            window,
        }
    }
}

/// A case with prompts from `feed`.
fn closed_case_with<F: PromptFeed>(case: &CaseSpec, feed: &Arc<F>) -> Result<CaseResult, String> {
    let CaseSpec {
        concurrency,
        prompt_tokens,
        decode_ms_per_token,
        busy_poll,
        warmup,
        window,
    } = *case;
    let sim = SimThread::start(true, decode_ms_per_token)?;
    let runtime = client_runtime()?;
    let client = Arc::new(client_for(sim.addr, concurrency.saturating_mul(2))?);
    let load = if decode_ms_per_token > 0.0 {
        // Paced tokens: Poisson arrivals at the rate that keeps `concurrency` streams in
        // flight (Little's law), instead of a closed loop that starts them all at once.
        let request_s = decode_ms_per_token * f64::from(OUTPUT_TOKENS) / 1e3;
        Load::Open {
            rps: f64::from(concurrency) / request_s,
            arrival: Arrival::Poisson,
            burstiness: None,
            max_concurrency: None,
        }
    } else {
        Load::Closed { concurrency }
    };
    let busy = busy_poll.then(|| runtime.block_on(async { scheduler::BusyPoll::start() }));
    runtime.block_on(window_with_feed(&client, feed, load.clone(), warmup));
    // The client's CPU is the process's less the simulator thread's: the client thread, the
    // open-loop pacer, prompt generators and any runtime helpers.
    let (process_cpu_before, sim_cpu_before) = (process_cpu_s(), sim.cpu_s());
    let measured = runtime.block_on(window_with_feed(&client, feed, load, window));
    let sim_cpu_s = sim.cpu_s() - sim_cpu_before;
    let client_cpu_s = process_cpu_s() - process_cpu_before - sim_cpu_s;
    drop(busy);
    drop(client);
    drop(runtime);
    let timestamps = sim.stop();

    let ok: Vec<&RequestRecord> = measured.records.iter().filter(|r| r.is_ok()).collect();
    let events: u64 = ok
        .iter()
        .map(|r| r.content_chunks + r.reasoning_chunks + FRAMING_EVENTS)
        .sum();
    let duration_s = measured.elapsed_s.max(1e-9);
    let (ttft_error_ms, itl_span_error_ms) = timing_errors(&measured, &timestamps);
    Ok(CaseResult {
        concurrency,
        prompt_tokens,
        decode_ms_per_token,
        busy_poll,
        duration_s,
        requests: measured.records.len() as u64,
        errors: (measured.records.len() - ok.len()) as u64,
        requests_per_s: ok.len() as f64 / duration_s,
        events_per_s: events as f64 / duration_s,
        client_cpu_s,
        sim_cpu_s,
        client_cpu_s_per_million_events: if events == 0 {
            0.0
        } else {
            client_cpu_s / events as f64 * 1e6
        },
        peak_rss_mib: peak_rss_bytes().unwrap_or(0) as f64 / (1024.0 * 1024.0),
        ttft_error_ms,
        itl_span_error_ms,
    })
}

/// Client-observed instants against the simulator's send instants, matched by request id.
fn timing_errors(
    measured: &Measured,
    timestamps: &[SendTimes],
) -> (Option<Quantiles>, Option<Quantiles>) {
    // Later entries win: the measured window ran after the warmup, whose ids repeat.
    let by_id: std::collections::HashMap<&str, &SendTimes> = timestamps
        .iter()
        .filter_map(|t| Some((t.request_id.as_deref()?, t)))
        .collect();
    let mut ttft = Vec::new();
    let mut span = Vec::new();
    for record in measured.records.iter().filter(|r| r.is_ok()) {
        let (Some(sent), Some(ttft_ms)) = (by_id.get(record.sent_id()), record.ttft_ms) else {
            continue;
        };
        let (Some(sim_first), Some(sim_last)) = (sent.first_content, sent.last_chunk) else {
            continue;
        };
        let start_ms = record.start_offset_ms;
        let client_first_ms = start_ms + ttft_ms;
        let client_last_ms = start_ms + record.e2e_ms;
        let sim_first_ms = offset_ms(measured.origin, sim_first);
        let sim_last_ms = offset_ms(measured.origin, sim_last);
        ttft.push(client_first_ms - sim_first_ms);
        span.push((client_last_ms - client_first_ms) - (sim_last_ms - sim_first_ms));
    }
    (quantiles(ttft), quantiles(span))
}

fn offset_ms(origin: Instant, at: Instant) -> f64 {
    match at.checked_duration_since(origin) {
        Some(d) => d.as_secs_f64() * 1e3,
        None => -(origin.duration_since(at).as_secs_f64() * 1e3),
    }
}

/// Nearest-rank quantiles; `None` for no values.
pub fn quantiles(mut values: Vec<f64>) -> Option<Quantiles> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let at =
        |q: f64| crate::metrics::percentile(&values, q, crate::plan::PercentileMethod::NearestRank);
    Some(Quantiles {
        count: values.len() as u64,
        p50: at(0.50),
        p99: at(0.99),
        max: values[values.len() - 1],
    })
}

fn open_case(rps: f64, window: Duration) -> Result<OpenLoopResult, String> {
    let sim = SimThread::start(false, 0.0)?;
    // The pacer on the multi-thread runtime `run` uses, as in a real run.
    let runtime =
        tokio::runtime::Runtime::new().map_err(|e| format!("cannot start a runtime: {e}"))?;
    let client = Arc::new(client_for(sim.addr, 256)?);
    let prompt = prompt_of(16);
    let load = Load::Open {
        rps,
        arrival: Arrival::Constant,
        burstiness: None,
        max_concurrency: None,
    };
    let measured = runtime.block_on(window_records(&client, &prompt, load, window));
    drop(client);
    drop(runtime);
    sim.stop();
    let ok = measured.records.iter().filter(|r| r.is_ok()).count();
    let lags: Vec<f64> = measured
        .records
        .iter()
        .filter_map(|r| r.send_lag_ms)
        .collect();
    Ok(OpenLoopResult {
        target_rps: rps,
        achieved_rps: measured.records.len() as f64 / window.as_secs_f64(),
        requests: measured.records.len() as u64,
        errors: (measured.records.len() - ok) as u64,
        send_lag_ms: quantiles(lags),
    })
}
