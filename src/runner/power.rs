//! What a phase carries for its cost and energy figures: its target's hourly price, and the
//! power gauge's samples moved onto the measured window's clock.

use std::time::Instant;

use super::scrape::window::InWindow;
use crate::metrics::cost::HourlyPrice;
use crate::metrics::energy::PowerTrace;
use crate::plan::Target;
use crate::plan::power::power_metric;

/// The target's price per hour, when it has one.
pub(super) fn price(target: &Target) -> Option<HourlyPrice> {
    let cost = target.cost.as_ref()?;
    Some(HourlyPrice {
        per_hour: cost.hourly()?,
        currency: cost.currency().to_string(),
    })
}

/// The window's samples of the power gauge, timed from `window_origin` (the sampler counted
/// from `sampler_origin`, just before). `None` when the plan asked for no power and none was
/// sampled.
pub(super) fn trace(
    target: &Target,
    interval: Option<std::time::Duration>,
    sampled: Option<(&InWindow, Instant)>,
    window_origin: Instant,
) -> Option<PowerTrace> {
    let asked = target.power.is_some();
    let mut trace = PowerTrace {
        metric: power_metric(target.power.as_ref()).to_string(),
        asked,
        interval_s: interval.map_or(0.0, |i| i.as_secs_f64()),
        ..PowerTrace::default()
    };
    match sampled {
        Some((window, sampler_origin)) => {
            // Seconds the window's origin lies after the sampler's.
            let shift = match window_origin.checked_duration_since(sampler_origin) {
                Some(d) => d.as_secs_f64(),
                None => -sampler_origin.duration_since(window_origin).as_secs_f64(),
            };
            trace.samples = window.power.iter().map(|[t, w]| [t - shift, *w]).collect();
            trace.devices = window.power_devices;
        }
        None => {
            trace.not_sampled =
                Some("the target's metrics were not sampled during the window".into());
        }
    }
    (asked || !trace.samples.is_empty()).then_some(trace)
}
