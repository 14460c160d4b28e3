//! How late this machine wakes a sleeping thread, and the kernel request that keeps it quick.
//!
//! Every client timing passes through a wakeup: a token arrives while the client thread is
//! parked, an open-loop send is due while the pacer sleeps. A CPU that went idle into a deep
//! state (or, on a virtual machine, a vCPU that halted and gave its core back to the host)
//! can take milliseconds to run that thread again, and the delay lands in TTFT and send lag.
//! Linux lets a process ask that idle CPUs stay quick to wake: a PM QoS request of 0 µs on
//! `/dev/cpu_dma_latency`, held for as long as the file stays open (what `cyclictest` does).

use std::io::Write;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const CPU_DMA_LATENCY: &str = "/dev/cpu_dma_latency";

/// An open PM QoS request for 0 µs CPU wake latency; dropped, the kernel forgets it.
#[derive(Debug)]
pub struct CpuLatencyRequest {
    _device: std::fs::File,
}

impl CpuLatencyRequest {
    /// Ask the kernel to keep idle CPUs in their shallowest state. Fails without write access
    /// to `/dev/cpu_dma_latency` (it is root's by default) or on systems without PM QoS.
    pub fn hold() -> Result<CpuLatencyRequest, String> {
        let mut device = std::fs::OpenOptions::new()
            .write(true)
            .open(CPU_DMA_LATENCY)
            .map_err(|e| format!("cannot open {CPU_DMA_LATENCY}: {e}"))?;
        // The device takes the latency in µs as a native-endian 32-bit integer.
        device
            .write_all(&0i32.to_ne_bytes())
            .map_err(|e| format!("cannot write {CPU_DMA_LATENCY}: {e}"))?;
        Ok(CpuLatencyRequest { _device: device })
    }
}

/// The latency the kernel currently grants all PM QoS requests together, µs (root only).
pub fn granted_cpu_latency_us() -> Option<i32> {
    let bytes = std::fs::read(CPU_DMA_LATENCY).ok()?;
    Some(i32::from_ne_bytes(bytes.get(..4)?.try_into().ok()?))
}

/// Whether a run or selftest held the wake-latency request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HintStatus {
    /// Held for the whole run.
    Held,
    /// Not asked for (`--no-latency-hint`).
    Off,
    /// Asked for and refused; `reason` says why.
    Unavailable,
}

/// The wake-latency request as a report records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CpuLatencyHint {
    pub status: HintStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The request, when wanted and granted, and what to record about it.
pub fn request_if(wanted: bool) -> (Option<CpuLatencyRequest>, CpuLatencyHint) {
    if !wanted {
        let hint = CpuLatencyHint {
            status: HintStatus::Off,
            reason: None,
        };
        return (None, hint);
    }
    match CpuLatencyRequest::hold() {
        Ok(request) => {
            let hint = CpuLatencyHint {
                status: HintStatus::Held,
                reason: None,
            };
            (Some(request), hint)
        }
        Err(reason) => {
            let hint = CpuLatencyHint {
                status: HintStatus::Unavailable,
                reason: Some(reason),
            };
            (None, hint)
        }
    }
}

/// How late a sleeping thread woke, past its deadline, in ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WakeLatency {
    pub samples: u32,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// Above this p99, wakeups alone put client timings off by more than a millisecond.
pub const SLOW_WAKE_MS: f64 = 1.0;

/// Sleep `samples` times for 0.5–1.5 ms each on the calling thread (it blocks) and measure how
/// late each wakeup came: the delay a parked client thread adds to what it measures.
pub fn probe(samples: u32) -> WakeLatency {
    let mut late_ms = Vec::with_capacity(samples as usize);
    for i in 0..samples {
        // Varied sleeps, so wakeups do not lock onto a periodic tick.
        let nap = Duration::from_micros(500 + u64::from(i * 379 % 1000));
        let due = Instant::now() + nap;
        std::thread::sleep(nap);
        late_ms.push(Instant::now().saturating_duration_since(due).as_secs_f64() * 1e3);
    }
    late_ms.sort_by(f64::total_cmp);
    let rank = |q| {
        crate::quantile::percentile(&late_ms, q, crate::quantile::PercentileMethod::NearestRank)
    };
    WakeLatency {
        samples,
        p50_ms: rank(0.50),
        p99_ms: rank(0.99),
        max_ms: rank(1.0),
    }
}

/// A warning when wakeups here are slow enough to distort client timings.
pub fn slow_wake_warning(wake: &WakeLatency, hint: &CpuLatencyHint) -> Option<String> {
    if wake.p99_ms <= SLOW_WAKE_MS {
        return None;
    }
    let advice = match hint.status {
        HintStatus::Held => String::new(),
        HintStatus::Off => " (the CPU wake-latency hint was off: drop --no-latency-hint)".into(),
        HintStatus::Unavailable => format!(
            " ({}; run as root, or give the user write access to {CPU_DMA_LATENCY}, so idle CPUs stay quick to wake)",
            hint.reason
                .as_deref()
                .unwrap_or("the CPU wake-latency hint was refused")
        ),
    };
    Some(format!(
        "warning: a sleeping thread on this machine wakes up to {:.2} ms late (p99 of {} sleeps){advice}; client timings can be off by that much",
        wake.p99_ms, wake.samples
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_reports_ordered_nonnegative_lateness() {
        let wake = probe(40);
        assert_eq!(wake.samples, 40);
        assert!(wake.p50_ms >= 0.0, "{wake:?}");
        assert!(
            wake.p50_ms <= wake.p99_ms && wake.p99_ms <= wake.max_ms,
            "{wake:?}"
        );
    }

    #[test]
    fn a_held_request_is_what_the_kernel_grants() {
        match CpuLatencyRequest::hold() {
            Ok(_request) => assert_eq!(granted_cpu_latency_us(), Some(0)),
            // Without access the refusal names the device, so the report can say why.
            Err(reason) => assert!(reason.contains(CPU_DMA_LATENCY), "{reason}"),
        }
    }

    #[test]
    fn off_is_recorded_without_touching_the_device() {
        let (request, hint) = request_if(false);
        assert!(request.is_none());
        assert_eq!(hint.status, HintStatus::Off);
    }

    #[test]
    fn slow_wakeups_warn_with_advice_for_the_hint_state() {
        let slow = WakeLatency {
            samples: 200,
            p50_ms: 0.2,
            p99_ms: 2.5,
            max_ms: 4.0,
        };
        let refused = CpuLatencyHint {
            status: HintStatus::Unavailable,
            reason: Some("cannot open /dev/cpu_dma_latency: Permission denied".into()),
        };
        let warning = slow_wake_warning(&slow, &refused).expect("a warning");
        assert!(warning.contains("2.50 ms"), "{warning}");
        assert!(warning.contains("Permission denied"), "{warning}");
        let fast = WakeLatency {
            p99_ms: 0.3,
            ..slow
        };
        assert_eq!(slow_wake_warning(&fast, &refused), None);
    }
}
