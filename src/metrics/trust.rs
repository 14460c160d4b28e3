//! Whether a phase's latencies measure the server or the client: the client's own load while
//! the window ran, held against stated bounds.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Over this share of 10 ms timer ticks woke more than 5 ms late: the event loop was starved.
pub const LATE_WAKE_SHARE_MAX: f64 = 0.02;
/// Over this mean timer lateness the event loop was busy or starved.
pub const EVENT_LOOP_LAG_MEAN_MAX_MS: f64 = 3.0;
/// Over this share of all cores the client process (with an embedded simulator, both) was
/// CPU-bound.
pub const CPU_SHARE_MAX: f64 = 0.9;
/// Over this many thread-seconds per second spent waiting for a core, other work held the CPUs.
pub const RUNQUEUE_WAIT_MAX: f64 = 0.25;
/// Open loop: over this p99 lag behind the schedule, arrivals were not sent when planned.
pub const SEND_LAG_P99_MAX_MS: f64 = 10.0;

/// What the client's process did while a window ran.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ClientLoad {
    /// Length of the watched window, seconds.
    pub wall_s: f64,
    /// 10 ms timer ticks observed.
    pub ticks: u64,
    /// Mean lateness of those ticks, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_loop_lag_mean_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_loop_lag_max_ms: Option<f64>,
    /// Share of ticks more than 5 ms late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_wake_share: Option<f64>,
    /// The process's CPU time over the window's wall time times the cores (Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_share: Option<f64>,
    /// The process's threads' time waiting for a core, per second of window (Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runqueue_wait_per_s: Option<f64>,
}

impl ClientLoad {
    /// The busier of two machines' loads, bound by bound (a merged phase is client-bound
    /// when any of its machines was).
    pub fn busier(&self, other: &ClientLoad) -> ClientLoad {
        let max = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        ClientLoad {
            wall_s: self.wall_s.max(other.wall_s),
            ticks: self.ticks + other.ticks,
            event_loop_lag_mean_ms: max(self.event_loop_lag_mean_ms, other.event_loop_lag_mean_ms),
            event_loop_lag_max_ms: max(self.event_loop_lag_max_ms, other.event_loop_lag_max_ms),
            late_wake_share: max(self.late_wake_share, other.late_wake_share),
            cpu_share: max(self.cpu_share, other.cpu_share),
            runqueue_wait_per_s: max(self.runqueue_wait_per_s, other.runqueue_wait_per_s),
        }
    }
}

/// A phase's trust verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrustVerdict {
    /// The client stayed within every bound: its latencies are the server's.
    Trusted,
    /// The client was a bottleneck: its latencies include client-side delay.
    ClientBound,
}

/// The verdict, why, and what it was judged on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientTrust {
    pub verdict: TrustVerdict,
    /// Each bound that was exceeded, with the measured value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    #[serde(flatten)]
    pub load: ClientLoad,
    /// Open loop: p99 of how far the client itself sent late, milliseconds: the send lag
    /// less any wait for a `max_concurrency` slot (`client_send_lag_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lag_p99_ms: Option<f64>,
}

impl ClientTrust {
    pub fn is_trusted(&self) -> bool {
        self.verdict == TrustVerdict::Trusted
    }
}

/// Judge a window from the client's load and, for an open loop, its own send lag (a wait for
/// the plan's concurrency cap left out: that holds load back, but is not the client's delay).
pub fn judge(load: ClientLoad, send_lag_p99_ms: Option<f64>) -> ClientTrust {
    let mut reasons = Vec::new();
    let mut over = |value: Option<f64>, bound: f64, what: &str, unit: &str| {
        if let Some(v) = value.filter(|v| *v > bound) {
            reasons.push(format!(
                "{what} {}{unit} above {}{unit}",
                show(v, unit),
                show(bound, unit)
            ));
        }
    };
    over(
        load.late_wake_share,
        LATE_WAKE_SHARE_MAX,
        "event-loop wakes over 5 ms late",
        "%",
    );
    over(
        load.event_loop_lag_mean_ms,
        EVENT_LOOP_LAG_MEAN_MAX_MS,
        "mean event-loop lag",
        " ms",
    );
    over(load.cpu_share, CPU_SHARE_MAX, "client CPU", "%");
    over(
        load.runqueue_wait_per_s,
        RUNQUEUE_WAIT_MAX,
        "threads waiting for a core",
        " s/s",
    );
    over(
        send_lag_p99_ms,
        SEND_LAG_P99_MAX_MS,
        "client send lag p99",
        " ms",
    );
    ClientTrust {
        verdict: if reasons.is_empty() {
            TrustVerdict::Trusted
        } else {
            TrustVerdict::ClientBound
        },
        reasons,
        load,
        send_lag_p99_ms,
    }
}

fn show(value: f64, unit: &str) -> String {
    if unit == "%" {
        format!("{:.1}", value * 100.0)
    } else {
        format!("{value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet() -> ClientLoad {
        ClientLoad {
            wall_s: 10.0,
            ticks: 1000,
            event_loop_lag_mean_ms: Some(0.08),
            event_loop_lag_max_ms: Some(1.2),
            late_wake_share: Some(0.0),
            cpu_share: Some(0.12),
            runqueue_wait_per_s: Some(0.01),
        }
    }

    #[test]
    fn quiet_client_is_trusted() {
        let trust = judge(quiet(), Some(0.3));
        assert!(trust.is_trusted(), "{trust:?}");
        assert!(trust.reasons.is_empty());
    }

    #[test]
    fn each_bound_makes_it_client_bound_and_says_which() {
        type Case = (fn(&mut ClientLoad), &'static str);
        let cases: [Case; 4] = [
            (
                |l| l.late_wake_share = Some(0.05),
                "5 ms late 5.0% above 2.0%",
            ),
            (
                |l| l.event_loop_lag_mean_ms = Some(4.0),
                "mean event-loop lag 4.00",
            ),
            (|l| l.cpu_share = Some(0.97), "client CPU 97.0% above 90.0%"),
            (
                |l| l.runqueue_wait_per_s = Some(0.8),
                "waiting for a core 0.80",
            ),
        ];
        for (change, reason) in cases {
            let mut load = quiet();
            change(&mut load);
            let trust = judge(load, None);
            assert_eq!(trust.verdict, TrustVerdict::ClientBound);
            assert_eq!(trust.reasons.len(), 1, "{:?}", trust.reasons);
            assert!(trust.reasons[0].contains(reason), "{:?}", trust.reasons);
        }
        let trust = judge(quiet(), Some(25.0));
        assert!(trust.reasons[0].contains("client send lag p99 25.00 ms above 10.00 ms"));
    }

    #[test]
    fn serializes_flat_with_a_snake_case_verdict() {
        let value = serde_json::to_value(judge(quiet(), None)).expect("json");
        assert_eq!(value["verdict"], "trusted");
        assert_eq!(value["ticks"], 1000);
        assert!(value.get("reasons").is_none());
    }
}
