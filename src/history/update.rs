//! Bringing a plan's trends and alerts up to date in a store: every series analysed, the
//! alerts' lifecycle applied, the changed alerts saved. `history trend` and `history gate`
//! call it, and a run's recording can.

use super::series::{Alert, AlertState};
use super::store::{HistoryError, Store};
use super::trend::{SeriesTrend, Settings, analyse_each, rules, update_alerts};

/// A store's trends and alerts after an update, with the detection settings they were
/// found with.
#[derive(Debug)]
pub struct Updated {
    pub trends: Vec<SeriesTrend>,
    pub alerts: Vec<Alert>,
    /// The settings of the plan (of the last plan, when every plan was updated).
    pub settings: Settings,
    /// Each series' key with whether its plan watches it (opens alerts on it).
    pub watched: Vec<bool>,
}

/// Every series of `plan` (or of every plan) analysed, with the alerts updated in `store`.
/// Each plan's settings and watched figures come from its newest run's plan (`history:`);
/// `settings`, when given, replaces the settings (tests and benchmarks).
pub fn update(
    store: &mut dyn Store,
    plan: Option<&str>,
    settings: Option<&Settings>,
) -> Result<Updated, HistoryError> {
    let plans = match plan {
        Some(p) => vec![p.to_string()],
        None => store.plans()?,
    };
    let mut trends = Vec::new();
    let mut watched = Vec::new();
    let mut used = settings.copied().unwrap_or_default();
    for plan in &plans {
        let (own, watch) = rules(store.plan_history(plan)?.as_ref());
        used = settings.copied().unwrap_or(own);
        let prior = store.alerts(Some(plan))?;
        let mine = analyse_each(store.plan_series(plan)?, &used);
        let changed = update_alerts(plan, &mine, &prior, &watch, &used);
        if !changed.save.is_empty() {
            let ids = store.save_alerts(&changed.save)?;
            let superseded: Vec<Alert> = changed
                .supersede
                .into_iter()
                .map(|(old, by)| Alert {
                    state: AlertState::Superseded,
                    superseded_by: ids.get(by).copied(),
                    ..old
                })
                .collect();
            if !superseded.is_empty() {
                store.save_alerts(&superseded)?;
            }
        }
        watched.extend(mine.iter().map(|t| watch.watches(&t.key.figure)));
        trends.extend(mine);
    }
    Ok(Updated {
        trends,
        alerts: store.alerts(plan)?,
        settings: used,
        watched,
    })
}
