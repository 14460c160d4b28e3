//! The deployment a phase ran against, as one hash: recording, searches and imports state it
//! the same way, and a change starts a new segment of every series.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::report::model::Report;

/// The deployment a phase ran against: the plan's labels and the target's identity (what
/// serves it and which model). A change starts a new segment of every series.
pub fn deployment_sha256(report: &Report, target: &str) -> String {
    let plan_target = report.plan.targets.get(target);
    deployment_sha256_of(
        &Value::from_iter(report.metadata.clone()),
        target,
        plan_target.and_then(|t| t.model.as_deref()),
        plan_target.is_some_and(|t| t.simulator.is_some()),
    )
}

/// [`deployment_sha256`] from its parts (imports state them directly).
pub fn deployment_sha256_of(
    labels: &Value,
    target: &str,
    model: Option<&str>,
    simulated: bool,
) -> String {
    let identity = json!({
        "labels": labels,
        "target": target,
        "model": model,
        "simulated": simulated,
    });
    hex::encode(Sha256::digest(identity.to_string().as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deployment_changes_with_a_label_or_the_model() {
        let labels = json!({"gpu": "H100"});
        let base = deployment_sha256_of(&labels, "t", Some("m"), false);
        assert_eq!(base, deployment_sha256_of(&labels, "t", Some("m"), false));
        assert_ne!(
            base,
            deployment_sha256_of(&json!({"gpu": "H200"}), "t", Some("m"), false)
        );
        assert_ne!(base, deployment_sha256_of(&labels, "t", Some("m2"), false));
    }

    #[test]
    fn a_targets_price_is_no_part_of_the_deployment() {
        let mut report = crate::report::sample_report();
        let target = report.phases[0].header.target.clone();
        let priced = |report: &mut Report, per_hour: f64| {
            let t = report
                .plan
                .targets
                .get_mut(&target)
                .expect("the phase's target");
            t.cost = Some(crate::plan::TargetCost {
                per_hour: Some(per_hour),
                ..crate::plan::TargetCost::default()
            });
            deployment_sha256(report, &target)
        };
        let unpriced = deployment_sha256(&report, &target);
        assert_eq!(priced(&mut report, 12.5), unpriced);
        assert_eq!(priced(&mut report, 20.0), unpriced);
        // The target's model still is.
        report.plan.targets.get_mut(&target).unwrap().model = Some("other".into());
        assert_ne!(deployment_sha256(&report, &target), unpriced);
    }
}
