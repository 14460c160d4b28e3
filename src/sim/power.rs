//! The simulator's power draw: idle watts plus watts per running request, shown on `/metrics`
//! as a per-device gauge (as NVIDIA's DCGM exporter shows each GPU's) beside the exact energy
//! it has drawn, which tests hold a benchmark's sampled figure against.

use std::fmt::Write;
use std::sync::Mutex;
use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The gauge DCGM's exporter names a GPU's draw by.
pub const DEFAULT_METRIC: &str = "DCGM_FI_DEV_POWER_USAGE";
/// The counter of joules drawn since the simulator started.
pub const ENERGY_COUNTER: &str = "servebench_sim:energy_joules_total";
const DEFAULT_IDLE_WATTS: f64 = 100.0;
const DEFAULT_WATTS_PER_RUNNING: f64 = 50.0;
const DEFAULT_DEVICES: u32 = 2;

/// `power: {idle_watts: 100, watts_per_running: 50, devices: 2}`: the draw, over all devices,
/// is `idle_watts + watts_per_running × requests running`, split evenly across `devices`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimPower {
    /// Watts with nothing running, over all devices (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_watts: Option<f64>,
    /// Watts each running request adds (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watts_per_running: Option<f64>,
    /// Devices the draw is split across, one label set each (default 2, at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices: Option<u32>,
    /// The gauge's name (default `DCGM_FI_DEV_POWER_USAGE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
}

impl SimPower {
    /// Each bad value: its key and what is wrong.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for (key, value) in [
            ("idle_watts", self.idle_watts),
            ("watts_per_running", self.watts_per_running),
        ] {
            if let Some(v) = value
                && (!v.is_finite() || v < 0.0)
            {
                out.push((
                    key,
                    format!("must be a finite number of watts >= 0, found {v}"),
                ));
            }
        }
        if self.devices == Some(0) {
            out.push(("devices", "must be at least 1, found 0".to_string()));
        }
        if let Some(metric) = &self.metric
            && !is_metric_name(metric)
        {
            out.push((
                "metric",
                format!("{metric:?} is not a Prometheus metric name"),
            ));
        }
        out
    }
}

/// A Prometheus metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
pub fn is_metric_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_' || b == b':')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
}

#[derive(Debug)]
struct Account {
    since: Instant,
    running: u64,
    joules: f64,
}

/// The draw as requests start and end, and the energy drawn, integrated exactly.
#[derive(Debug)]
pub(crate) struct PowerMeter {
    idle_watts: f64,
    watts_per_running: f64,
    devices: u32,
    metric: String,
    account: Mutex<Account>,
}

impl PowerMeter {
    pub fn new(settings: &SimPower) -> PowerMeter {
        PowerMeter {
            idle_watts: settings.idle_watts.unwrap_or(DEFAULT_IDLE_WATTS),
            watts_per_running: settings
                .watts_per_running
                .unwrap_or(DEFAULT_WATTS_PER_RUNNING),
            devices: settings.devices.unwrap_or(DEFAULT_DEVICES).max(1),
            metric: settings
                .metric
                .clone()
                .unwrap_or_else(|| DEFAULT_METRIC.to_string()),
            account: Mutex::new(Account {
                since: Instant::now(),
                running: 0,
                joules: 0.0,
            }),
        }
    }

    fn watts(&self, running: u64) -> f64 {
        self.idle_watts + self.watts_per_running * running as f64
    }

    /// Bring the account to now, then add `change` to the requests running (a change, not
    /// a count, so two requests starting and ending at once cannot land out of order).
    fn settle(&self, change: i64) -> (f64, f64) {
        let mut a = self.account.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        a.joules += self.watts(a.running) * now.duration_since(a.since).as_secs_f64();
        a.since = now;
        a.running = a.running.saturating_add_signed(change);
        (self.watts(a.running), a.joules)
    }

    /// A request started running.
    pub fn started(&self) {
        self.settle(1);
    }

    /// A request stopped running.
    pub fn ended(&self) {
        self.settle(-1);
    }

    /// The gauge per device and the energy counter, in Prometheus text.
    pub fn render(&self, out: &mut String) {
        let (watts, joules) = self.settle(0);
        let name = &self.metric;
        let _ = writeln!(out, "# HELP {name} Power draw in watts (simulated).");
        let _ = writeln!(out, "# TYPE {name} gauge");
        let each = watts / f64::from(self.devices);
        for gpu in 0..self.devices {
            let _ = writeln!(
                out,
                "{name}{{gpu=\"{gpu}\",UUID=\"GPU-sim-{gpu}\"}} {each:?}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP {ENERGY_COUNTER} Energy drawn since the simulator started, in joules."
        );
        let _ = writeln!(out, "# TYPE {ENERGY_COUNTER} counter");
        let _ = writeln!(out, "{ENERGY_COUNTER} {joules:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gauge_is_split_across_devices_and_rises_with_running_requests() {
        let meter = PowerMeter::new(&SimPower {
            idle_watts: Some(100.0),
            watts_per_running: Some(50.0),
            devices: Some(2),
            metric: None,
        });
        for _ in 0..4 {
            meter.started();
        }
        meter.ended();
        let mut text = String::new();
        meter.render(&mut text);
        assert!(text.contains("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-sim-0\"} 125.0"));
        assert!(text.contains("DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-sim-1\"} 125.0"));
        assert!(text.contains("servebench_sim:energy_joules_total "));
        let bad = SimPower {
            idle_watts: Some(-1.0),
            devices: Some(0),
            metric: Some("power usage".into()),
            ..SimPower::default()
        };
        let keys: Vec<&str> = bad.problems().iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["idle_watts", "devices", "metric"]);
    }
}
