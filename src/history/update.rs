//! Bringing a plan's trends and alerts up to date in a store: every series analysed, the
//! alerts' lifecycle applied, the changed alerts saved. `history trend` and `history gate`
//! call it, and a run's recording can.

use super::series::Alert;
use super::store::{HistoryError, Store};
use super::trend::{SeriesTrend, Settings, analyse, update_alerts};

/// Every series of `plan` (or of every plan) analysed, with the alerts updated in `store`;
/// returns the trends and every alert of the plan after the update.
pub fn update(
    store: &mut dyn Store,
    plan: Option<&str>,
    settings: &Settings,
) -> Result<(Vec<SeriesTrend>, Vec<Alert>), HistoryError> {
    let prior = store.alerts(plan)?;
    let mut trends = Vec::new();
    let mut changed = Vec::new();
    for key in store.keys(plan)? {
        let trend = analyse(&key, store.series(&key)?, settings);
        changed.extend(update_alerts(&trend, &prior, settings));
        trends.push(trend);
    }
    if !changed.is_empty() {
        store.save_alerts(&changed)?;
    }
    Ok((trends, store.alerts(plan)?))
}
