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

/// Before a phase runs: a warning when its planned load comes near the rate its prompts are
/// built at. An open loop asks for a rate; a closed loop has none, so against an unknown
/// server it may reach the client's own calibrated ceiling. A phase whose every request's
/// prompt was built before it starts (a few requests) never waits on the source, so it is
/// never warned about.
pub fn prompt_warning(
    phase: &PhaseSettings<'_>,
    prompts: &QueueStats,
    tokenizer: &str,
    ceiling: Option<&ClientCalibration>,
) -> Option<String> {
    if planned_requests(phase).is_some_and(|n| n <= prompts.built) {
        return None;
    }
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

/// The most requests a phase starts, its warmup's and every probe's included, when counts
/// bound it; `None` when only a duration does.
fn planned_requests(phase: &PhaseSettings<'_>) -> Option<u64> {
    let measured = phase.requests?;
    let warmup = match phase.warmup {
        None => 0,
        Some(w) => match (w.requests, w.duration) {
            (Some(n), _) => n,
            (None, Some(_)) => return None,
            (None, None) => 0,
        },
    };
    Some((measured + warmup).saturating_mul(u64::from(phase.repeats())))
}

/// A warning line when the phase ran near the client's ceiling (its `client_load_share`).
pub fn warning(phase: &PhaseResult) -> Option<String> {
    let share = phase.client_load_share?;
    (share > LOAD_SHARE_WARNING).then(|| {
        format!(
            "warning: phase {} used {:.0}% of this machine's client ceiling (with its prompts, \
             workload `{}`); its throughput and latency may be limited by the client, not the \
             server",
            phase.header.phase,
            share * 100.0,
            phase.header.workload
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
            built: 16,
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
            crate::report::assemble::phase::load_share(&summary, &phase_ceiling(&ceiling, p))
                .expect("share")
        };
        assert!((share(&cheap) - 0.15).abs() < 1e-9, "{}", share(&cheap));
        assert!((share(&costly) - 0.75).abs() < 1e-9, "{}", share(&costly));
    }

    /// A plan's phases, for the warning's view of their load.
    fn plan(phases: serde_json::Value) -> crate::plan::Plan {
        let doc = serde_json::json!({
            "version": 1,
            "name": "warn",
            "targets": {"t": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}},
            "workloads": {"w": {"input_tokens": 32, "output_tokens": 8}},
            "defaults": {"target": "t", "workload": "w"},
            "phases": phases,
        });
        crate::plan::prepare_from_value(doc, "plan", &Default::default())
            .unwrap_or_else(|e| panic!("{e}"))
            .plan
    }

    fn calibration(requests_per_second: f64) -> ClientCalibration {
        ClientCalibration {
            requests_per_second,
            events_per_second: 20.0 * requests_per_second,
            concurrency: 64,
            duration_seconds: 1.2,
            wake_latency: None,
        }
    }

    /// Prompts at 0.027 ms each (about 37,000 a second on one thread) on a client whose own
    /// ceiling is 100,000 requests/s.
    #[test]
    fn the_prompt_warning_comes_only_where_the_load_nears_the_source() {
        let plan = plan(serde_json::json!([
            {"name": "few", "concurrency": 1, "requests": 3, "warmup": {"requests": 2}},
            {"name": "long", "concurrency": 1, "duration": "60s"},
            {"name": "near", "rate": {"rps": 30000, "arrival": "constant"}, "duration": "10s"},
            {"name": "slow", "rate": {"rps": 10, "arrival": "poisson"}, "duration": "60s"},
            {"name": "few-fast", "rate": {"rps": 30000, "arrival": "constant"}, "requests": 10}
        ]));
        let phases = crate::schedule::resolve(&plan).expect("phases");
        let (cheap, ceiling) = (prompts(2.7e-5), calibration(100_000.0));
        let warned: Vec<&str> = phases
            .iter()
            .filter(|p| prompt_warning(p, &cheap, "builtin", Some(&ceiling)).is_some())
            .map(|p| p.name)
            .collect();
        // `few` and `few-fast` were built before they start; `slow` is far below the source.
        assert_eq!(warned, ["long", "near"]);
        let near = prompt_warning(&phases[2], &cheap, "builtin", Some(&ceiling)).unwrap();
        assert!(near.contains("at 30000 requests/s the client"), "{near}");
        // Uncalibrated, a closed loop has nothing to come near.
        assert!(prompt_warning(&phases[1], &cheap, "builtin", None).is_none());
    }
}
