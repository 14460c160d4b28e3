//! Which plans a store holds, and the error for a `--plan` it holds no run of, so a typo
//! fails instead of reading as an empty, quiet history.

use super::HistoryError;
use super::store::Store;
use crate::plan::diag::did_you_mean;

/// How many plan names an error lists when none is close to the one asked for.
const LISTED: usize = 10;

/// `Ok` when `store` (shown as `location`) holds a run of `plan`; else an error naming the
/// closest plan it holds, or the plans it holds.
pub fn require_plan(store: &dyn Store, plan: &str, location: &str) -> Result<(), HistoryError> {
    let plans = store.plans()?;
    if plans.iter().any(|p| p == plan) {
        return Ok(());
    }
    let hint = match did_you_mean(plan, plans.iter().map(String::as_str)) {
        Some(hint) => hint,
        None if plans.is_empty() => "it holds no runs".to_string(),
        None => {
            let mut names: Vec<String> = plans
                .iter()
                .take(LISTED)
                .map(|p| format!("`{p}`"))
                .collect();
            if plans.len() > LISTED {
                names.push(format!("and {} more", plans.len() - LISTED));
            }
            format!("it holds runs of {}", names.join(", "))
        }
    };
    Err(HistoryError::UnknownPlan {
        plan: plan.to_string(),
        location: location.to_string(),
        hint,
    })
}

#[cfg(test)]
mod tests {
    use super::require_plan;
    use crate::history::synthetic;

    #[test]
    fn an_unknown_plan_is_an_error_naming_the_close_one() {
        let store = synthetic::store("quickstart", 2, 1, &["ttft.p99"]);
        assert!(require_plan(&store, "quickstart", "h.sqlite").is_ok());
        let err = require_plan(&store, "quickstrat", "h.sqlite")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "no runs of plan `quickstrat` in h.sqlite; did you mean `quickstart`?"
        );
        let err = require_plan(&store, "gateway", "h.sqlite")
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("it holds runs of `quickstart`"), "{err}");
        let empty = crate::history::store::MemoryStore::new();
        let err = require_plan(&empty, "x", "h.sqlite")
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("it holds no runs"), "{err}");
    }
}
