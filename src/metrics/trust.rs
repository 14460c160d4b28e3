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
    if let Some(share) = load.late_wake_share {
        // A share of a few ticks is a small sample: the bound fails only when even the
        // Wilson 95% lower bound of the share is above it (3 late of 84 is not, 30 of 84 is).
        let late = (share * load.ticks as f64).round();
        let lower = if load.ticks > 0 {
            wilson_lower(late, load.ticks as f64)
        } else {
            share
        };
        if lower > LATE_WAKE_SHARE_MAX {
            reasons.push(format!(
                "event-loop wakes over 5 ms late {}% ({late} of {} ticks, at least {}%) above {}%",
                show(share, "%"),
                load.ticks,
                show(lower, "%"),
                show(LATE_WAKE_SHARE_MAX, "%")
            ));
        }
    }
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
        load.event_loop_lag_mean_ms,
        EVENT_LOOP_LAG_MEAN_MAX_MS,
        "mean event-loop lag",
        " ms",
    );
    over(load.cpu_share, CPU_SHARE_MAX, "client CPU", "%");
    // Not a sample, unlike the wakes: the kernel adds up every nanosecond each thread waited
    // (schedstat, read at the window's start and end), so a short window's wait is exact and
    // compared as it is: there is no sampling error to allow for.
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

/// The lower end of the Wilson score 95% interval of `k` successes in `n` trials.
pub fn wilson_lower(k: f64, n: f64) -> f64 {
    super::binomial::wilson_interval(k, n)[0]
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
                "5 ms late 5.0% (50 of 1000 ticks, at least 3.8%) above 2.0%",
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
    fn a_few_late_wakes_of_a_short_window_are_not_a_starved_loop() {
        let late = |k: u32, ticks: u64| ClientLoad {
            ticks,
            late_wake_share: Some(f64::from(k) / ticks as f64),
            ..quiet()
        };
        // 3 of 84 (3.6%): the Wilson lower bound is 1.2%, under the bound.
        assert!(wilson_lower(3.0, 84.0) < LATE_WAKE_SHARE_MAX);
        assert!(judge(late(3, 84), None).is_trusted());
        // 30 of 84 is a starved loop, and so is 3.6% of many ticks.
        let starved = judge(late(30, 84), None);
        assert_eq!(starved.verdict, TrustVerdict::ClientBound);
        assert!(
            starved.reasons[0].contains("(30 of 84 ticks, at least"),
            "{:?}",
            starved.reasons
        );
        assert!(!judge(late(36, 1000), None).is_trusted());
    }

    #[test]
    fn serializes_flat_with_a_snake_case_verdict() {
        let value = serde_json::to_value(judge(quiet(), None)).expect("json");
        assert_eq!(value["verdict"], "trusted");
        assert_eq!(value["ticks"], 1000);
        assert!(value.get("reasons").is_none());
    }

    #[test]
    fn run_queue_wait_is_measured_not_sampled_so_a_short_window_is_judged_as_it_is() {
        // 84 ticks (0.84 s): the same short window a few late wakes are forgiven in.
        let short = |wait: f64| ClientLoad {
            wall_s: 0.84,
            ticks: 84,
            runqueue_wait_per_s: Some(wait),
            ..quiet()
        };
        assert!(judge(short(RUNQUEUE_WAIT_MAX * 0.9), None).is_trusted());
        let busy = judge(short(RUNQUEUE_WAIT_MAX * 1.2), None);
        assert!(!busy.is_trusted());
        assert!(
            busy.reasons[0].contains("threads waiting for a core"),
            "{busy:?}"
        );
    }
}
