//! Client self-calibration before a run, and each phase's share of the measured ceiling.

use std::time::Duration;

use crate::report::{ClientCalibration, ClientCeiling, PhaseResult};
use crate::selftest;
use crate::workload::QueueStats;

use crate::schedule::PhaseSettings;

/// Measured window of the calibration (plus a quarter of it as warmup).
pub const CALIBRATION_WINDOW: Duration = Duration::from_millis(1200);
/// Sleeps timed by the wake-latency probe (~0.2 s).
pub const WAKE_SAMPLES: u32 = 200;
/// Above this share of the ceiling, a phase's numbers may be the client's, not the server's.
pub const LOAD_SHARE_WARNING: f64 = 0.7;

/// Measure how late a sleeping thread wakes, then this machine's client ceiling, on threads of its own (the calibration runs its
/// simulator and client on dedicated current-thread runtimes), so the run's runtime is idle.
pub async fn calibrate() -> Result<ClientCalibration, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("calibrate".into())
        .spawn(move || {
            let wake = crate::wakeup::probe(WAKE_SAMPLES);
            let _ = tx.send(selftest::measure_ceiling(CALIBRATION_WINDOW).map(|c| (c, wake)));
        })
        .map_err(|e| format!("cannot start the calibration thread: {e}"))?;
    let (ceiling, wake) = rx
        .await
        .map_err(|_| "the calibration thread ended early".to_string())??;
    Ok(ClientCalibration {
        requests_per_second: ceiling.requests_per_s,
        events_per_second: ceiling.events_per_s,
        concurrency: ceiling.concurrency,
        duration_seconds: ceiling.duration_s,
        wake_latency: Some(wake),
    })
}

/// The client ceiling in requests/s with a phase's prompts: the calibrated ceiling (short
/// fixed prompts) and the CPU the phase's prompt path spends per request share the machine.
pub fn ceiling_with_prompts(ceiling: &ClientCalibration, prompts: &QueueStats) -> f64 {
    1.0 / (1.0 / ceiling.requests_per_second + prompts.cpu_s_per_prompt.max(0.0))
}

/// The ceiling a phase's load is held against: requests/s with its prompts, and events/s.
pub fn phase_ceiling(ceiling: &ClientCalibration, prompts: &QueueStats) -> ClientCeiling {
    ClientCeiling {
        requests_per_second: ceiling_with_prompts(ceiling, prompts),
        events_per_second: ceiling.events_per_second,
    }
}

/// Before a phase runs: a warning when its prompts are too costly to build at the rate it
/// asks for (open loop), or are built slower than the warning margin of the client's own
/// ceiling (closed loop, once calibrated: whatever the server, the prompts would set the pace
/// first).
pub fn prompt_warning(
    phase: &PhaseSettings<'_>,
    prompts: &QueueStats,
    tokenizer: &str,
    ceiling: Option<&ClientCalibration>,
) -> Option<String> {
    let built_per_s = prompts.prompts_per_s();
    let cost = format!(
        "phase `{}`: its prompts (workload `{}`, {tokenizer}) take {:.3} ms of CPU each",
        phase.name,
        phase.workload_name,
        prompts.cpu_s_per_prompt * 1e3
    );
    if let Some(rps) = phase.rate_rps() {
        let capacity = match ceiling {
            Some(c) if c.requests_per_second > 0.0 => {
                built_per_s.min(ceiling_with_prompts(c, prompts))
            }
            _ => built_per_s,
        };
        return (rps > LOAD_SHARE_WARNING * capacity).then(|| {
            format!(
                "warning: {cost}, so this machine's client sends at most about {capacity:.0} \
                 requests/s with them; at {rps} requests/s the client, not the server, would set \
                 the pace (shorter prompts, a cheaper tokenizer or a lower rate avoid it)"
            )
        });
    }
    let ceiling = ceiling?;
    (built_per_s < LOAD_SHARE_WARNING * ceiling.requests_per_second).then(|| {
        format!(
            "warning: {cost}, so this machine builds about {built_per_s:.0} a second, below the \
             client's own ceiling of {:.0} requests/s: a server faster than that would be \
             measured as the prompts' limit",
            ceiling.requests_per_second
        )
    })
}

/// A warning line when the phase ran near the client's ceiling (its `client_load_share`).
pub fn warning(phase: &PhaseResult) -> Option<String> {
    let share = phase.client_load_share?;
    (share > LOAD_SHARE_WARNING).then(|| {
        format!(
            "warning: phase {} used {:.0}% of this machine's client ceiling (with its prompts, \
             workload `{}`); its throughput and latency may be limited by the client, not the \
             server",
            phase.phase,
            share * 100.0,
            phase.workload
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::PhaseSummary;

    fn prompts(cpu_s_per_prompt: f64) -> QueueStats {
        QueueStats {
            threads: 1,
            lane_depth: 16,
            batch: 1,
            cpu_s_per_prompt,
            built: 0,
            taken: 0,
            waits: 0,
            wait_s: 0.0,
        }
    }

    #[test]
    fn prompt_cost_lowers_the_ceiling_and_raises_the_share() {
        let ceiling = ClientCalibration {
            requests_per_second: 10_000.0,
            events_per_second: 200_000.0,
            concurrency: 64,
            duration_seconds: 1.2,
            wake_latency: None,
        };
        let (cheap, costly) = (prompts(0.0), prompts(4e-4));
        assert!((ceiling_with_prompts(&ceiling, &cheap) - 10_000.0).abs() < 1e-6);
        // 0.1 ms of client and 0.4 ms of prompt per request: 2,000 requests/s.
        assert!((ceiling_with_prompts(&ceiling, &costly) - 2_000.0).abs() < 1e-6);
        let summary = PhaseSummary {
            requests: 1_500,
            elapsed: 1.0,
            content_chunks: 1_500 * 16,
            ..PhaseSummary::default()
        };
        let share = |p: &QueueStats| {
            crate::report::build::phase::load_share(&summary, &phase_ceiling(&ceiling, p))
                .expect("share")
        };
        assert!((share(&cheap) - 0.15).abs() < 1e-9, "{}", share(&cheap));
        assert!((share(&costly) - 0.75).abs() < 1e-9, "{}", share(&costly));
    }
}
