//! A target's `power`: which gauge of its scraped metrics gives the deployment's power draw in
//! watts, so each phase reports the energy its window took.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema::Issue;
use crate::sim::power::is_metric_name;

/// NVIDIA's DCGM exporter: each GPU's power draw in watts, one label set per device.
pub const DEFAULT_POWER_METRIC: &str = "DCGM_FI_DEV_POWER_USAGE";

/// `power: {metric: DCGM_FI_DEV_POWER_USAGE}`: the gauge is summed over the devices (label
/// sets) and endpoints that export it, sampled through the measured window at the target's
/// `metrics_interval` and integrated.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetPower {
    /// The gauge's name (default `DCGM_FI_DEV_POWER_USAGE`), in watts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
}

impl TargetPower {
    pub fn metric(&self) -> &str {
        self.metric.as_deref().unwrap_or(DEFAULT_POWER_METRIC)
    }
}

/// The gauge a target's energy is read from: its `power` setting's, else the default one
/// (reported when the target happens to export it).
pub fn power_metric(power: Option<&TargetPower>) -> &str {
    power.map_or(DEFAULT_POWER_METRIC, TargetPower::metric)
}

/// A metric name Prometheus allows, and a target whose metrics are sampled during the window.
pub(crate) fn check_power(
    p: &str,
    power: &TargetPower,
    sampled: Result<(), &str>,
    issues: &mut Vec<Issue>,
) {
    if let Some(metric) = &power.metric
        && !is_metric_name(metric)
    {
        issues.push(
            Issue::new(
                format!("{p}/metric"),
                format!("{metric:?} is not a Prometheus metric name"),
            )
            .hint(Some(format!(
                "letters, digits, `_` and `:`, not starting with a digit, e.g. {DEFAULT_POWER_METRIC}"
            ))),
        );
    }
    if let Err(why) = sampled {
        issues.push(Issue::new(p.to_string(), why.to_string()).at_key());
    }
}

/// A simulator target's `power` settings, each bad value at its key.
pub(crate) fn check_sim_power(p: &str, power: &crate::sim::SimPower, issues: &mut Vec<Issue>) {
    for (key, problem) in power.problems() {
        issues.push(Issue::new(format!("{p}/{key}"), problem));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_follow_prometheus() {
        for good in ["DCGM_FI_DEV_POWER_USAGE", "node:power_watts", "_x1"] {
            assert!(is_metric_name(good), "{good}");
        }
        for bad in ["", "1watts", "power usage", "power-usage", "wätts"] {
            assert!(!is_metric_name(bad), "{bad}");
        }
        assert_eq!(power_metric(None), DEFAULT_POWER_METRIC);
    }
}
