//! A target's `cost`: what an hour of the deployment costs, from which each phase's price per
//! million tokens follows. A price is no part of the deployment's identity: changing it starts
//! no new history segment.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema::Issue;

/// The currency a plan that names none is priced in.
pub const DEFAULT_CURRENCY: &str = "USD";

/// `cost: {per_hour: 12.5, currency: USD}` or `{per_accelerator_hour: 2.5, accelerators: 8}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetCost {
    /// What the whole deployment costs per hour. Exclusive with `per_accelerator_hour`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_hour: Option<f64>,
    /// What one accelerator costs per hour; needs `accelerators`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_accelerator_hour: Option<f64>,
    /// Accelerators the deployment holds (at least 1), with `per_accelerator_hour`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerators: Option<u64>,
    /// ISO 4217 code, three capital letters (default `USD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
}

impl TargetCost {
    /// The deployment's price per hour; `None` when the settings name none (refused by
    /// [`check_cost`]).
    pub fn hourly(&self) -> Option<f64> {
        match (self.per_hour, self.per_accelerator_hour, self.accelerators) {
            (Some(h), None, _) => Some(h),
            (None, Some(a), Some(n)) => Some(a * n as f64),
            _ => None,
        }
    }

    pub fn currency(&self) -> &str {
        self.currency.as_deref().unwrap_or(DEFAULT_CURRENCY)
    }
}

/// One price form, a non-negative finite price, at least one accelerator and a currency code.
pub(crate) fn check_cost(p: &str, cost: &TargetCost, issues: &mut Vec<Issue>) {
    match (cost.per_hour, cost.per_accelerator_hour) {
        (Some(_), Some(_)) => issues.push(
            Issue::new(
                format!("{p}/per_accelerator_hour"),
                "`per_hour` and `per_accelerator_hour` are exclusive",
            )
            .at_key()
            .hint(Some(
                "give the deployment's price or the accelerator's, not both".into(),
            )),
        ),
        (None, None) => issues.push(
            Issue::new(
                p.to_string(),
                "a cost needs `per_hour` or `per_accelerator_hour`",
            )
            .at_key()
            .hint(Some(
                "for example cost: {per_hour: 12.5, currency: USD}".into(),
            )),
        ),
        _ => {}
    }
    for (key, price) in [
        ("per_hour", cost.per_hour),
        ("per_accelerator_hour", cost.per_accelerator_hour),
    ] {
        if let Some(price) = price
            && (!price.is_finite() || price < 0.0)
        {
            issues.push(Issue::new(
                format!("{p}/{key}"),
                format!("a price must be a finite number >= 0, found {price}"),
            ));
        }
    }
    check_accelerators(p, cost, issues);
    if let Some(currency) = &cost.currency
        && !(currency.len() == 3 && currency.bytes().all(|b| b.is_ascii_uppercase()))
    {
        issues.push(
            Issue::new(
                format!("{p}/currency"),
                format!("{currency:?} is not a currency code"),
            )
            .hint(Some(
                "three capital letters (ISO 4217), e.g. USD or EUR".into(),
            )),
        );
    }
}

/// An accelerator price needs a count of at least one, and a count needs that price.
fn check_accelerators(p: &str, cost: &TargetCost, issues: &mut Vec<Issue>) {
    match (cost.per_accelerator_hour, cost.accelerators) {
        (Some(_), None) => issues.push(
            Issue::new(
                format!("{p}/per_accelerator_hour"),
                "`per_accelerator_hour` needs `accelerators`",
            )
            .at_key(),
        ),
        (None, Some(_)) => issues.push(
            Issue::new(
                format!("{p}/accelerators"),
                "`accelerators` needs `per_accelerator_hour`",
            )
            .at_key(),
        ),
        (Some(_), Some(0)) => issues.push(Issue::new(
            format!("{p}/accelerators"),
            "a deployment holds at least one accelerator, found 0",
        )),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hourly_price_is_the_deployments_or_the_accelerators_times_their_count() {
        let whole = TargetCost {
            per_hour: Some(12.5),
            ..TargetCost::default()
        };
        assert_eq!(whole.hourly(), Some(12.5));
        assert_eq!(whole.currency(), "USD");
        let each = TargetCost {
            per_accelerator_hour: Some(2.5),
            accelerators: Some(8),
            currency: Some("EUR".into()),
            ..TargetCost::default()
        };
        assert_eq!(each.hourly(), Some(20.0));
        let mut issues = Vec::new();
        check_cost("/c", &each, &mut issues);
        assert!(issues.is_empty(), "{issues:?}");
    }
}
