//! Client self-calibration before a run, and each phase's share of the measured ceiling.

use std::time::Duration;

use crate::report::{ClientCalibration, PhaseResult};
use crate::selftest;

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

/// The phase's share of the ceiling: the larger of requests/s and events/s over it.
pub fn load_share(phase: &PhaseResult, ceiling: &ClientCalibration) -> Option<f64> {
    let s = &phase.summary;
    if s.elapsed <= 0.0 || ceiling.requests_per_second <= 0.0 || ceiling.events_per_second <= 0.0 {
        return None;
    }
    let events = selftest::phase_events(s.requests, s.content_chunks + s.reasoning_chunks);
    let events_per_s = events as f64 / s.elapsed;
    let requests_per_s = s.requests as f64 / s.elapsed;
    Some(
        (requests_per_s / ceiling.requests_per_second)
            .max(events_per_s / ceiling.events_per_second),
    )
}

/// Set the phase's `client_load_share`; a warning line when the phase ran near the ceiling.
pub fn apply(phase: &mut PhaseResult, ceiling: Option<&ClientCalibration>) -> Option<String> {
    let share = load_share(phase, ceiling?)?;
    phase.client_load_share = Some(share);
    (share > LOAD_SHARE_WARNING).then(|| {
        format!(
            "warning: phase {} used {:.0}% of this machine's client ceiling; its throughput and latency may be limited by the client, not the server",
            phase.phase,
            share * 100.0
        )
    })
}
