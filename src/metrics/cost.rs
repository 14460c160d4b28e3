//! A phase's price per million tokens, from its target's hourly price and the phase's
//! measured window (see docs/measurement.md for the formula).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::PhaseSummary;

/// What the target's hour costs, as the phase was run with it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct HourlyPrice {
    pub per_hour: f64,
    pub currency: String,
}

/// A phase's cost: the hour's price times its window, per million tokens.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct PhaseCost {
    /// ISO 4217 code the prices are in.
    pub currency: String,
    /// The deployment's price per hour.
    pub per_hour: f64,
    /// `per_hour × elapsed / 3600`: what the measured window cost.
    pub window_cost: f64,
    /// `window_cost × 10⁶ / total_output_tokens`; absent when nothing was generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_million_output_tokens: Option<f64>,
    /// `window_cost × 10⁶ / (total_input_tokens + total_output_tokens)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_million_tokens: Option<f64>,
}

/// The phase's cost at `price`; `None` for a phase with no window (nothing ran).
pub fn phase_cost(price: &HourlyPrice, summary: &PhaseSummary) -> Option<PhaseCost> {
    if summary.elapsed <= 0.0 {
        return None;
    }
    let window_cost = price.per_hour * summary.elapsed / 3600.0;
    let per_million = |tokens: u64| (tokens > 0).then(|| window_cost * 1e6 / tokens as f64);
    Some(PhaseCost {
        currency: price.currency.clone(),
        per_hour: price.per_hour,
        window_cost,
        per_million_output_tokens: per_million(summary.total_output_tokens),
        per_million_tokens: per_million(summary.total_input_tokens + summary.total_output_tokens),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hours_price_over_a_window_per_million_tokens() {
        let summary = PhaseSummary {
            elapsed: 36.0,
            total_output_tokens: 50_000,
            total_input_tokens: 150_000,
            ..PhaseSummary::default()
        };
        let price = HourlyPrice {
            per_hour: 12.5,
            currency: "USD".into(),
        };
        let cost = phase_cost(&price, &summary).unwrap();
        // 36 s of 12.5 $/h is 0.125 $: 2.5 $ per million output tokens, 0.625 $ per million.
        assert_eq!(cost.window_cost, 0.125);
        assert_eq!(cost.per_million_output_tokens, Some(2.5));
        assert_eq!(cost.per_million_tokens, Some(0.625));
        let idle = PhaseSummary::default();
        assert_eq!(phase_cost(&price, &idle), None);
    }
}
